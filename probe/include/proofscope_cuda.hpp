// proofscope_cuda.hpp — GPU spans from CUDA events, header-only (C++17, CUDA runtime API).
//
//   proofscope::cuda::Timeline gpu(stream, /*stream_id=*/0);
//   { PROOFSCOPE_SPAN("ntt_msm_h");
//     gpu.time("ntt", [&] { ntt<<<grid, block, 0, stream>>>(d_a, n); });
//     cudaStreamSynchronize(stream); }
//   ...
//   proofscope::cuda::flush();   // before the session stops: every pending span is reported
//
// `time` records a CUDA event before and after what the callable enqueues on the stream and
// returns at once: the launching thread never waits for the GPU. A thread of its own
// ("proofscope-cuda") waits for the end event, converts both events to the session clock and
// reports the span (proofscope_gpu_span) under the span that was current at launch.
//
// Clock: each timeline keeps an anchor, an event recorded on an idle stream of its own and
// waited for at once (about 10-30 us on the calling thread, once per anchor), whose session
// time is the midpoint of the host clock read before the record and after the wait; an
// event's session time is the anchor's plus cudaEventElapsedTime(anchor, event). Elapsed
// times are floats in ms, so the anchor is renewed every ANCHOR_SECONDS to keep their
// resolution near a microsecond.
//
// With no session running, `time` just calls the callable. A CUDA call of this header that
// fails loses that span only; it never throws, and it leaves the runtime's last-error state
// as it found it when that state was clean.
#ifndef PROOFSCOPE_CUDA_HPP
#define PROOFSCOPE_CUDA_HPP

#include "proofscope.hpp"

#include <cuda_runtime.h>
#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace proofscope {
namespace cuda {

// How long an anchor serves before a timeline renews it.
constexpr double ANCHOR_SECONDS = 10.0;

namespace detail {

// A device event whose completion time on the session clock is known.
struct Anchor {
    cudaEvent_t event = nullptr;
    std::uint64_t session_ns = 0;
    ~Anchor() {
        if (event) cudaEventDestroy(event);
    }
};

// Keeps a failing call of ours from surfacing in the program's next cudaGetLastError().
struct ErrorGuard {
    bool clean = cudaPeekAtLastError() == cudaSuccess;
    ~ErrorGuard() {
        if (clean) (void)cudaGetLastError();
    }
};

struct Job {
    cudaEvent_t start, end;
    std::shared_ptr<Anchor> anchor;
    const char *name;
    int device;
    std::uint32_t stream;
    proofscope_handle parent;
};

// The resolver: a queue of recorded spans, a thread that reports them as they complete, and a
// pool of events to reuse (creating one costs a few microseconds).
class Resolver {
  public:
    static Resolver &get() {
        static Resolver r;
        return r;
    }

    cudaEvent_t take_event() {
        {
            std::lock_guard<std::mutex> g(m_);
            if (!pool_.empty()) {
                cudaEvent_t e = pool_.back();
                pool_.pop_back();
                return e;
            }
        }
        cudaEvent_t e = nullptr;
        return cudaEventCreate(&e) == cudaSuccess ? e : nullptr;
    }

    void give_back(cudaEvent_t e) {
        if (!e) return;
        std::lock_guard<std::mutex> g(m_);
        pool_.push_back(e);
    }

    void submit(Job job) {
        std::lock_guard<std::mutex> g(m_);
        if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
        jobs_.push_back(std::move(job));
        cv_.notify_all();
    }

    // Blocks until every submitted span has been reported (or dropped on a CUDA error).
    void flush() {
        std::unique_lock<std::mutex> g(m_);
        idle_.wait(g, [this] { return jobs_.empty() && !busy_; });
    }

    ~Resolver() {
        {
            std::lock_guard<std::mutex> g(m_);
            stop_ = true;
            cv_.notify_all();
        }
        if (thread_.joinable()) thread_.join();
        for (cudaEvent_t e : pool_) cudaEventDestroy(e);
    }

  private:
    Resolver() = default;

    void run() {
        pthread_setname_np(pthread_self(), "proofscope-cuda");
        std::unique_lock<std::mutex> g(m_);
        for (;;) {
            cv_.wait(g, [this] { return stop_ || !jobs_.empty(); });
            if (jobs_.empty()) return; // stopping, nothing left
            Job job = std::move(jobs_.front());
            jobs_.pop_front();
            busy_ = true;
            g.unlock();
            report(job);
            give_back(job.start);
            give_back(job.end);
            g.lock();
            busy_ = false;
            if (jobs_.empty()) idle_.notify_all();
        }
    }

