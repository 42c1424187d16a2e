// Device arrays, moving models and the device allocator (docs/cuda.md, "Device arrays"), on the
// device backend built as host code (device_host_ops()): its "device memory" is host memory
// handed out by the same caching allocator as a GPU's, so every rule is checked here: arrays
// carry their memory, data crosses only where asked (and the allocator counts every crossing),
// to_gpu / to_cpu move parameters, gradients and optimizer state, a host input to a device model
// is tenon-E342, the allocator's high-water mark stays flat across random batch sizes, and an
// allocation over its cap is tenon-E341 that leaves the model usable. The fused optimizer pass
// (Ops::adam_segments / sgd_segments) equals the CPU's per-parameter steps.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tenon/backend/device.hpp"
#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using testing::all_params;
using testing::random_array;

namespace {

const Ops& dev() { return device_host_ops(); }

std::string error_id(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.id();
    }
    return "";
}
std::string error_text(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

bool close(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b, float tol) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].size() != b[i].size()) return false;
        for (std::size_t k = 0; k < a[i].size(); ++k)
            if (!(std::fabs(a[i][k] - b[i][k]) <= tol * (1.0f + std::fabs(b[i][k])))) return false;
    }
    return true;
}
bool close(const Floats2d& a, const Floats2d& b, float tol) {
    return a.shape() == b.shape() && close({std::vector<float>(a.begin(), a.end())},
                                           {std::vector<float>(b.begin(), b.end())}, tol);
}

// Every parameter and gradient of the model in memory m.
bool all_in(Node& model, Memory m) {
    for (Node* n : model.walk())
        for (const auto& name : n->param_names()) {
            if (detail::memory_of(n->get_param(name).data) != m) return false;
            if (detail::memory_of(n->get_grad(name).data) != m) return false;
        }
    return true;
}

auto make_mlp() {
    return Relu<32>({.dropout = 0.1, .normalize = true}) >> residual(Maxout<32, 32, 2>()) >> Linear<8>() >>
           Softmax<8>();
}

// Host data of a batch (the test's own arrays are host memory: the program's default).
Floats2d batch_x(std::size_t rows, std::uint64_t seed) { return random_array(rows, 12, seed); }
Floats2d batch_dy(std::size_t rows, std::uint64_t seed) { return random_array(rows, 8, seed); }

// One training step of `model` on (X, dY), both in the model's memory.
template <class M>
void step(M& model, Optimizer& opt, const Floats2d& X, const Floats2d& dY, std::uint64_t seed) {
    fix_random_seed(seed);
    auto [Y, bp] = model.begin_update(X);
    bp(dY);
    model.finish_update(opt);
}

}  // namespace

TEST_CASE("device arrays: the memory tag, copies and explicit transfers", "[device]") {
    (void)dev();  // the device backend registers its memory
    const Floats2d h({2, 3}, {1, 2, 3, 4, 5, 6});
    CHECK(h.memory() == Memory::host);
    CHECK(detail::memory_of(h.data()) == Memory::host);
    const std::size_t t0 = device_memory_stats().transfers;

    const Floats2d d = to_device(h);
    CHECK(d.memory() == Memory::device);
    CHECK(detail::memory_of(d.data()) == Memory::device);
    CHECK(detail::memory_of(d.data() + 5) == Memory::device);  // a view into it too
    CHECK(device_memory_stats().transfers == t0 + 1);

    // copies and assignments stay where their source is, and cross nothing
    const Floats2d d2 = d;
    CHECK(d2.memory() == Memory::device);
    Floats2d a;
    a = d;
    CHECK(a.memory() == Memory::device);
    Floats2d z({4, 1}, Memory::device);
    CHECK(z.memory() == Memory::device);
    z.fill(2.5f);
    CHECK(z[3] == 2.5f);
    z.resize({100, 3});
    CHECK(z.memory() == Memory::device);
    CHECK(device_memory_stats().transfers == t0 + 1);

    // back: bit-equal, one more transfer
    const Floats2d back = to_host(d);
    CHECK(back.memory() == Memory::host);
    CHECK(std::vector<float>(back.begin(), back.end()) == std::vector<float>{1, 2, 3, 4, 5, 6});
    CHECK(device_memory_stats().transfers == t0 + 2);

    // a view copies from where it points; a scope makes new arrays on the device
    const Floats2d fromview(d.view());
    CHECK(fromview.memory() == Memory::host);
    {
        const detail::MemoryScope scope(Memory::device);
        const Floats2d inside({3, 3});
        CHECK(inside.memory() == Memory::device);
        CHECK(inside[8] == 0.0f);  // zero-filled on the device
    }
    CHECK(Floats2d({1, 1}).memory() == Memory::host);
    // Lists and Ragged move their float data; lengths are copied as they are
    const List<Floats2d> L{std::vector<Floats2d>{random_array(2, 3, 1), random_array(4, 3, 2)}};
    const auto Ld = to_device(L);
    CHECK((Ld[0].memory() == Memory::device && Ld[1].memory() == Memory::device));
    const Ragged R(random_array(5, 3, 3), {2, 3});
    const Ragged Rd = to_device(R);
    CHECK(Rd.data().memory() == Memory::device);
    CHECK(Rd.lengths()[1] == 3);
}

