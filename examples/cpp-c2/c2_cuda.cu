// The C2-shaped example (c2.cpp) with its device phases on a GPU: a batch of circuits
// synthesized on CPU threads into host vectors, copied to the device, one CUDA kernel per
// proving phase, timed through proofscope_cuda.hpp, and the host vectors released when the
// C2 call returns (--dealloc sync, the ghost) or on a detached thread (--dealloc async).
//
//   nvcc -std=c++17 -O2 -I probe/include examples/cpp-c2/c2_cuda.cu \
//        target/release/libproofscope_probe.a -ldl -lpthread -lm -o c2-cuda
//   ./c2-cuda --proofs 4 --circuits 4 --mib 256 --rounds 1024 --dealloc sync
//
// Host phases (spans) wait for their kernel, as a prover's phases do; the GPU spans show when
// each kernel actually ran, on the device's timeline under the phase that launched it.
#include "proofscope.hpp"
#include "proofscope_cuda.hpp"

#include <cuda_runtime.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

template <class T> using vec = std::vector<T, proofscope::allocator<T>>;

struct Scalar {
    std::uint64_t l[4];
};

struct Options {
    int proofs = 3;
    int circuits = 4;
    std::size_t mib = 64; // per vector
    int rounds = 256;     // mixing rounds per element in each kernel
    bool sync = true;
};

#define CHECK(call)                                                                         \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) {                                                            \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                         cudaGetErrorString(e_));                                           \
            std::exit(1);                                                                   \
        }                                                                                   \
    } while (0)

__device__ std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    return x ^ (x >> 33);
}

// Each phase's kernel: every element mixed `rounds` times, summed into one word.
__global__ void phase_kernel(const Scalar *in, std::size_t n, int rounds, int salt,
                             unsigned long long *out) {
    __shared__ unsigned long long acc;
    if (threadIdx.x == 0) acc = 0;
    __syncthreads();
    std::uint64_t h = salt;
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        std::uint64_t x = in[i].l[0] ^ in[i].l[3];
        for (int r = 0; r < rounds; r++) x = mix(x + r);
        h += x;
    }
    atomicAdd(&acc, static_cast<unsigned long long>(h));
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(out, acc);
}

// One device phase: a host span around a kernel timed on the GPU, waited for.
static void device_phase(const proofscope_site *site, const char *kernel_name,
                         proofscope::cuda::Timeline &gpu, cudaStream_t s, const Scalar *d,
                         std::size_t n, int rounds, int salt, unsigned long long *d_out) {
    proofscope::Span span(site);
    gpu.time(kernel_name, [&] { phase_kernel<<<1056, 256, 0, s>>>(d, n, rounds, salt, d_out); });
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(s));
}

