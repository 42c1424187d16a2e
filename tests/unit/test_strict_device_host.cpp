// The strict device-host mode (docs/cuda.md, "The strict device-host mode"), run with
// TENON_DEVICE_HOST_STRICT=1 (tests/meson.build): a host read of device memory inside a device
// model's call stops the program with the mode's message, as it would crash on a GPU; the same
// read outside a call, the backend's own entries and copies inside a call, and a whole training
// step of a device model run through. Each fault is made in a forked child, which must die of
// SIGABRT with the message on its stderr.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>

#include "tenon/backend/device.hpp"
#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using testing::random_array;

namespace {

// What `f` does in a forked child: whether it died of SIGABRT (else it exited 0), and its stderr.
struct Outcome {
    bool aborted = false;
    int status = 0;
    std::string err;
};
Outcome in_child(const std::function<void()>& f) {
    int fd[2];
    REQUIRE(::pipe(fd) == 0);
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(fd[0]);
        ::dup2(fd[1], 2);
        ::dup2(fd[1], 1);  // (Catch's report of the signal too)
        try {
            f();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "exception: %s\n", e.what());
            std::fflush(stderr);
            ::_exit(5);
        }
        ::_exit(0);
    }
    ::close(fd[1]);
    Outcome o;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd[0], buf, sizeof buf)) > 0;) o.err.append(buf, std::size_t(n));
    ::close(fd[0]);
    REQUIRE(::waitpid(pid, &o.status, 0) == pid);
    o.aborted = WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGABRT;
    return o;
}
constexpr const char* caught = "tenon strict device-host: host code touched device memory";

// Floats2d -> Floats2d, the identity, that reads the first value of its input (forward) or of
// its gradient (backprop) on the host: what a layer's host code must not do with a device
// model's data.
inline volatile float seen = 0.0f;
class PeekFirst : public Layer<PeekFirst, Floats2d, Floats2d> {
    using Base = Layer<PeekFirst, Floats2d, Floats2d>;
    friend Base;

public:
    explicit PeekFirst(bool in_backprop = false) : Base("peek_first", {}, {}), back_(in_backprop) {
        mark_initialized();
    }
    struct Backprop {
        bool peek = false;
        Floats2d operator()(Floats2dCView dY) const {
            if (peek) seen = dY(0, 0);
            return Floats2d(dY);
        }
    };

private:
    bool back_;
    void init_impl(const Floats2dCView*, const Floats2dCView*) {}
    Floats2d predict_impl(Floats2dCView X) const {
        if (!back_) seen = X(0, 0);
        return Floats2d(X);
    }
    std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool) { return {predict_impl(X), Backprop{back_}}; }
};

}  // namespace

TEST_CASE("strict device-host: the mode is on in this run", "[device][strict]") {
    device_host_ops();
    REQUIRE(detail::strict_device_host.load());
}

TEST_CASE("strict device-host: a host read of device memory inside a model's call aborts", "[device][strict]") {
    set_current_ops(device_host_ops());
    const Floats2d X = to_device(random_array(4, 3, 1));
    REQUIRE(X.memory() == Memory::device);
    CHECK(X(0, 0) == X.data()[0]);  // outside a call: the tests read device arrays freely

    auto model = Relu<5>() >> PeekFirst();
    model.initialize(X);
    const Outcome o = in_child([&] { (void)model.predict(X); });
    CHECK(o.aborted);
    CHECK(o.err.find(caught) != std::string::npos);
    CHECK(o.err.find("inside a model call") != std::string::npos);
    INFO(o.err);

    // the same read in the backprop callback
    auto plain = PeekFirst(true);
    const Outcome ob = in_child([&] {
        auto [Y, backprop] = plain.begin_update(X);
        (void)backprop(Y);
    });
    CHECK(ob.aborted);
    CHECK(ob.err.find(caught) != std::string::npos);
    set_current_ops(cpu_ops());
}

TEST_CASE("strict device-host: the backend's entries and copies inside a call, and a training step, run through",
          "[device][strict]") {
    set_current_ops(device_host_ops());
    const Outcome o = in_child([] {
        const Floats2d X = to_device(random_array(8, 6, 2));
        Floats2d H({8, 6}, Memory::host);
        {
            const detail::MemoryScope call(Memory::device);  // a device model's call, as its entry points open
            detail::copy_bytes(H.data(), Memory::host, X.data(), Memory::device, X.size() * sizeof(float));
            device_host_ops().scale(const_cast<float*>(X.data()), X.size(), 2.0f);
        }
        if (H(7, 5) * 2.0f != X(7, 5)) ::_exit(3);
        auto model = Relu<16>() >> Dropout(0.2) >> Softmax<4>();
        model.initialize(X);
        Optimizer opt = Adam(0.001);
        for (int step = 0; step < 2; ++step) {
            auto [Y, backprop] = model.begin_update(X);
            backprop(Y);
            model.finish_update(opt);
        }
        const Floats2d P = to_host(lower(model).predict(X));
        if (P.shape(0) != 8) ::_exit(4);
    });
    INFO(o.err);
    CHECK(!WIFSIGNALED(o.status));
    CHECK(WIFEXITED(o.status));
    CHECK(WEXITSTATUS(o.status) == 0);
    set_current_ops(cpu_ops());
}
