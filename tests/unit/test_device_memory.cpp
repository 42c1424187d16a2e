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
#include <utility>
#include <vector>

#include "tenon/backend/device.hpp"
#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using testing::all_grads;
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

TEST_CASE("device allocator: out of memory inside a plan names the layer whose array it was", "[device]") {
    // The Linear's output (2048 x 4096 floats, 32 MiB) does not fit the cap; the Relu's does.
    // Before, the error named the chain: the plan's arrays are made outside its stages.
    auto model = Relu<8, 12>() >> Linear<4096>();
    model.initialize(batch_x(4, 1));
    Optimizer opt = Adam(0.01);
    to_gpu(model, opt, dev());
    (void)model.predict(to_device(batch_x(4, 2)));
    const Floats2d X = to_device(batch_x(2048, 3));
    release_device_memory();
    set_device_memory_limit(device_memory_stats().high_water + (std::size_t{1} << 20));
    auto caught = [](const std::function<void()>& f) -> Error {
        try {
            f();
        } catch (const Error& e) {
            return e;
        }
        return Error("no error");
    };
    const Error p = caught([&] { (void)model.predict(X); });
    CHECK(p.id() == "tenon-E341");
    CHECK(p.node_path() == "chain>1>linear");
    const Error t = caught([&] { (void)model.begin_update(X); });
    CHECK(t.id() == "tenon-E341");
    INFO(t.what());
    CHECK(t.node_path() == "chain>1>linear");
    // The workspace of a call: its size and largest part are said, and that part's layer named.
    lowering::PlanData plan;
    plan.model_name = "m";
    plan.add_buffer("stage 0 relu output", 8, 0, true);
    Error w("array: cannot allocate", "tenon-E241");
    lowering::note_workspace_error(w, plan, 100, false);
    CHECK(w.message().find("predict workspace of the plan of m for 100 rows") != std::string::npos);
    CHECK(w.message().find("3200 bytes, is stage 0 relu output") != std::string::npos);
    set_device_memory_limit(0);
    (void)model.predict(X);  // without the cap it fits
}

#include "../../src/device/blas.hpp"  // the host cuBLASLt (its checks and its count of matmuls)

