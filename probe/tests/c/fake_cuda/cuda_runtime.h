// A stand-in for the CUDA runtime API, enough of it for proofscope_cuda.hpp, so that CI (which
// has no GPU and no CUDA toolkit) can test the header's logic: streams run "kernels" on a
// virtual timeline that advances with the host clock, events take their time when the stream
// reaches them, and calls can be made to fail. Header-only, one translation unit.
#ifndef FAKE_CUDA_RUNTIME_H
#define FAKE_CUDA_RUNTIME_H

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>

enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorLaunchFailure = 719,
};

constexpr unsigned cudaStreamNonBlocking = 1;

namespace fake_cuda {
using clock = std::chrono::steady_clock;
inline std::mutex &lock() {
    static std::mutex m;
    return m;
}
inline thread_local cudaError_t last_error = cudaSuccess;
// cudaEventRecord calls left before one fails (negative: never).
inline int fail_record_in = -1;
inline int events_alive = 0;
} // namespace fake_cuda

struct fake_stream {
    fake_cuda::clock::time_point busy_until{};
};
struct fake_event {
    fake_cuda::clock::time_point at{};
    bool recorded = false;
};
typedef fake_stream *cudaStream_t;
typedef fake_event *cudaEvent_t;

inline cudaError_t fake_fail(cudaError_t e) {
    fake_cuda::last_error = e;
    return e;
}

inline cudaError_t cudaGetDevice(int *d) {
    *d = 0;
    return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : fake_fail(cudaErrorInvalidValue); }
inline cudaError_t cudaPeekAtLastError() { return fake_cuda::last_error; }
inline cudaError_t cudaGetLastError() {
    cudaError_t e = fake_cuda::last_error;
    fake_cuda::last_error = cudaSuccess;
    return e;
}
inline const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "fake error"; }

inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) {
    *s = new fake_stream;
    return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
    delete s;
    return cudaSuccess;
}
inline cudaError_t cudaEventCreate(cudaEvent_t *e) {
    std::lock_guard<std::mutex> g(fake_cuda::lock());
    fake_cuda::events_alive++;
    *e = new fake_event;
    return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
    std::lock_guard<std::mutex> g(fake_cuda::lock());
    fake_cuda::events_alive--;
    delete e;
    return cudaSuccess;
}

// "Launches" `ms` of work on the stream: the host returns at once.
inline void fake_launch(cudaStream_t s, int ms) {
    std::lock_guard<std::mutex> g(fake_cuda::lock());
    s->busy_until = std::max(s->busy_until, fake_cuda::clock::now()) + std::chrono::milliseconds(ms);
}

inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    std::lock_guard<std::mutex> g(fake_cuda::lock());
    if (fake_cuda::fail_record_in >= 0 && fake_cuda::fail_record_in-- == 0)
        return fake_fail(cudaErrorLaunchFailure);
    e->at = std::max(s->busy_until, fake_cuda::clock::now());
    e->recorded = true;
    return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    fake_cuda::clock::time_point at;
    {
        std::lock_guard<std::mutex> g(fake_cuda::lock());
        if (!e->recorded) return fake_fail(cudaErrorInvalidValue);
        at = e->at;
    }
    std::this_thread::sleep_until(at);
    return cudaSuccess;
}
inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    std::lock_guard<std::mutex> g(fake_cuda::lock());
    if (!a->recorded || !b->recorded || fake_cuda::clock::now() < b->at || fake_cuda::clock::now() < a->at)
        return fake_fail(cudaErrorInvalidValue); // not complete yet: the real API says so too
    *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
    return cudaSuccess;
}

#endif
