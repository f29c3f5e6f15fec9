// proofscope_cuda.hpp against a stand-in CUDA runtime (fake_cuda/cuda_runtime.h): kernels of
// known length on one stream, timed without the launching thread waiting, reported under the
// phase that launched them; a failing event record loses that span only and leaves the
// runtime's last error clean; flush() reports everything; no event leaks. Run by
// probe/tests/c_api.rs, which checks the recording.
#include "proofscope_cuda.hpp"

#include <chrono>
#include <cstdio>

#define EXPECT(cond)                                                                     \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);     \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

static double ms_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

int main(int argc, char **argv) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    {
        // Without a session: the callable runs, nothing is recorded, no event is made.
        proofscope::cuda::Timeline off(s, 1);
        int ran = 0;
        off.time("unrecorded", [&] { ran++; });
        EXPECT(ran == 1 && fake_cuda::events_alive == 0);
    }
    proofscope_config cfg{"cuda-hpp-test", "1.0", "gpu", nullptr, "none", argc > 1 ? argv[1] : nullptr};
    {
        proofscope::Session session(cfg);
        EXPECT(session.status() == PROOFSCOPE_OK);
        proofscope::cuda::Timeline gpu(s, 3);
        {
            PROOFSCOPE_SPAN("ntt_msm_h");
            const auto t = std::chrono::steady_clock::now();
            gpu.time("ntt", [&] { fake_launch(s, 40); });
            gpu.time("msm", [&] { fake_launch(s, 60); });
            // Two kernels of 100 ms in all, and the launching thread did not wait for them
            // (a margin for a loaded machine: waiting would take the whole 100 ms).
            EXPECT(ms_since(t) < 60);
            // The third record fails: that span is lost, the program's error state is not.
            fake_cuda::fail_record_in = 1;
            gpu.time("lost", [&] { fake_launch(s, 10); });
            EXPECT(cudaPeekAtLastError() == cudaSuccess);
            fake_cuda::fail_record_in = -1;
            proofscope::cuda::flush();
            // flush() returned after the last kernel ended.
            EXPECT(ms_since(t) >= 100);
        }
        {
            PROOFSCOPE_SPAN("tail_msm");
            gpu.time("tail", [&] { fake_launch(s, 30); });
        }
        proofscope::cuda::flush();
    }
    cudaStreamDestroy(s);
    std::puts("cuda hpp ok");
    return 0;
}
