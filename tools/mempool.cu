// A CUDA program that uses the runtime's memory pool as supraseal does
// (cudaDeviceGetDefaultMemPool, cudaMallocAsync), pinned host memory, and 64 MiB of heap: under
// the allocator probe (tools/gpu-preload-check.sh) its live bytes must stay near what it
// allocated on the host, not the hundreds of gigabytes of address space the pool reserves.
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

static void check(cudaError_t e, const char *what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

int main() {
    usleep(300000);  // the preload's own session starts on a thread of its own
    cudaMemPool_t pool;
    check(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
    uint64_t keep = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "threshold");
    cudaStream_t s;
    check(cudaStreamCreate(&s), "cudaStreamCreate");
    void *d = nullptr;
    check(cudaMallocAsync(&d, 256u << 20, s), "cudaMallocAsync");
    check(cudaMemsetAsync(d, 0, 256u << 20, s), "cudaMemsetAsync");
    check(cudaFreeAsync(d, s), "cudaFreeAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    char *h = static_cast<char *>(std::malloc(64u << 20));
    std::memset(h, 1, 64u << 20);
    void *pinned = nullptr;
    check(cudaMallocHost(&pinned, 32u << 20), "cudaMallocHost");
    std::memset(pinned, 2, 32u << 20);
    usleep(300000);
    std::free(h);
    check(cudaFreeHost(pinned), "cudaFreeHost");
    usleep(300000);
    std::printf("done\n");
    return 0;
}
