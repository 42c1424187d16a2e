// The device backend compiled as host code (docs/cuda.md, "Checked without a GPU"): the same
// source as the CUDA build's (device_ops.inl, device_stage.inl), its Thrust passes on Thrust's
// CPP device system (meson sets THRUST_DEVICE_SYSTEM and uses Debian's Thrust, not CUDA's),
// its cuBLAS calls answered by a host cuBLAS over the CPU backend's product. The test suite
// runs on it with TENON_TEST_OPS=device-host (tests/catch_main.cpp).
#define TENON_DEVICE_NS device_host
#define TENON_DEVICE_NAME "device-host"

#include "tenon/backend/device.hpp"

#include <execinfo.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

#include "device_ops.inl"
#include "device_stage.inl"
#include "tenon/error.hpp"
#include "upload.inl"

namespace tenon::device_host {

// cuBLAS's SGEMM, column-major: C (m x n, ldc) = alpha op(A) op(B) + beta C, with cuBLAS's
// checks of the sizes and leading dimensions. The column-major C is the row-major C^T =
// op(B)^T op(A)^T (n x m): the CPU's row-major product with the operands swapped.
cublasStatus_t cublasSgemm(cublasHandle_t, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                           const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                           float* C, int ldc) {
    TENON_DEVICE_ENTRY;
    const auto at_least = [](int ld, int rows) { return ld >= (rows > 1 ? rows : 1); };
    const bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
    if (m < 0 || n < 0 || k < 0 || !at_least(lda, ta ? k : m) || !at_least(ldb, tb ? n : k) || !at_least(ldc, m))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    const auto z = [](int v) { return static_cast<std::size_t>(v); };
    cpu_ops().gemm(tb, ta, z(n), z(m), z(k), *alpha, B, z(ldb), A, z(lda), *beta, C, z(ldc));
    return CUBLAS_STATUS_SUCCESS;
}

// cuBLASLt's matmul with the BIAS / RELU_BIAS epilogue, column-major: D (m x n, ldd) =
// epilogue(alpha op(A) op(B) + beta C), the bias (m values, one per row of D) broadcast along
// D's columns and added before the ReLU; the layouts checked against the operations' shapes as
// cuBLASLt checks them. The product is the host cuBLAS's above; the epilogue is the CPU
// backend's row function over D's columns (the row-major rows), so the device-host build
// computes the CPU's bits.
struct cublasLtMatmulDescOpaque_t {
    cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    const float* bias = nullptr;
};
struct cublasLtMatrixLayoutOpaque_t {
    std::uint64_t rows = 0, cols = 0;
    std::int64_t ld = 0;
};
namespace {
std::atomic<std::size_t> lt_calls{0};
}
std::size_t lt_matmul_calls() noexcept { return lt_calls.load(std::memory_order_relaxed); }

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale) {
    if (!desc || compute != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F) return CUBLAS_STATUS_INVALID_VALUE;
    *desc = new cublasLtMatmulDescOpaque_t{};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
    delete desc;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, std::size_t bytes) {
    if (!desc || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    const auto take = [&](auto& field) {
        if (bytes != sizeof(field)) return CUBLAS_STATUS_INVALID_VALUE;
        std::memcpy(&field, buf, bytes);
        return CUBLAS_STATUS_SUCCESS;
    };
    switch (attr) {
        case CUBLASLT_MATMUL_DESC_TRANSA: return take(desc->ta);
        case CUBLASLT_MATMUL_DESC_TRANSB: return take(desc->tb);
        case CUBLASLT_MATMUL_DESC_EPILOGUE: return take(desc->epilogue);
        case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return take(desc->bias);
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType_t type, std::uint64_t rows,
                                          std::uint64_t cols, std::int64_t ld) {
    if (!layout || type != CUDA_R_32F || ld < 0 || (rows > 0 && std::uint64_t(ld) < rows)) return CUBLAS_STATUS_INVALID_VALUE;
    *layout = new cublasLtMatrixLayoutOpaque_t{rows, cols, ld};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
    delete layout;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                              cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t*, void*, std::size_t,
                              cudaStream_t) {
    TENON_DEVICE_ENTRY;
    if (!desc || !Adesc || !Bdesc || !Cdesc || !Ddesc || !alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    const bool ta = desc->ta != CUBLAS_OP_N, tb = desc->tb != CUBLAS_OP_N;
    const std::uint64_t m = ta ? Adesc->cols : Adesc->rows, k = ta ? Adesc->rows : Adesc->cols;
    const std::uint64_t kb = tb ? Bdesc->cols : Bdesc->rows, n = tb ? Bdesc->rows : Bdesc->cols;
    if (k != kb || Ddesc->rows != m || Ddesc->cols != n || Cdesc->rows != m || Cdesc->cols != n)
        return CUBLAS_STATUS_INVALID_VALUE;
    const bool with_bias = desc->epilogue == CUBLASLT_EPILOGUE_BIAS || desc->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
    const bool relu = desc->epilogue == CUBLASLT_EPILOGUE_RELU || desc->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
    if (!with_bias && !relu && desc->epilogue != CUBLASLT_EPILOGUE_DEFAULT) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (with_bias && !desc->bias) return CUBLAS_STATUS_INVALID_VALUE;
    float* d = static_cast<float*>(D);
    const auto ldd = static_cast<std::size_t>(Ddesc->ld);
    if (C != D && *static_cast<const float*>(beta) != 0.0f)
        for (std::uint64_t j = 0; j < n; ++j)
            std::memcpy(d + j * ldd, static_cast<const float*>(C) + j * std::size_t(Cdesc->ld), m * sizeof(float));
    const auto z = [](std::uint64_t v) { return static_cast<int>(v); };
    const cublasStatus_t st = cublasSgemm(nullptr, desc->ta, desc->tb, z(m), z(n), z(k), static_cast<const float*>(alpha),
                                          static_cast<const float*>(A), z(std::uint64_t(Adesc->ld)),
                                          static_cast<const float*>(B), z(std::uint64_t(Bdesc->ld)),
                                          static_cast<const float*>(beta), d, z(ldd));
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    for (std::uint64_t j = 0; j < n; ++j) {  // column j of D: row j of the row-major result
        float* col = d + j * ldd;
        if (with_bias && relu) fn::bias_activate_row(fn::Relu{}, col, desc->bias, m, nullptr);
        else if (with_bias) fn::bias_activate_row(fn::Identity{}, col, desc->bias, m, nullptr);
        else if (relu)
            for (std::uint64_t i = 0; i < m; ++i) col[i] = fn::Relu{}(col[i]);
    }
    lt_calls.fetch_add(1, std::memory_order_relaxed);
    return CUBLAS_STATUS_SUCCESS;
}

void* blas_handle() { return nullptr; }
void* lt_handle() { return nullptr; }
void blas_failed(int status) {
    throw Error("tenon: the device backend's cuBLAS call failed (status " + std::to_string(status) + ")");
}

}  // namespace tenon::device_host

namespace tenon::device_host {
namespace {
// The strict mode (TENON_DEVICE_HOST_STRICT=1, docs/cuda.md, "The strict device-host mode"):
// device memory comes from one reserved range, inaccessible (PROT_NONE over its used part, one
// mprotect) while host code runs inside a device model's call (the scopes of
// tenon/types/device_memory.hpp), so a host access of device memory there, which a GPU would
// not allow, stops the program with the place it happened. Blocks are bumped from the range and
// reused by exact size: the caching allocator above rounds sizes to classes and rarely frees.
struct Arena {
    std::mutex m;
    char* base = nullptr;
    std::size_t used = 0;
    bool accessible = true;
    bool report_only = false;  // TENON_DEVICE_HOST_STRICT=report: list each fault and go on
    std::map<char*, std::size_t> sizes;        // every block handed out: its size asked
    std::multimap<std::size_t, char*> free;    // the freed ones, by that size
    struct sigaction next{};  // the SIGSEGV handler before ours (a fault elsewhere goes to it)
};
constexpr std::size_t arena_bytes = std::size_t(1) << 38;  // address space only (MAP_NORESERVE)
Arena& arena() {
    static Arena* a = new Arena;  // never destroyed: device arrays with static storage outlive main
    return *a;
}

void on_segv(int sig, siginfo_t* info, void* uc) {
    Arena& A = arena();
    const auto* at = static_cast<const char*>(info->si_addr);
    if (at >= A.base && at < A.base + arena_bytes && detail::strict_calls_here == 0) {
        // A thread outside any call (a test reading device arrays while another thread runs a
        // call): allowed. The memory stays open until the scopes next close it, so a fault on
        // another thread meanwhile is missed, never invented.
        if (::mprotect(A.base, A.used, PROT_READ | PROT_WRITE) != 0) std::abort();
        return;
    }
    if (at >= A.base && at < A.base + arena_bytes) {
        char line[160];
        const int n = std::snprintf(line, sizeof line,
                                    "tenon strict device-host: host code touched device memory at %p inside a model "
                                    "call (a crash on a GPU); backtrace:\n",
                                    info->si_addr);
        if (n > 0) (void)!::write(2, line, std::size_t(n));
        void* frames[64];
        ::backtrace_symbols_fd(frames, ::backtrace(frames, 64), 2);
        if (!A.report_only) std::abort();
        // =report: every access is listed, not just the first; the memory stays open until the
        // scopes next close it, and the access runs again when the handler returns.
        if (::mprotect(A.base, A.used, PROT_READ | PROT_WRITE) != 0) std::abort();
        return;
    }
    if ((A.next.sa_flags & SA_SIGINFO) && A.next.sa_sigaction) return A.next.sa_sigaction(sig, info, uc);
    if (A.next.sa_handler != SIG_DFL && A.next.sa_handler != SIG_IGN) return A.next.sa_handler(sig);
    ::signal(sig, SIG_DFL);  // returning re-runs the faulting access under the default action
}

// Called under the scopes' lock (src/device_memory.cpp). Our handler is installed again at each
// closing: a test framework may have put its own in place since (faults elsewhere go to it).
void set_access(bool accessible) noexcept {
    Arena& A = arena();
    std::lock_guard lock(A.m);
    A.accessible = accessible;
    if (!accessible) {
        struct sigaction ours{}, was{};
        ours.sa_sigaction = on_segv;
        ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&ours.sa_mask);
        ::sigaction(SIGSEGV, &ours, &was);
        if (!(was.sa_flags & SA_SIGINFO) || was.sa_sigaction != on_segv) A.next = was;
    }
    if (A.used && ::mprotect(A.base, A.used, accessible ? PROT_READ | PROT_WRITE : PROT_NONE) != 0) std::abort();
}

void* arena_alloc(std::size_t bytes) noexcept {
    Arena& A = arena();
    std::lock_guard lock(A.m);
    if (auto it = A.free.find(bytes); it != A.free.end()) {
        char* p = it->second;
        A.free.erase(it);
        return p;
    }
    const std::size_t size = (bytes + 255) / 256 * 256;
    if (size > arena_bytes - A.used) return nullptr;
    char* p = A.base + A.used;
    if (A.accessible) {  // (mprotect takes whole pages: the first may be in use already)
        const std::size_t page = std::size_t(::sysconf(_SC_PAGESIZE)), from = A.used / page * page;
        if (::mprotect(A.base + from, A.used + size - from, PROT_READ | PROT_WRITE) != 0) return nullptr;
    }
    A.used += size;
    A.sizes.emplace(p, bytes);
    return p;
}

// The device-host build's "device memory": host memory, 256-byte aligned as cudaMalloc's,
// handed out through the same caching allocator (src/device_memory.cpp) as a GPU's, so that
// the allocator, the memory tags and every transfer rule are checked without a GPU. In strict
// mode it is the arena's, the copies and fills backend scopes.
void* host_device_alloc(std::size_t bytes) noexcept {
    if (arena().base) return arena_alloc(bytes);
    return ::operator new(bytes, std::align_val_t{256}, std::nothrow);
}
void host_device_free(void* p) noexcept {
    Arena& A = arena();
    if (!A.base) return ::operator delete(p, std::align_val_t{256});
    std::lock_guard lock(A.m);
    A.free.emplace(A.sizes.at(static_cast<char*>(p)), static_cast<char*>(p));
}
void host_device_copy(void* dst, const void* src, std::size_t n, bool, bool) {
    TENON_DEVICE_ENTRY;
    std::memcpy(dst, src, n);
}
void host_device_zero(void* p, std::size_t n) {
    TENON_DEVICE_ENTRY;
    std::memset(p, 0, n);
}
const detail::DeviceMemoryProvider host_device_memory{"device-host", host_device_alloc, host_device_free,
                                                      host_device_copy, host_device_zero, nullptr};

// With TENON_DEVICE_HOST_STRICT set (read once, at the backend's first use): reserves the
// arena and turns the scopes on.
void start_strict() {
    const char* v = std::getenv("TENON_DEVICE_HOST_STRICT");
    if (!v || !*v || std::strcmp(v, "0") == 0) return;
    void* p = ::mmap(nullptr, arena_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        std::fputs("tenon strict device-host: cannot reserve the arena (mmap)\n", stderr);
        std::abort();
    }
    arena().base = static_cast<char*>(p);
    arena().report_only = std::strcmp(v, "report") == 0;
    void* warm[1];
    (void)::backtrace(warm, 1);  // loads what backtrace needs now, not inside the handler
    detail::enable_strict_device_host(set_access);
}
}  // namespace
}  // namespace tenon::device_host

namespace tenon {
const Ops& device_host_ops() noexcept {
    static const device_host::DeviceOps ops;
    // The first use registers the backend's memory: device arrays then come from it.
    static const bool registered = [] {
        try {
            device_host::start_strict();
            detail::set_device_memory_provider(device_host::host_device_memory);
        } catch (...) {
            return false;  // another device backend's memory is in use (tenon-E343 at its arrays)
        }
        detail::set_device_ops_hint(&ops);
        return true;
    }();
    (void)registered;
    return ops;
}
}  // namespace tenon