static std::uint64_t generate_groth16_proofs(const Options &o, int n, cudaStream_t s,
                                             proofscope::cuda::Timeline &gpu) {
    const std::size_t len = (o.mib << 20) / sizeof(Scalar);
    std::vector<vec<Scalar>> a(o.circuits), aux(o.circuits);
    {
        PROOFSCOPE_SPAN("synthesis");
        auto parent = proofscope::current();
        std::vector<std::thread> ts;
        for (int i = 0; i < o.circuits; i++) {
            ts.emplace_back([&, i, parent] {
                PROOFSCOPE_SPAN_UNDER("synthesize_circuit", parent);
                for (vec<Scalar> *v : {&a[i], &aux[i]}) {
                    v->resize(len);
                    std::memset(v->data(), 1 + (i + n) % 7, len * sizeof(Scalar));
                }
            });
        }
        for (auto &t : ts) t.join();
    }
    Scalar *d = nullptr;
    unsigned long long *d_out = nullptr;
    CHECK(cudaMalloc(&d, 2 * o.circuits * len * sizeof(Scalar)));
    CHECK(cudaMalloc(&d_out, sizeof(unsigned long long)));
    CHECK(cudaMemsetAsync(d_out, 0, sizeof(unsigned long long), s));
    {
        PROOFSCOPE_SPAN("h2d");
        gpu.time("copy_in", [&] {
            for (int i = 0; i < o.circuits; i++) {
                cudaMemcpyAsync(d + 2 * i * len, a[i].data(), len * sizeof(Scalar),
                                cudaMemcpyHostToDevice, s);
                cudaMemcpyAsync(d + (2 * i + 1) * len, aux[i].data(), len * sizeof(Scalar),
                                cudaMemcpyHostToDevice, s);
            }
        });
        CHECK(cudaStreamSynchronize(s));
    }
    const std::size_t all = 2 * o.circuits * len;
    static proofscope_site ntt = {"ntt_msm_h", 0}, batch = {"batch_add", 0},
                           tail = {"tail_msm", 0};
    device_phase(&ntt, "ntt_kernel", gpu, s, d, all, o.rounds, n, d_out);
    device_phase(&batch, "batch_add_kernel", gpu, s, d, all / 2, o.rounds, n + 1, d_out);
    device_phase(&tail, "tail_msm_kernel", gpu, s, d + all / 2, all / 2, o.rounds, n + 2, d_out);
    unsigned long long acc = 0;
    {
        PROOFSCOPE_SPAN("epilogue");
        gpu.time("copy_out", [&] {
            cudaMemcpyAsync(&acc, d_out, sizeof acc, cudaMemcpyDeviceToHost, s);
        });
        CHECK(cudaStreamSynchronize(s));
    }
    CHECK(cudaFree(d));
    CHECK(cudaFree(d_out));
    if (!o.sync) {
        std::thread([a = std::move(a), aux = std::move(aux)]() mutable {
            pthread_setname_np(pthread_self(), "dealloc");
            a.clear();
            aux.clear();
        }).detach();
    }
    return acc; // with --dealloc sync, a and aux are freed here, inside the wrapper
}

int main(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        std::string f = argv[i];
        if (i + 1 >= argc) {
            std::fprintf(stderr, "%s needs a value\n", f.c_str());
            return 2;
        }
        const char *v = argv[++i];
        if (f == "--proofs") o.proofs = std::atoi(v);
        else if (f == "--circuits") o.circuits = std::atoi(v);
        else if (f == "--mib") o.mib = std::strtoull(v, nullptr, 10);
        else if (f == "--rounds") o.rounds = std::atoi(v);
        else if (f == "--dealloc" && (std::strcmp(v, "sync") == 0 || std::strcmp(v, "async") == 0))
            o.sync = std::strcmp(v, "sync") == 0;
        else {
            std::fprintf(stderr, "bad flag %s %s (--proofs, --circuits, --mib, --rounds, "
                                 "--dealloc sync|async)\n",
                         f.c_str(), v);
            return 2;
        }
    }
    if (o.proofs < 1 || o.circuits < 1 || o.mib < 1 || o.rounds < 1) {
        std::fprintf(stderr, "--proofs, --circuits, --mib and --rounds must be at least 1\n");
        return 2;
    }
    CHECK(cudaSetDevice(0));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    {
        proofscope::Session session({"cpp-c2-cuda", "0.1", "gpu", "a C++/CUDA example", nullptr,
                                     nullptr});
        // PROOFSCOPE_OFF=1 is a choice, not a failure: only a real failure is worth a line.
        if (session.status() != PROOFSCOPE_OK && session.status() != PROOFSCOPE_NOT_RUNNING)
            std::fprintf(stderr, "proofscope: %s (%s)\n",
                         proofscope_status_string(session.status()), proofscope_last_error());
        proofscope::cuda::Timeline gpu(s, 0);
        for (int n = 1; n <= o.proofs; n++) {
            const auto t = std::chrono::steady_clock::now();
            proofscope::Proof proof({"c2-shaped-cuda", static_cast<std::uint64_t>(o.mib) << 15,
                                     static_cast<std::uint32_t>(o.circuits), "gpu", 1});
            const std::uint64_t acc = generate_groth16_proofs(o, n, s, gpu);
            proof.end(true, PROOFSCOPE_UNVERIFIABLE);
            std::printf("proof %d: %.3f s (checksum %llx)\n", n,
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(),
                        static_cast<unsigned long long>(acc & 0xffff));
            std::fflush(stdout);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(o.sync ? 0 : 500));
        proofscope::cuda::flush(); // every GPU span reported before the session ends
    }
    CHECK(cudaStreamDestroy(s));
    return 0;
}
