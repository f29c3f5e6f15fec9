// A GPU prover nobody instrumented, shaped like supraseal's upstream C2 called by bellperson:
// each call copies a batch to the device, runs one kernel per phase, frees its device buffer
// and its host vectors, and the caller prints only bellperson's `prover time` line. No probe,
// no timers, no phase names: under `proofscope run` its proofs come from that line alone, and
// NVML's process list (protocol 1.6 `GpuProcess`) is what says they ran on the GPU.
//
//   nvcc -std=c++17 -O2 examples/cuda-unmodified/prove.cu -o prove-cuda
//   proofscope run --headless -- ./prove-cuda --calls 3 --mib 512
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

__global__ void phase(std::uint64_t *v, std::size_t n, int rounds) {
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        std::uint64_t x = v[i];
        for (int r = 0; r < rounds; r++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        v[i] = x;
    }
}

static void check(cudaError_t e, const char *what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

// bellperson's prefix: `[2026-12-02T15:00:25.943Z INFO  bellperson::groth16::prover::supraseal]`.
static std::string prefix() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    std::tm tm{};
    gmtime_r(&ts.tv_sec, &tm);
    char day[32];
    std::strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    char out[96];
    std::snprintf(out, sizeof out, "[%s.%03ldZ INFO  bellperson::groth16::prover::supraseal]",
                  day, ts.tv_nsec / 1000000);
    return out;
}

int main(int argc, char **argv) {
    int calls = 3;
    std::size_t mib = 512;
    int rounds = 2000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--calls")) calls = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--mib")) mib = std::strtoull(argv[i + 1], nullptr, 10);
        else if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    }
    const std::size_t n = (mib << 20) / sizeof(std::uint64_t);
    for (int c = 0; c < calls; c++) {
        const auto t0 = std::chrono::steady_clock::now();
        // The C2 call: host vectors, a device copy, three phases, everything freed on return.
        {
            std::vector<std::uint64_t> a(n, c + 1), b(n, c + 2);
            std::uint64_t *d = nullptr;
            check(cudaMalloc(&d, n * sizeof *d), "cudaMalloc");
            check(cudaMemcpy(d, a.data(), n * sizeof *d, cudaMemcpyHostToDevice), "copy in");
            for (int p = 0; p < 3; p++) phase<<<264, 256>>>(d, n, rounds);
            check(cudaMemcpy(b.data(), d, n * sizeof *d, cudaMemcpyDeviceToHost), "copy out");
            check(cudaFree(d), "cudaFree");
        }
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "%s prover time: %.9fs\n", prefix().c_str(), secs);
    }
    return 0;
}
