// A C++17 prover shaped like supraseal's C2 (generate_groth16_proofs_c), CPU only: a batch of
// circuits synthesised by the caller (as bellperson does, in parallel, before the call); the
// call's split vectors; a prep thread (prep_msm, then b_g2_msm on the CPU); two "GPU" workers
// splitting the circuits (ntt_msm_h, the prep barrier, batch_add, tail_msm); and the wrapper
// timer the caller prints. The proving vectors are released either when the call returns
// (--dealloc sync: their destructors run inside the wrapper, after every C++ timer, the
// 10-second ghost of the C2 story) or on a detached thread (--dealloc async).
//
// --ghost KIND ends each call with another kind of ghost on the calling thread, after every
// timer and uninstrumented (issue 44's programs; with --dealloc async the vectors are not it):
// `first-touch` writes a fresh --ghost-mib mapping, `mlock` pins one (faulting it in), `munmap`
// unmaps one touched during synthesis, `cpu` spins --ghost-ms in `ghost_cpu_loop`, `lock`
// waits --ghost-ms for a mutex another thread holds. The memory goes to the dealloc thread.
//
// It prints to stderr the lines supraseal's C2 (curio's fork, HEAD) and bellperson print, from
// the same places: `CUZK_TIMING: …` and `CUZK_NTT_H: …` from the call and its threads (the two
// workers' lines interleave), `… prover time: …` from the caller, `async_dealloc_ms` from the
// detached thread. `proofscope run` reads them.
//
// Built two ways (examples/cpp-c2/README.md): with -DWITH_PROOFSCOPE against
// libproofscope_probe.a (spans, proof scopes, and its vectors' blocks reported through
// proofscope::allocator), or without the probe at all, to run under LD_PRELOAD of
// libproofscope_preload.so (which sees every malloc and free).
#include <atomic>
#include <cstdarg>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <pthread.h>
#include <sys/mman.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#ifdef WITH_PROOFSCOPE
#include "proofscope.hpp"
template <class T> using vec = std::vector<T, proofscope::allocator<T>>;
#define PHASE(name) PROOFSCOPE_SPAN(name)
#define PHASE_UNDER(name, parent) PROOFSCOPE_SPAN_UNDER(name, parent)
#define HANDLE() proofscope::current()
#else
template <class T> using vec = std::vector<T>;
#define PHASE(name)
#define PHASE_UNDER(name, parent) (void)(parent)
#define HANDLE() 0
#endif

// A scalar: 32 bytes, like blstrs' Fr.
struct Scalar {
    std::uint64_t l[4];
};

// One circuit's proving vectors (a, b, c and the aux assignment).
struct Assignment {
    vec<Scalar> a, b, c, aux;
};

struct Options {
    int proofs = 3;
    int circuits = 4;
    int gpus = 2;
    std::size_t mib = 32; // per vector
    bool sync = true;
    std::string ghost = "none";
    std::size_t ghost_mib = 1024;
    long ghost_ms = 300;
};

// The ghosts of --ghost, each in a function of its own that no span covers (a stack sampler
// names it). A mapping is handed back to be unmapped off the calling thread.
struct Mapping {
    void *p = nullptr;
    std::size_t len = 0;
};

static Mapping map_fresh(std::size_t mib) {
    Mapping m{nullptr, mib << 20};
    m.p = mmap(nullptr, m.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m.p == MAP_FAILED) {
        std::perror("mmap");
        std::exit(3);
    }
    return m;
}

// One byte a page: every page of the mapping faulted in by the kernel, zeroed.
__attribute__((noinline)) static void ghost_first_touch(Mapping &m) {
    volatile char *c = static_cast<char *>(m.p);
    for (std::size_t i = 0; i < m.len; i += 4096) c[i] = 1;
}

// Pinning fresh memory: the kernel faults every page in and locks it.
__attribute__((noinline)) static void ghost_mlock(Mapping &m) {
    if (mlock(m.p, m.len) != 0) {
        std::perror("mlock (raise RLIMIT_MEMLOCK or run with CAP_IPC_LOCK)");
        std::exit(3);
    }
    munlock(m.p, m.len);
}

__attribute__((noinline)) static void ghost_munmap(Mapping &m) {
    munmap(m.p, m.len);
    m = Mapping{};
}