TEST_CASE("device backend: a dense layer's bias and ReLU in cuBLASLt's epilogue", "[device]") {
    // The entry alone: Y = act(X W^T + b) through cuBLASLt's column-major translation, the
    // CPU's product and row pass's bits; an activation without an epilogue is declined.
    const std::size_t m = 7, n = 5, k = 3;
    const Floats2d X = random_array(m, k, 1), W = random_array(n, k, 2), b = random_array(1, n, 3);
    for (const Activation act : {Activation::relu, Activation::identity}) {
        Floats2d want({m, n}), got({m, n});
        cpu_ops().gemm(false, true, m, n, k, 1.0f, X.data(), k, W.data(), k, 0.0f, want.data(), n);
        cpu_ops().bias_activate(act, want.data(), b.data(), m, n, nullptr);
        const std::size_t calls = device_host::lt_matmul_calls();
        REQUIRE(dev().gemm_bias_act(act, m, n, k, X.data(), W.data(), nullptr, b.data(), got.data()));
        CHECK(device_host::lt_matmul_calls() == calls + 1);
        CHECK(std::vector<float>(got.begin(), got.end()) == std::vector<float>(want.begin(), want.end()));
    }
    Floats2d Y({m, n});
    CHECK_FALSE(dev().gemm_bias_act(Activation::gelu, m, n, k, X.data(), W.data(), nullptr, b.data(), Y.data()));
    // The CPU's epilogue (its kernels' tiles) gives its product's and row pass's bits, for any
    // activation.
    for (const Activation act : {Activation::relu, Activation::gelu, Activation::identity}) {
        Floats2d want({m, n}), got({m, n});
        cpu_ops().gemm(false, true, m, n, k, 1.0f, X.data(), k, W.data(), k, 0.0f, want.data(), n);
        cpu_ops().bias_activate(act, want.data(), b.data(), m, n, nullptr);
        REQUIRE(cpu_ops().gemm_bias_act(act, m, n, k, X.data(), W.data(), nullptr, b.data(), got.data()));
        CHECK(std::vector<float>(got.begin(), got.end()) == std::vector<float>(want.begin(), want.end()));
    }
    {
        // The host cuBLASLt checks the layouts against the operations, as cuBLASLt does: a wrong
        // translation in the backend fails there (the backend then throws).
        using namespace device_host;
        cublasLtMatmulDesc_t desc = nullptr;
        cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
        REQUIRE(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
        const cublasOperation_t t = CUBLAS_OP_T;
        REQUIRE(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)) == CUBLAS_STATUS_SUCCESS);
        REQUIRE(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, k, n, std::int64_t(k)) == CUBLAS_STATUS_SUCCESS);
        REQUIRE(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, m, std::int64_t(k)) == CUBLAS_STATUS_SUCCESS);
        REQUIRE(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, m, n, std::int64_t(m)) == CUBLAS_STATUS_SUCCESS);  // D is n x m
        const float one = 1.0f, zero = 0.0f;
        CHECK(cublasLtMatmul(nullptr, desc, &one, W.data(), la, X.data(), lb, &zero, Y.data(), ld, Y.data(), ld, nullptr,
                             nullptr, 0, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
        cublasLtMatrixLayout_t bad = nullptr;
        CHECK(cublasLtMatrixLayoutCreate(&bad, CUDA_R_32F, n, m, std::int64_t(n - 1)) == CUBLAS_STATUS_INVALID_VALUE);
        cublasLtMatrixLayoutDestroy(ld);
        cublasLtMatrixLayoutDestroy(lb);
        cublasLtMatrixLayoutDestroy(la);
        cublasLtMatmulDescDestroy(desc);
    }

    // Through a model's plan and its layers: the Relu and Linear layers' products take the
    // epilogue (and their layer norm and dropout still run after it), Softmax's does not; the
    // results are the CPU backend's.
    auto cpu_model = make_mlp();
    to_cpu(cpu_model);
    cpu_model.initialize(batch_x(16, 1));
    auto dev_model = copy(cpu_model);
    Optimizer oc = Adam(0.01), od = Adam(0.01);
    to_gpu(dev_model, od, dev());
    const Floats2d Xp = batch_x(9, 5);
    std::size_t calls = device_host::lt_matmul_calls();
    const Floats2d P = to_host(dev_model.predict(to_device(Xp)));
    CHECK(device_host::lt_matmul_calls() == calls + 2);
    CHECK(close(P, cpu_model.predict(Xp), 1e-6f));
    for (int s = 0; s < 3; ++s) {
        const Floats2d Xs = batch_x(11 + s, 40 + s), dY = batch_dy(11 + s, 50 + s);
        step(cpu_model, oc, Xs, dY, 200 + s);
        calls = device_host::lt_matmul_calls();
        step(dev_model, od, to_device(Xs), to_device(dY), 200 + s);
        CHECK(device_host::lt_matmul_calls() == calls + 2);
    }
    CHECK(close(all_params(dev_model), all_params(cpu_model), 1e-5f));
    {  // the layers alone (no plan) take it too
        calls = device_host::lt_matmul_calls();
        const Floats2d Pl = to_host(unfused(dev_model).predict(to_device(Xp)));
        CHECK(device_host::lt_matmul_calls() == calls + 2);
        auto ref = copy(dev_model);
        to_cpu(ref);
        CHECK(close(Pl, ref.predict(Xp), 1e-6f));
    }
}

// ---- Sequence models on the device backend: the LSTM's weight dropout, summed bias and
// gradient sums, StaticVectors' column mask (and its table, copied to the device once) and the
// tables' masks, ParametricAttention: every value through the backend's entries (Ops::elementwise,
// mask_columns, dropout_mask_bits), their host flags in the call's host words. Trained a few steps
// side by side with the CPU's from the same weights and seeds: outputs, gradients and weights.
namespace {

List<Ints2d> seq_docs(std::size_t n, std::size_t lo, std::size_t hi, std::uint64_t seed) {
    std::uint64_t g = seed * 0x9E3779B97F4A7C15ull + 1;
    auto next = [&] {
        g ^= g << 13, g ^= g >> 7, g ^= g << 17;
        return g;
    };
    List<Ints2d> out;
    for (std::size_t d = 0; d < n; ++d) {
        const std::size_t len = lo + next() % (hi - lo + 1);
        Ints2d a({len, 4}, Memory::host);
        for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<std::int32_t>(next() % 3000);
        out.push_back(std::move(a));
    }
    return out;
}
List<Floats2d> seq_grads(const List<Floats2d>& Y, std::uint64_t seed) {
    List<Floats2d> out;
    for (std::size_t i = 0; i < Y.size(); ++i) out.push_back(random_array(Y[i].shape(0), Y[i].shape(1), seed + i));
    return out;
}
bool close(const List<Floats2d>& a, const List<Floats2d>& b, float tol) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!close(to_host(a[i]), to_host(b[i]), tol)) return false;
    return true;
}
List<Floats2d> host_of(const List<Floats2d>& a) { return to_host(a); }
// The same for a model that outputs one Floats2d (a classifier over the documents).
Floats2d seq_grads(const Floats2d& Y, std::uint64_t seed) { return random_array(Y.shape(0), Y.shape(1), seed); }
Floats2d host_of(const Floats2d& a) { return to_host(a); }

