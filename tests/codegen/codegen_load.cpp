// codegen_load KIND DIR: loads the model file that `tenon train` wrote in DIR into the static
// type `tenon codegen` wrote for KIND's example config (fashion_mnist, textcat or textcat_cnn,
// generated at build time: meson.build) and into the model DIR/config.cfg builds, and compares
// their predictions on made-up inputs bit for bit. Prints "N predictions equal" and exits 0, or
// says what differs and exits 1. Run by tests/cli/test_cli.py after its training runs.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "fashion_mnist.hpp"
#include "tenon/config/config.hpp"
#include "tenon/config/registry.hpp"
#include "tenon/tenon.hpp"
#include "textcat.hpp"
#include "textcat_cnn.hpp"

using namespace tenon;

namespace {
bool same_bits(const Floats2d& a, const Floats2d& b) {
    return a.shape(0) == b.shape(0) && a.shape(1) == b.shape(1) &&
           (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

template <class In, class Static, class Inputs>
int compare(const std::string& dir, Static typed, Inputs inputs) {
    const config::Config cfg = config::Config::from_disk(dir + "/config.cfg");
    AnyModel<In, Floats2d> built = config::build_model<In, Floats2d>(cfg);
    built.from_disk(dir + "/model.tenon");
    typed.from_disk(dir + "/model.tenon");
    int n = 0;
    for (std::size_t batch : {1u, 5u, 64u}) {
        const In X = inputs(batch);
        if (!same_bits(typed.predict(X), built.predict(X))) {
            std::printf("the predictions differ at batch %zu\n", batch);
            return 1;
        }
        n += static_cast<int>(batch);
    }
    std::printf("%d predictions equal\n", n);
    return 0;
}
}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: codegen_load fashion_mnist|textcat|textcat_cnn DIR\n");
        return 2;
    }
    const std::string kind = argv[1], dir = argv[2];
    try {
        Rng rng(7);
        if (kind == "fashion_mnist")
            return compare<Floats2d>(dir, gen_fashion_mnist::make_model(), [&](std::size_t n) {
                Floats2d X({n, 784}, uninitialized);
                for (float& v : X) v = static_cast<float>(rng.uniform(0.0, 1.0));
                return X;
            });
        auto documents = [&](std::size_t n) {
            List<Ints2d> docs;
            for (std::size_t d = 0; d < n; ++d) {
                Ints2d x({d % 9, 1});
                for (auto& v : x) v = static_cast<std::int32_t>(rng.uniform(-2e9, 2e9));
                docs.push_back(std::move(x));
            }
            return docs;
        };
        if (kind == "textcat") return compare<List<Ints2d>>(dir, gen_textcat::make_model(), documents);
        if (kind == "textcat_cnn") return compare<List<Ints2d>>(dir, gen_textcat_cnn::make_model(), documents);
        std::fprintf(stderr, "codegen_load: unknown kind '%s'\n", kind.c_str());
        return 2;
    } catch (const std::exception& e) {
        std::printf("error: %s\n", e.what());
        return 1;
    }
}