__attribute__((noinline)) static std::uint64_t ghost_cpu_loop(long ms) {
    const auto t0 = std::chrono::steady_clock::now();
    std::uint64_t x = 1;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(ms))
        for (int i = 0; i < 4096; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

// Another thread takes the lock and holds it for `ms` working; this one then waits for it.
__attribute__((noinline)) static void ghost_lock(long ms) {
    static std::mutex cache;
    std::atomic<bool> held{false};
    std::thread holder([&] {
        pthread_setname_np(pthread_self(), "cache");
        std::lock_guard<std::mutex> g(cache);
        held = true;
        ghost_cpu_loop(ms);
    });
    while (!held) std::this_thread::yield();
    { std::lock_guard<std::mutex> g(cache); }
    holder.join();
}

static std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    return x ^ (x >> 33);
}

// Touches every page and computes something from it: one scalar in 32, so that each phase
// takes milliseconds on a fast idle machine (one in 128 logged `prep_msm_ms=0`, and a 0 ms
// phase is no phase).
static std::uint64_t fold(const vec<Scalar> &v) {
    std::uint64_t h = 0;
    for (std::size_t i = 0; i < v.size(); i += 32) h = mix(h ^ v[i].l[0]);
    return h;
}

using Clock = std::chrono::steady_clock;

static long ms_since(Clock::time_point t) {
    return static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count());
}