// `make()` twice from one set of weights: one on the CPU, one moved to the device backend; steps
// on the batches, dY random; the device model takes to_device data.
template <class Make>
void seq_side_by_side(Make make, const std::vector<List<Ints2d>>& batches) {
    auto cpu_model = make();
    to_cpu(cpu_model);
    cpu_model.initialize(batches[0]);
    auto dev_model = copy(cpu_model);
    Optimizer oc = Adam(0.01), od = Adam(0.01);
    to_gpu(dev_model, od, dev());
    REQUIRE(std::string(dev_model.ops().name()) == dev().name());
    for (std::size_t s = 0; s < batches.size(); ++s) {
        const List<Ints2d>& X = batches[s];
        fix_random_seed(300 + s);
        auto [Yc, bpc] = cpu_model.begin_update(X);
        fix_random_seed(300 + s);
        auto [Yd, bpd] = dev_model.begin_update(to_device(X));
        CHECK(close(host_of(Yd), Yc, 1e-5f));
        const auto dY = seq_grads(host_of(Yc), 400 + 10 * s);
        bpc(dY);
        bpd(to_device(dY));
        CHECK(close(all_grads(dev_model), all_grads(cpu_model), 1e-5f));
        cpu_model.finish_update(oc);
        dev_model.finish_update(od);
        CHECK(close(all_params(dev_model), all_params(cpu_model), 1e-4f));
    }
    CHECK(dev_model.uses_plan());
    for (const auto& X : batches) CHECK(close(host_of(dev_model.predict(to_device(X))), cpu_model.predict(X), 1e-4f));
}

}  // namespace

TEST_CASE("device models: sequence models (BiLSTM with dropout, StaticVectors, attention) train as on the CPU",
          "[device][seq]") {
    (void)dev();
    const std::vector<List<Ints2d>> batches{seq_docs(7, 1, 12, 1), seq_docs(5, 0, 9, 2), seq_docs(9, 1, 15, 3)};
    SECTION("a BiLSTM tagger, dropout in the tables, the mixer and the LSTM's weights") {
        seq_side_by_side(
            [] {
                return list2ragged<Ints2d>() >>
                       with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<12>(400, 3u, 0, 0.2), Embed<6>(3000, 2))) >>
                       with_array<Ragged>(Maxout<10>({.nP = 2, .dropout = 0.2, .normalize = true})) >> ragged2list() >>
                       with_padded<List<Floats2d>>(BiLSTM<16>({.depth = 2, .dropout = 0.25})) >>
                       with_array<List<Floats2d>>(Softmax<5>());
            },
            batches);
    }
    SECTION("a StaticVectors tok2vec (a host table, its column mask)") {
        auto table = std::make_shared<const Floats2d>(random_array(2000, 6, 62));
        REQUIRE(table->memory() == Memory::host);
        seq_side_by_side(
            [&] {
                return list2ragged<Ints2d>() >>
                       with_array<BasicRagged<Ints2d>>(concatenate(
                           HashEmbed<12>(400, 3u, 0, 0.3), StaticVectors<10, 6>(table, {.column = 1, .dropout = 0.3}))) >>
                       with_array<Ragged>(Maxout<8>({.nP = 2, .dropout = 0.3, .normalize = true})) >> ragged2list() >>
                       with_array<List<Floats2d>>(Softmax<4>());
            },
            batches);
    }
    SECTION("a ParametricAttention classifier") {
        seq_side_by_side(
            [] {
                return list2ragged<Ints2d>() >>
                       with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<12>(400, 3u, 0, 0.2), Embed<6>(3000, 2))) >>
                       with_array<Ragged>(Maxout<10>({.nP = 2, .dropout = 0.2, .normalize = true})) >>
                       ParametricAttention<10>() >> reduce_sum() >> Softmax<5>();
            },
            batches);
    }
}