TEST_CASE("device models: to_gpu / to_cpu move parameters, gradients and optimizer state", "[device]") {
    auto model = make_mlp();
    to_cpu(model);
    const Floats2d X = batch_x(16, 1);
    model.initialize(X);
    Optimizer opt = Adam(0.01);
    step(model, opt, X, batch_dy(16, 2), 7);  // gradients and Adam's state exist
    const auto params = all_params(model), grads = testing::all_grads(model);
    REQUIRE(all_in(model, Memory::host));

    to_gpu(model, opt, dev());
    CHECK(&model.ops() == &dev());
    for (const Node* n : model.walk()) CHECK(&n->ops() == &dev());
    CHECK(all_in(model, Memory::device));
    CHECK(model_memory(model) == Memory::device);
    for (Node* n : model.walk())
        for (const auto& name : n->param_names())
            if (Floats1d* avg = opt.average(n->id(), name)) CHECK(avg->memory() == Memory::device);

    // and back: every value bit-equal
    to_cpu(model, opt);
    CHECK(&model.ops() == &cpu_ops());
    CHECK(all_in(model, Memory::host));
    CHECK(all_params(model) == params);
    CHECK(testing::all_grads(model) == grads);
    for (Node* n : model.walk())
        for (const auto& name : n->param_names())
            if (Floats1d* avg = opt.average(n->id(), name)) CHECK(avg->memory() == Memory::host);

    // to_gpu's backend: the current one if it is a device backend, else the one started
    to_gpu(model);
    CHECK(model.ops().memory() == Memory::device);
    CHECK(error_id([&] { to_gpu(model, cpu_ops()); }) == "tenon-E344");
}

