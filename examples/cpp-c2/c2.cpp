// A C++17 prover shaped like supraseal's C2 (generate_groth16_proofs_c), CPU only: a batch of
// circuits; synthesis allocating several large vectors per circuit in parallel; split vectors
// on a prep thread; the "GPU" phases on worker threads; an epilogue; an outer wrapper timer.
// The proving vectors are released either when the function returns (--dealloc sync: their
// destructors run inside the wrapper, the 10-second ghost of the C2 story) or on a detached
// thread (--dealloc async).
//
// Built two ways (examples/cpp-c2/README.md): with -DWITH_PROOFSCOPE against
// libproofscope_probe.a (spans, proof scopes, and its vectors' blocks reported through
// proofscope::allocator), or without the probe at all, to run under LD_PRELOAD of
// libproofscope_preload.so (which sees every malloc and free).
#include <atomic>
#include <pthread.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
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
    std::size_t mib = 32; // per vector
    bool sync = true;
};

static std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    return x ^ (x >> 33);
}

// Touches every page and computes something from it.
static std::uint64_t fold(const vec<Scalar> &v) {
    std::uint64_t h = 0;
    for (std::size_t i = 0; i < v.size(); i += 128) h = mix(h ^ v[i].l[0]);
    return h;
}

static double since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The C2 call (supraseal's generate_groth16_proofs_c): its proving vectors are locals, so
// with --dealloc sync their destructors run when it returns.
static std::uint64_t generate_groth16_proofs(const Options &o, int n) {
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
    std::atomic<std::uint64_t> acc{0};
    auto outer = HANDLE();
    // prep_msm on its own thread: split vectors (copies of the significant scalars).
    std::vector<vec<Scalar>> split(o.circuits);
    std::thread prep([&, outer] {
        PHASE_UNDER("prep_msm", outer);
        for (int i = 0; i < o.circuits; i++) {
            split[i].assign(assignments[i].aux.begin(), assignments[i].aux.begin() + len / 2);
            acc += fold(split[i]);
        }
    });
    // The GPU worker: ntt_msm_h, then batch_add and tail_msm after the prep barrier.
    std::thread gpu([&, outer] {
        {
            PHASE_UNDER("ntt_msm_h", outer);
            for (auto &w : assignments) acc += fold(w.a) ^ fold(w.b) ^ fold(w.c);
        }
        prep.join();
        {
            PHASE_UNDER("batch_add", outer);
            for (auto &s : split) acc += fold(s);
        }
        {
            PHASE_UNDER("tail_msm", outer);
            for (auto &w : assignments) acc += fold(w.aux);
        }
    });
    gpu.join();
    {
        PHASE("epilogue");
        acc += mix(acc.load());
    }
    if (!o.sync) {
        // async: the vectors go to a thread of their own; nothing waits for it.
        std::thread([a = std::move(assignments), s = std::move(split)]() mutable {
            pthread_setname_np(pthread_self(), "dealloc");
            a.clear();
            s.clear();
        }).detach();
    }
    return acc.load();
}

// One batch, as the caller sees it: the wrapper timer (and the proof's outer span) around
// the C2 call, destructors included.
static void prove_batch(const Options &o, int n) {
    const auto wrapper = std::chrono::steady_clock::now();
#ifdef WITH_PROOFSCOPE
    proofscope::Proof proof({"c2-shaped", static_cast<std::uint64_t>(o.mib) << 15,
                             static_cast<std::uint32_t>(o.circuits), "cpu", 1});
#endif
    const std::uint64_t acc = generate_groth16_proofs(o, n);
#ifdef WITH_PROOFSCOPE
    proof.end(true, PROOFSCOPE_UNVERIFIABLE);
#endif
    std::printf("proof %d: %d circuits in %.3f s (checksum %llx)\n", n, o.circuits,
                since(wrapper), static_cast<unsigned long long>(acc & 0xffff));
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
        else if (a == "--mib") o.mib = std::strtoull(value("--mib"), nullptr, 10);
        else if (a == "--dealloc") {
            std::string d = value("--dealloc");
            if (d != "sync" && d != "async") {
                std::fprintf(stderr, "--dealloc sync|async, not %s\n", d.c_str());
                return 2;
            }
            o.sync = d == "sync";
        } else {
            std::fprintf(stderr, "unknown flag %s (--proofs, --circuits, --mib, --dealloc)\n",
                         a.c_str());
            return 2;
        }
    }
    if (o.proofs < 1 || o.circuits < 1 || o.mib < 1) {
        std::fprintf(stderr, "--proofs, --circuits and --mib must be at least 1\n");
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