// One line to stderr in one write, so that lines of threads printing at once interleave whole.
static void logline(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logline(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = std::vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    n = n < static_cast<int>(sizeof buf) - 2 ? n : static_cast<int>(sizeof buf) - 2;
    buf[n++] = '\n';
    ssize_t w = write(2, buf, static_cast<std::size_t>(n));
    (void)w;
}

// The barrier between prep_msm and the workers' batch_add (C2's: they wait for the split).
struct Barrier {
    std::mutex m;
    std::condition_variable cv;
    bool ready = false;
    void open() {
        std::lock_guard<std::mutex> g(m);
        ready = true;
        cv.notify_all();
    }
    void wait() {
        std::unique_lock<std::mutex> g(m);
        cv.wait(g, [this] { return ready; });
    }
};

static std::mutex gpu_lock; // supraseal's: one batch on the GPUs at a time

// One "GPU" worker: its circuits' ntt_msm_h (a CUZK_NTT_H line per circuit), the barrier,
// batch_add over the split vectors, tail_msm.
static void gpu_worker(std::size_t tid, std::vector<Assignment> &as, std::size_t from,
                       std::size_t to, std::vector<vec<Scalar>> &split, Barrier &prep,
                       std::atomic<std::uint64_t> &acc, decltype(HANDLE()) outer) {
    const auto t0 = Clock::now();
    {
        PHASE_UNDER("ntt_msm_h", outer);
        for (std::size_t i = from; i < to; i++) {
            const auto c0 = Clock::now();
            std::uint64_t h = fold(as[i].a);
            const long ntt = ms_since(c0);
            h ^= fold(as[i].b) ^ fold(as[i].c);
            const long total = ms_since(c0);
            acc += h;
            logline("CUZK_NTT_H: d_b_alloc=0ms ntt_kernels=%ldms coset_intt_sync=0ms "
                    "msm_init=0ms msm_invoke=%ldms msm_dtor=0ms total=%ldms",
                    ntt, total - ntt, total);
        }
    }
    logline("CUZK_TIMING: gpu_tid=%zu ntt_msm_h_ms=%ld", tid, ms_since(t0));
    const auto b0 = Clock::now();
    prep.wait();
    logline("CUZK_TIMING: gpu_tid=%zu barrier_wait_ms=%ld", tid, ms_since(b0));
    const auto ba = Clock::now();
    {
        PHASE_UNDER("batch_add", outer);
        for (std::size_t i = from; i < to; i++) acc += fold(split[i]);
    }
    logline("CUZK_TIMING: gpu_tid=%zu batch_add_ms=%ld", tid, ms_since(ba));
    const auto tm = Clock::now();
    {
        PHASE_UNDER("tail_msm", outer);
        for (std::size_t i = from; i < to; i++) acc += fold(as[i].aux);
    }
    logline("CUZK_TIMING: gpu_tid=%zu tail_msm_ms=%ld gpu_total_ms=%ld", tid, ms_since(tm),
            ms_since(t0));
}

// The C2 call (supraseal's generate_groth16_proofs_c): it owns the proving vectors, so with
// --dealloc sync their destructors run when it returns, after its last timer.
static std::uint64_t generate_groth16_proofs(const Options &o, int n,
                                             std::vector<Assignment> assignments,
                                             Mapping touched) {
    const auto entry = Clock::now();
    const std::size_t len = (o.mib << 20) / sizeof(Scalar);
    // The split vectors: copies of the significant scalars, made before the lock.
    const auto s0 = Clock::now();
    std::vector<vec<Scalar>> split(o.circuits);
    {
        PHASE("split_vectors");
        for (int i = 0; i < o.circuits; i++)
            split[i].assign(assignments[i].aux.begin(), assignments[i].aux.begin() + len / 2);
    }
    logline("CUZK_TIMING: split_vectors_ms=%ld setup_to_split_ms=%ld", ms_since(s0),
            ms_since(entry));
    const long pre_lock = ms_since(entry);
    const auto w0 = Clock::now();
    std::unique_lock<std::mutex> held(gpu_lock);
    logline("CUZK_TIMING: pre_lock_cpu_ms=%ld mutex_wait_ms=%ld", pre_lock, ms_since(w0));
    const auto locked = Clock::now();
    if (n == 1) logline("CUZK_TIMING: set pool release threshold to MAX on gpu 0");
    std::atomic<std::uint64_t> acc{0};
    auto outer = HANDLE();
    Barrier prep_done;
    // prep_msm, then b_g2_msm on the CPU (it may outlast the GPU part).
    std::thread prep([&, outer] {
        const auto p0 = Clock::now();
        {
            PHASE_UNDER("prep_msm", outer);
            for (auto &s : split) acc += fold(s);
        }
        logline("CUZK_TIMING: prep_msm_ms=%ld", ms_since(p0));
        prep_done.open();
        const auto g0 = Clock::now();
        {
            PHASE_UNDER("b_g2_msm", outer);
            for (auto &w : assignments) acc += fold(w.b);
        }
        logline("CUZK_TIMING: b_g2_msm_ms=%ld num_circuits=%d", ms_since(g0), o.circuits);
    });
    // The GPU workers, each a contiguous run of the circuits (C2's split across GPUs).
    std::vector<std::thread> gpus;
    const std::size_t k = assignments.size(), units = static_cast<std::size_t>(o.gpus);
    for (std::size_t u = 0, from = 0; u < units && from < k; u++) {
        const std::size_t to = from + (k - from) / (units - u);
        gpus.emplace_back(gpu_worker, u, std::ref(assignments), from, to, std::ref(split),
                          std::ref(prep_done), std::ref(acc), outer);
        from = to;
    }
    for (auto &t : gpus) t.join();
    logline("CUZK_TIMING: mutex_held_ms=%ld total_start_fn_ms=%ld", ms_since(locked),
            ms_since(entry));
    held.unlock();
    prep.join();
    {
        PHASE("epilogue");
        acc += mix(acc.load());
    }
    // The ghost of --ghost, after every timer.
    Mapping fresh;
    if (o.ghost == "first-touch" || o.ghost == "mlock") {
        fresh = map_fresh(o.ghost_mib);
        if (o.ghost == "first-touch") ghost_first_touch(fresh);
        else ghost_mlock(fresh);
    } else if (o.ghost == "munmap") {
        ghost_munmap(touched);
    } else if (o.ghost == "cpu") {
        acc += ghost_cpu_loop(o.ghost_ms);
    } else if (o.ghost == "lock") {
        ghost_lock(o.ghost_ms);
    }
    auto unmap = [](Mapping &m) {
        if (m.p) munmap(m.p, m.len);
    };
    if (!o.sync) {
        // async: the vectors go to a thread of their own; nothing waits for it.
        std::thread([a = std::move(assignments), s = std::move(split), fresh, touched,
                     unmap]() mutable {
            pthread_setname_np(pthread_self(), "dealloc");
            const auto d0 = Clock::now();
            a.clear();
            s.clear();
            unmap(fresh);
            unmap(touched);
            logline("CUZK_TIMING: async_dealloc_ms=%ld", ms_since(d0));
        }).detach();
    } else {
        unmap(fresh);
        unmap(touched);
    }
    return acc.load();
}

// bellperson's log prefix: `[2026-12-02T15:00:25.943Z INFO  bellperson::…]`.
static std::string log_prefix() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    std::tm tm{};
    gmtime_r(&ts.tv_sec, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    char out[128];
    std::snprintf(out, sizeof out, "[%s.%03ldZ INFO  bellperson::groth16::prover::supraseal]",
                  buf, ts.tv_nsec / 1000000);
    return out;
}

// One batch, as the caller sees it: synthesis, then the C2 call, the wrapper timer (and the
// proof's outer span) around both, destructors included.
static void prove_batch(const Options &o, int n) {
    const auto wrapper = Clock::now();
#ifdef WITH_PROOFSCOPE
    proofscope::Proof proof({"c2-shaped", static_cast<std::uint64_t>(o.mib) << 15,
                             static_cast<std::uint32_t>(o.circuits), "cpu", 1});
#endif
    const std::size_t len = (o.mib << 20) / sizeof(Scalar);
    std::vector<Assignment> assignments(o.circuits);
    {
        PHASE("synthesis");
        auto parent = HANDLE();
        std::vector<std::thread> ts;
        for (int i = 0; i < o.circuits; i++) {
            ts.emplace_back([&, i, parent] {
                PHASE_UNDER("synthesize_circuit", parent);
                Assignment &w = assignments[i];
                for (vec<Scalar> *v : {&w.a, &w.b, &w.c, &w.aux}) {
                    v->resize(len);
                    std::memset(v->data(), 1 + (i + n) % 7, len * sizeof(Scalar));
                }
            });
        }
        for (auto &t : ts) t.join();
    }
    // What --ghost munmap unmaps: touched with the circuits, as the caller's buffers are.
    Mapping touched;
    if (o.ghost == "munmap") {
        PHASE("synthesize_buffers");
        touched = map_fresh(o.ghost_mib);
        std::memset(touched.p, 1, touched.len);
    }
    logline("%s synthesis time: %.9fs", log_prefix().c_str(),
            std::chrono::duration<double>(Clock::now() - wrapper).count());
    const std::uint64_t acc = generate_groth16_proofs(o, n, std::move(assignments), touched);
    const double secs = std::chrono::duration<double>(Clock::now() - wrapper).count();
#ifdef WITH_PROOFSCOPE
    proof.end(true, PROOFSCOPE_UNVERIFIABLE);
#endif
    logline("%s prover time: %.9fs", log_prefix().c_str(), secs);
    std::printf("proof %d: %d circuits in %.3f s (checksum %llx)\n", n, o.circuits, secs,
                static_cast<unsigned long long>(acc & 0xffff));
    std::fflush(stdout);
}

int main(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto value = [&](const char *what) -> const char * {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", what);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--proofs") o.proofs = std::atoi(value("--proofs"));
        else if (a == "--circuits") o.circuits = std::atoi(value("--circuits"));
        else if (a == "--gpus") o.gpus = std::atoi(value("--gpus"));
        else if (a == "--mib") o.mib = std::strtoull(value("--mib"), nullptr, 10);
        else if (a == "--dealloc") {
            std::string d = value("--dealloc");
            if (d != "sync" && d != "async") {
                std::fprintf(stderr, "--dealloc sync|async, not %s\n", d.c_str());
                return 2;
            }
            o.sync = d == "sync";
        } else if (a == "--ghost") {
            o.ghost = value("--ghost");
            if (o.ghost != "none" && o.ghost != "first-touch" && o.ghost != "mlock" &&
                o.ghost != "munmap" && o.ghost != "cpu" && o.ghost != "lock") {
                std::fprintf(stderr, "--ghost none|first-touch|mlock|munmap|cpu|lock, not %s\n",
                             o.ghost.c_str());
                return 2;
            }
        } else if (a == "--ghost-mib") o.ghost_mib = std::strtoull(value("--ghost-mib"), nullptr, 10);
        else if (a == "--ghost-ms") o.ghost_ms = std::atol(value("--ghost-ms"));
        else {
            std::fprintf(stderr,
                         "unknown flag %s (--proofs, --circuits, --gpus, --mib, --dealloc, "
                         "--ghost, --ghost-mib, --ghost-ms)\n",
                         a.c_str());
            return 2;
        }
    }
    if (o.proofs < 1 || o.circuits < 1 || o.gpus < 1 || o.mib < 1 || o.ghost_mib < 1 ||
        o.ghost_ms < 1) {
        std::fprintf(stderr, "--proofs, --circuits, --gpus, --mib, --ghost-mib and --ghost-ms "
                             "must be at least 1\n");
        return 2;
    }
#ifdef WITH_PROOFSCOPE
    proofscope::Session session({"cpp-c2", "0.1", "cpu", "a C++ example", nullptr, nullptr});
    if (session.status() != PROOFSCOPE_OK && session.status() != PROOFSCOPE_NOT_RUNNING)
        std::fprintf(stderr, "proofscope: %s (%s)\n", proofscope_status_string(session.status()),
                     proofscope_last_error());
#endif
    for (int n = 1; n <= o.proofs; n++) prove_batch(o, n);
    // Let a detached release finish before the session says goodbye.
    std::this_thread::sleep_for(std::chrono::milliseconds(o.sync ? 0 : 500));
    return 0;
}