TEST_CASE("device models: the input must be in the model's memory; the output is made there", "[device]") {
    auto model = make_mlp();
    to_cpu(model);
    const Floats2d X = batch_x(8, 3);
    model.initialize(X);
    to_gpu(model, dev());

    // a host array to a device model: tenon-E342, naming the model, the call and both memories
    const std::string msg = error_text([&] { (void)model.predict(X); });
    CHECK(msg.find("tenon-E342") != std::string::npos);
    CHECK(msg.find("predict") != std::string::npos);
    CHECK(msg.find("host memory") != std::string::npos);
    CHECK(msg.find("device-host") != std::string::npos);
    CHECK(msg.find("to_device(X)") != std::string::npos);
    CHECK(error_id([&] { (void)model.begin_update(X); }) == "tenon-E342");

    // with the data moved: predict's output is device memory, and nothing crossed meanwhile
    const Floats2d Xd = to_device(X);
    const std::size_t t0 = device_memory_stats().transfers;
    const Floats2d Y = model.predict(Xd);
    CHECK(Y.memory() == Memory::device);
    auto [Yt, bp] = model.begin_update(Xd);
    CHECK(Yt.memory() == Memory::device);
    const Floats2d dX = bp(to_device(batch_dy(8, 4)));
    CHECK(dX.memory() == Memory::device);  // the backprop's arrays: the model's memory, whoever calls it
    CHECK(device_memory_stats().transfers == t0 + 1);  // the dY above, only

    // a plan called directly works in the model's memory too, and its backprop
    {
        auto plan = lower(model);
        CHECK(plan.predict(Xd).memory() == Memory::device);
        auto [Yp, bpp] = plan.begin_update(Xd);
        CHECK(Yp.memory() == Memory::device);
        CHECK(bpp(to_device(batch_dy(8, 4))).memory() == Memory::device);
    }
    // NaN in a device input: counted on the device backend, reported with its position (tenon-E252)
    {
        Floats2d bad = to_device(X);
        bad(3, 2) = std::nanf("");
        const std::string nan_msg = error_text([&] { (void)model.predict(bad); });
        CHECK(nan_msg.find("tenon-E252") != std::string::npos);
        CHECK(nan_msg.find("[3, 2]") != std::string::npos);
    }
    // the reverse: a device array to a host model
    to_cpu(model);
    CHECK(error_id([&] { (void)model.predict(Xd); }) == "tenon-E342");
    CHECK(model.predict(X).memory() == Memory::host);
    // a List's arrays are checked one by one
    auto seq = with_array<List<Floats2d>>(Relu<4>());
    to_cpu(seq);
    const List<Floats2d> L{std::vector<Floats2d>{random_array(2, 3, 1), random_array(4, 3, 2)}};
    seq.initialize(L);
    to_gpu(seq, dev());
    CHECK(error_id([&] { (void)seq.predict(L); }) == "tenon-E342");
    CHECK(seq.predict(to_device(L))[1].memory() == Memory::device);
}

TEST_CASE("device models: training on the device backend equals the CPU's", "[device]") {
    auto cpu_model = make_mlp();
    to_cpu(cpu_model);
    cpu_model.initialize(batch_x(16, 1));
    auto dev_model = copy(cpu_model);
    Optimizer oc = Adam(0.01), od = Adam(0.01);
    to_gpu(dev_model, od, dev());
    for (int s = 0; s < 4; ++s) {
        const Floats2d X = batch_x(16 + 3 * s, 10 + s), dY = batch_dy(16 + 3 * s, 20 + s);
        step(cpu_model, oc, X, dY, 100 + s);
        step(dev_model, od, to_device(X), to_device(dY), 100 + s);
    }
    CHECK(close(all_params(dev_model), all_params(cpu_model), 1e-5f));
    {
        // A step on device data crosses once: the fused optimizer pass's segment table (one
        // launch over every parameter; the per-parameter passes would cross nothing).
        const Floats2d Xd = to_device(batch_x(16, 30)), dYd = to_device(batch_dy(16, 31));
        Optimizer o2 = Adam(0.01);
        step(dev_model, o2, Xd, dYd, 1);  // (its state made)
        const std::size_t t0 = device_memory_stats().transfers;
        step(dev_model, o2, Xd, dYd, 2);
        CHECK(device_memory_stats().transfers == t0 + 1);
    }
    auto ref = copy(dev_model);  // (the same weights again: a copy stays on the device ...)
    to_cpu(ref);                 // (... until moved)
    CHECK(all_params(ref) == all_params(dev_model));
    const Floats2d X = batch_x(9, 50);
    CHECK(close(to_host(dev_model.predict(to_device(X))), ref.predict(X), 1e-5f));
    // SGD too
    Optimizer sc = SGD(0.1), sd = SGD(0.1);
    step(ref, sc, batch_x(5, 60), batch_dy(5, 61), 3);
    step(dev_model, sd, to_device(batch_x(5, 60)), to_device(batch_dy(5, 61)), 3);
    CHECK(close(all_params(dev_model), all_params(ref), 1e-5f));
}