// ---- What host code does with a device model's parameters: set_param / set_grad / inc_grad,
// model files, use_params / UseAverages, Thinc's L2 as a gradient term and the initialisers all
// reach the parameters through the allocator's copies or the backend's entries, and leave them
// in device memory; the values are the CPU model's.
TEST_CASE("device models: parameters set, saved, loaded, swapped and initialised through the backend", "[device]") {
    auto cpu_model = make_mlp();
    to_cpu(cpu_model);
    cpu_model.initialize(batch_x(16, 1));
    auto dev_model = copy(cpu_model);
    to_gpu(dev_model, dev());
    Node& dev_first = *dev_model.walk()[1];
    Node& cpu_first = *cpu_model.walk()[1];
    REQUIRE(dev_first.has_param("W"));
    const std::size_t nW = cpu_first.get_param("W").size();

    // set_param from host values, set_grad, inc_grad: copies into device memory, the sum on the backend.
    const Floats2d host_w = random_array(1, nW, 7);
    CParamView v = cpu_first.get_param("W");
    v.data = host_w.data();
    dev_first.set_param("W", v);
    cpu_first.set_param("W", v);
    dev_first.set_grad("W", v);
    dev_first.inc_grad("W", v);
    dev_first.inc_grad("W", dev_first.get_param("W"));  // device values: no copy
    CHECK(all_in(dev_model, Memory::device));
    for (std::size_t i = 0; i < nW; ++i) {
        CHECK(dev_first.get_param("W").data[i] == host_w.data()[i]);
        CHECK(dev_first.get_grad("W").data[i] == 3.0f * host_w.data()[i]);
    }
    dev_first.set_grad("W", std::as_const(cpu_first).get_grad("W"));  // (the two models' gradients equal again)

    // Model files: the device model's bytes are the CPU model's; loading into a device model
    // keeps it on the device.
    CHECK(dev_model.to_bytes() == cpu_model.to_bytes());
    auto loaded = make_mlp();
    loaded.initialize(batch_x(16, 2));
    to_gpu(loaded, dev());
    loaded.from_bytes(cpu_model.to_bytes());
    CHECK(all_in(loaded, Memory::device));
    CHECK(all_params(loaded) == all_params(cpu_model));
    const Floats2d X = batch_x(6, 3);
    CHECK(close(to_host(loaded.predict(to_device(X))), cpu_model.predict(X), 1e-6f));

    // Training with L2 as a gradient term, then predicting with the averages (UseAverages).
    OptimizerOptions o;
    o.learn_rate = 0.01;
    o.L2 = 0.01;
    o.L2_is_weight_decay = false;
    Optimizer oc(o), od(o);
    to_gpu(dev_model, od, dev());
    for (int s = 0; s < 3; ++s) {
        const Floats2d Xs = batch_x(10, 70 + s), dY = batch_dy(10, 80 + s);
        step(cpu_model, oc, Xs, dY, 300 + s);
        step(dev_model, od, to_device(Xs), to_device(dY), 300 + s);
    }
    CHECK(close(all_params(dev_model), all_params(cpu_model), 1e-5f));
    const auto before = all_params(dev_model);
    {
        const UseAverages avg_c(cpu_model, oc);
        const UseAverages avg_d(dev_model, od);
        CHECK(all_in(dev_model, Memory::device));
        CHECK(close(to_host(dev_model.predict(to_device(X))), cpu_model.predict(X), 1e-5f));
        CHECK(all_params(dev_model) != before);
    }
    CHECK(all_params(dev_model) == before);

    // A model made and initialised on the device backend: the initialisers' values, drawn on the
    // host, land in device memory, the CPU's from the same seed.
    const Ops& was = current_ops();
    set_current_ops(dev());
    auto on_dev = make_mlp();
    fix_random_seed(5);
    on_dev.initialize(to_device(batch_x(16, 1)));
    set_current_ops(was);
    auto on_cpu = make_mlp();
    fix_random_seed(5);
    on_cpu.initialize(batch_x(16, 1));
    CHECK(all_in(on_dev, Memory::device));
    CHECK(all_params(on_dev) == all_params(on_cpu));
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
