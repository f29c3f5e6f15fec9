// proofscope.hpp — C++ RAII on top of proofscope.h (C++17).
//
//   proofscope::Session session({"my-prover", "1.0"});       // or proofscope_start(...)
//   proofscope::Proof proof({"c2", constraints, 10, "gpu"});  // ProofBegin + outer span
//   { PROOFSCOPE_SPAN("synthesis"); synthesize(); }           // a phase
//   std::thread t([h = proofscope::current()] { PROOFSCOPE_SPAN_UNDER("prep_msm", h); ... });
//   proof.end(true);                                          // ProofEnd
//
// Vectors whose releases the viewer should time use proofscope::allocator<T>:
//   std::vector<fr_t, proofscope::allocator<fr_t>> a(n);
#ifndef PROOFSCOPE_HPP
#define PROOFSCOPE_HPP

#include "proofscope.h"

#include <chrono>
#include <cstddef>
#include <memory>
#include <new>
#include <utility>

#define PROOFSCOPE_CAT2(a, b) a##b
#define PROOFSCOPE_CAT(a, b) PROOFSCOPE_CAT2(a, b)

// A span until the end of the enclosing scope, named by a string literal (one static call site).
#define PROOFSCOPE_SPAN(name)                                                            \
    static ::proofscope_site PROOFSCOPE_CAT(proofscope_site_, __LINE__) = {(name), 0};   \
    ::proofscope::Span PROOFSCOPE_CAT(proofscope_span_, __LINE__)(                       \
        &PROOFSCOPE_CAT(proofscope_site_, __LINE__))

// The same, under a parent handed over from another thread.
#define PROOFSCOPE_SPAN_UNDER(name, parent)                                              \
    static ::proofscope_site PROOFSCOPE_CAT(proofscope_site_, __LINE__) = {(name), 0};   \
    ::proofscope::Span PROOFSCOPE_CAT(proofscope_span_, __LINE__)(                       \
        &PROOFSCOPE_CAT(proofscope_site_, __LINE__), (parent))

namespace proofscope {

// This thread's current span, to hand to other threads.
inline proofscope_handle current() noexcept { return proofscope_current(); }

// A session for the lifetime of the object.
class Session {
  public:
    explicit Session(const proofscope_config &cfg) noexcept : status_(proofscope_start(&cfg)) {}
    ~Session() {
        if (status_ == PROOFSCOPE_OK) proofscope_stop("exiting");
    }
    Session(const Session &) = delete;
    Session &operator=(const Session &) = delete;
    proofscope_status status() const noexcept { return status_; }

  private:
    proofscope_status status_;
};

// An open span; ends when destroyed (on the thread that opened it).
class Span {
  public:
    explicit Span(const proofscope_site *site) noexcept : s_(proofscope_span_begin(site)) {}
    Span(const proofscope_site *site, proofscope_handle parent) noexcept
        : s_(proofscope_span_begin_under(site, parent)) {}
    ~Span() { proofscope_span_end(s_); }
    Span(Span &&o) noexcept : s_(o.s_) { o.s_ = proofscope_span{}; }
    Span(const Span &) = delete;
    Span &operator=(const Span &) = delete;
    Span &operator=(Span &&) = delete;
    // This span as a parent for other threads' work.
    proofscope_handle handle() const noexcept {
        return proofscope_handle{s_.id, proofscope_current().proof};
    }

  private:
    proofscope_span s_;
};

// Work of another thread's span, until destroyed: spans opened meanwhile nest under it.
class Adopt {
  public:
    explicit Adopt(proofscope_handle parent) noexcept : prev_(proofscope_adopt(parent)) {}
    ~Adopt() { proofscope_restore(prev_); }
    Adopt(const Adopt &) = delete;
    Adopt &operator=(const Adopt &) = delete;

  private:
    proofscope_handle prev_;
};

// One proof (one batch): ProofBegin and the outer span, the wrapper timer. end() closes both;
// a proof destroyed without end() ends as failed.
class Proof {
  public:
    explicit Proof(const proofscope_proof_info &info) noexcept : p_(proofscope_proof_begin(&info)) {}
    ~Proof() {
        if (!ended_) end(false, PROOFSCOPE_NOT_CHECKED, "ended without end()");
    }
    Proof(const Proof &) = delete;
    Proof &operator=(const Proof &) = delete;
    void end(bool ok, proofscope_verification v = PROOFSCOPE_NOT_CHECKED,
             const char *error = nullptr) noexcept {
        if (ended_) return;
        ended_ = true;
        proofscope_proof_end(p_, ok ? 1 : 0, v, error);
    }
    proofscope_handle handle() const noexcept { return proofscope_handle{p_.outer.id, p_.proof}; }
    uint64_t id() const noexcept { return p_.proof; }

  private:
    proofscope_proof p_;
    bool ended_ = false;
};

// An allocator whose blocks of at least `Min` bytes are timed and reported (Alloc/Release
// at or above the probe's large-block threshold): put it on the vectors whose release the
// viewer should see. Smaller blocks are not reported.
template <class T, std::size_t Min = (64u << 10)> struct allocator {
    using value_type = T;
    template <class U> struct rebind { using other = allocator<U, Min>; };
    allocator() noexcept = default;
    template <class U> allocator(const allocator<U, Min> &) noexcept {}

    T *allocate(std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        const auto t0 = std::chrono::steady_clock::now();
        T *p = std::allocator<T>{}.allocate(n);
        if (bytes >= Min) proofscope_report_alloc(bytes, since(t0));
        return p;
    }
    void deallocate(T *p, std::size_t n) noexcept {
        const std::size_t bytes = n * sizeof(T);
        const auto t0 = std::chrono::steady_clock::now();
        std::allocator<T>{}.deallocate(p, n);
        if (bytes >= Min) proofscope_report_release(bytes, since(t0));
    }
    template <class U> bool operator==(const allocator<U, Min> &) const noexcept { return true; }
    template <class U> bool operator!=(const allocator<U, Min> &) const noexcept { return false; }

  private:
    static uint64_t since(std::chrono::steady_clock::time_point t0) noexcept {
        return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::steady_clock::now() - t0)
                                         .count());
    }
};

} // namespace proofscope

#endif // PROOFSCOPE_HPP