    static void report(const Job &j) {
        ErrorGuard keep;
        float ms_start = 0, ms_end = 0;
        if (cudaSetDevice(j.device) != cudaSuccess) return;
        if (cudaEventSynchronize(j.end) != cudaSuccess) return;
        if (cudaEventElapsedTime(&ms_start, j.anchor->event, j.start) != cudaSuccess) return;
        if (cudaEventElapsedTime(&ms_end, j.anchor->event, j.end) != cudaSuccess) return;
        auto ns = [&](float ms) {
            return ms > 0 ? j.anchor->session_ns + static_cast<std::uint64_t>(ms * 1e6)
                          : j.anchor->session_ns;
        };
        proofscope_gpu_span(static_cast<std::uint32_t>(j.device), j.stream, j.name,
                            ns(ms_start), ns(ms_end), j.parent);
    }

    std::mutex m_;
    std::condition_variable cv_, idle_;
    std::deque<Job> jobs_;
    std::vector<cudaEvent_t> pool_;
    std::thread thread_;
    bool busy_ = false;
    bool stop_ = false;
};

} // namespace detail

// Times device work enqueued on one stream. Use it from the thread that launches on that
// stream (its anchor is not shared); several timelines may share a stream or a device.
class Timeline {
  public:
    // `stream_id` labels the stream in the viewer (streams have no portable number).
    explicit Timeline(cudaStream_t stream, std::uint32_t stream_id = 0) noexcept
        : stream_(stream), stream_id_(stream_id) {
        if (cudaGetDevice(&device_) != cudaSuccess) device_ = -1;
    }
    ~Timeline() {
        if (idle_) cudaStreamDestroy(idle_);
    }
    Timeline(const Timeline &) = delete;
    Timeline &operator=(const Timeline &) = delete;

    // Runs `launch` (which enqueues work on the stream) between two recorded events and
    // queues the span for the resolver. `name` must outlive the report: a string literal.
    template <class F> void time(const char *name, F &&launch) {
        if (!proofscope_enabled() || device_ < 0 || !fresh_anchor()) {
            launch();
            return;
        }
        auto &r = detail::Resolver::get();
        cudaEvent_t start = r.take_event(), end = r.take_event();
        bool ok;
        {
            detail::ErrorGuard keep;
            ok = start && end && cudaEventRecord(start, stream_) == cudaSuccess;
        }
        launch();
        {
            detail::ErrorGuard keep;
            ok = ok && cudaEventRecord(end, stream_) == cudaSuccess;
        }
        if (!ok) {
            r.give_back(start);
            r.give_back(end);
            return;
        }
        r.submit({start, end, anchor_, name, device_, stream_id_, proofscope_current()});
    }

  private:
    // Renews the anchor when it is missing or old; false when that failed (no span then).
    bool fresh_anchor() {
        using clock = std::chrono::steady_clock;
        if (anchor_ && std::chrono::duration<double>(clock::now() - anchored_at_).count() <
                           ANCHOR_SECONDS)
            return true;
        detail::ErrorGuard keep;
        if (!idle_ && cudaStreamCreateWithFlags(&idle_, cudaStreamNonBlocking) != cudaSuccess) {
            idle_ = nullptr;
            return false;
        }
        auto a = std::make_shared<detail::Anchor>();
        if (cudaEventCreate(&a->event) != cudaSuccess) {
            a->event = nullptr;
            return false;
        }
        // The idle stream has nothing queued: the device stamps the event between the
        // record call and the wait's return. The midpoint of the two host readings is the
        // anchor, off by at most half their distance (6 us median, 14 us max on an H200);
        // the later reading alone would place every kernel late by the whole wake latency.
        std::uint64_t before = proofscope_now_ns();
        if (cudaEventRecord(a->event, idle_) != cudaSuccess ||
            cudaEventSynchronize(a->event) != cudaSuccess)
            return false;
        std::uint64_t after = proofscope_now_ns();
        a->session_ns = before + (after - before) / 2;
        anchor_ = std::move(a);
        anchored_at_ = clock::now();
        return true;
    }

    cudaStream_t stream_;
    std::uint32_t stream_id_;
    int device_ = -1;
    cudaStream_t idle_ = nullptr;
    std::shared_ptr<detail::Anchor> anchor_;
    std::chrono::steady_clock::time_point anchored_at_{};
};

// Blocks until every span recorded so far has been reported. Call before the session stops.
inline void flush() { detail::Resolver::get().flush(); }

} // namespace cuda
} // namespace proofscope

#endif // PROOFSCOPE_CUDA_HPP