TEST_CASE("device backend: the fused optimizer pass equals the CPU's per-parameter steps", "[device]") {
    REQUIRE(dev().fuses_optimizer());
    REQUIRE(!cpu_ops().fuses_optimizer());
    const std::vector<std::size_t> sizes{1, 37, 256, 5, 1000};
    const detail::MemoryScope scope(Memory::device);
    for (const bool adam : {true, false})
        for (const bool avg : {true, false}) {
            std::vector<Floats1d> W, G, M1, M2, A, W2, G2, M12, M22, A2;
            std::vector<OptSegment> segs;
            for (std::size_t i = 0; i < sizes.size(); ++i) {
                const std::size_t n = sizes[i];
                const Floats2d w = random_array(1, n, 10 + i), g = random_array(1, n, 20 + i),
                               m = random_array(1, n, 30 + i, 0.0, 0.1), v = random_array(1, n, 40 + i, 0.0, 0.1);
                auto flat = [n](const Floats2d& x) { return Floats1d(ArrayView<const float, dyn>(x.data(), {n})); };
                W.push_back(flat(w)), G.push_back(flat(g)), M1.push_back(flat(m)), M2.push_back(flat(v)),
                    A.push_back(flat(w));
            }
            W2 = W, G2 = G, M12 = M1, M22 = M2, A2 = A;
            for (std::size_t i = 0; i < sizes.size(); ++i) {
                const float gscale = 1.0f / static_cast<float>(i + 1), lr = 0.001f * static_cast<float>(i + 1),
                            decay = 0.9f + 0.01f * static_cast<float>(i);
                segs.push_back(OptSegment{W[i].data(), G[i].data(), adam ? M1[i].data() : nullptr,
                                          adam ? M2[i].data() : nullptr, avg ? A[i].data() : nullptr, sizes[i], gscale,
                                          lr, decay, i % 2 == 0});
                if (adam)
                    cpu_ops().adam(W2[i].data(), G2[i].data(), M12[i].data(), M22[i].data(), avg ? A2[i].data() : nullptr,
                                   sizes[i], gscale, 0.9f, 0.999f, lr, 1e-8f, decay, 0.99f, i % 2 == 0);
                else
                    cpu_ops().sgd(W2[i].data(), G2[i].data(), avg ? A2[i].data() : nullptr, sizes[i], gscale, lr, decay,
                                  0.99f, i % 2 == 0);
            }
            if (adam)
                dev().adam_segments(segs.data(), segs.size(), 0.9f, 0.999f, 1e-8f, 0.99f);
            else
                dev().sgd_segments(segs.data(), segs.size(), 0.99f);
            const auto vec = [](const std::vector<Floats1d>& xs) {
                std::vector<std::vector<float>> out;
                for (const auto& x : xs) out.emplace_back(x.begin(), x.end());
                return out;
            };
            CHECK(close(vec(W), vec(W2), 1e-6f));
            CHECK(close(vec(G), vec(G2), 1e-6f));
            CHECK(close(vec(A), vec(A2), 1e-6f));
            if (adam) CHECK((close(vec(M1), vec(M12), 1e-6f) && close(vec(M2), vec(M22), 1e-6f)));
        }
}

TEST_CASE("device allocator: flat high-water mark across random batch sizes, usage, release", "[device]") {
    auto model = make_mlp();
    to_cpu(model);
    model.initialize(batch_x(16, 1));
    Optimizer opt = Adam(0.001);
    to_gpu(model, opt, dev());
    release_device_memory();  // (the marks from here: no other test's blocks or peaks)
    reset_device_memory_high_water();
    CHECK(device_memory_stats().high_water == device_memory_stats().held);
    const std::size_t B = 512;
    // warm-up: the traffic's range (training and predict), the largest batch, then smaller ones
    // down by halves
    // (twice: a model's first calls also make its plan and the optimizer's state)
    for (int round = 0; round < 2; ++round)
        for (std::size_t b = B; b >= 1; b /= 2) {
            step(model, opt, to_device(batch_x(b, b)), to_device(batch_dy(b, b + 1)), b);
            (void)model.predict(to_device(batch_x(b, b + 2)));
        }
    const DeviceMemoryStats warm = device_memory_stats();
    CHECK(warm.in_use > 0);
    CHECK(warm.held >= warm.in_use);
    CHECK(warm.high_water >= warm.held);
    Rng rng(5);
    for (int i = 0; i < 60; ++i) {
        const auto b = static_cast<std::size_t>(rng.uniform(1.0, static_cast<double>(B) + 1.0));
        step(model, opt, to_device(batch_x(b, 1000 + i)), to_device(batch_dy(b, 2000 + i)), i);
        (void)model.predict(to_device(batch_x(b, 3000 + i)));
    }
    const DeviceMemoryStats after = device_memory_stats();
    CHECK(after.high_water == warm.high_water);  // flat: no more memory held than the warm-up's
    CHECK(after.held <= warm.high_water);
    CHECK(after.peak_in_use <= after.high_water);
    // release: the cached blocks go back, the model's stay
    release_device_memory();
    const DeviceMemoryStats rel = device_memory_stats();
    CHECK(rel.held == rel.in_use);
    CHECK(rel.held < after.held);
    step(model, opt, to_device(batch_x(7, 1)), to_device(batch_dy(7, 2)), 1);  // still works
}

TEST_CASE("device allocator: out of memory at the cap is tenon-E341 and the model goes on", "[device]") {
    auto model = make_mlp();
    to_cpu(model);
    model.initialize(batch_x(16, 1));
    auto ref = copy(model);  // trained on the CPU with the batches that succeed
    Optimizer opt = Adam(0.01), ref_opt = Adam(0.01);
    to_gpu(model, opt, dev());
    const std::size_t small = 32;
    step(model, opt, to_device(batch_x(small, 1)), to_device(batch_dy(small, 2)), 1);
    step(ref, ref_opt, batch_x(small, 1), batch_dy(small, 2), 1);
    // the cap: what the small batch needs, far less than a batch of 8192 rows
    const Floats2d bigX = to_device(batch_x(8192, 3)), bigdY = to_device(batch_dy(8192, 4));
    release_device_memory();
    set_device_memory_limit(device_memory_stats().high_water + (std::size_t{64} << 10));
    const auto before = all_params(model);
    const std::size_t failures = device_memory_stats().failures;
    const std::string msg = error_text([&] { step(model, opt, bigX, bigdY, 2); });
    CHECK(msg.find("tenon-E341") != std::string::npos);
    CHECK(msg.find("cap") != std::string::npos);
    CHECK(device_memory_stats().failures > failures);
    CHECK(device_memory_stats().held <= device_memory_stats().limit);
    CHECK(all_params(model) == before);  // nothing changed
    // a smaller batch goes on under the same cap, and training is what the CPU's is
    for (int s = 0; s < 3; ++s) {
        step(model, opt, to_device(batch_x(small, 10 + s)), to_device(batch_dy(small, 20 + s)), 10 + s);
        step(ref, ref_opt, batch_x(small, 10 + s), batch_dy(small, 20 + s), 10 + s);
    }
    CHECK(close(all_params(model), all_params(ref), 1e-5f));
    set_device_memory_limit(0);
    step(model, opt, bigX, bigdY, 2);  // without the cap the large batch fits
    CHECK(device_memory_stats().limit == 0);
}

TEST_CASE("device models: a frozen plan follows the model to the device and back", "[device][frozen]") {
    // The device backend does not prepack (Ops::prepacked_size 0): there a frozen plan keeps no
    // copies and reads the model; back on the CPU it copies again, from the values trained on
    // the device (docs/lowering.md, "Frozen weights").
    auto model = make_mlp();
    to_cpu(model);
    const Floats2d X = batch_x(16, 1);
    model.initialize(X);
    auto plan = lower(model);
    plan.freeze_weights();
    const Floats2d before = plan.predict(X);
    CHECK((plan.frozen_values() > 0) == (cpu_ops().prepacked_size(8, 8) > 0));
    Optimizer opt = Adam(0.01);
    to_gpu(model, opt, dev());
    CHECK(plan.frozen_values() == 0);
    CHECK(close(to_host(plan.predict(to_device(X))), before, 1e-5f));
    step(model, opt, to_device(X), to_device(batch_dy(16, 2)), 7);
    const Floats2d trained = to_host(plan.predict(to_device(X)));
    CHECK(!close(trained, before, 1e-5f));
    to_cpu(model, opt);
    const Floats2d back = plan.predict(X);
    CHECK(testing::same(back, lower(model).predict(X)));
    CHECK(close(back, trained, 1e-5f));
}
