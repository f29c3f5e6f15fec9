/*
 * proofscope.h — the proofscope probe for C, C++ and CUDA provers.
 *
 * Link libproofscope_probe.a (or -lproofscope_probe, the shared library) and call
 * proofscope_start() once. Spans nest per thread; a span ends on the thread that began it.
 * Every function is safe to call when no session runs (it does nothing), with NULL or
 * non-UTF-8 names (refused), and in a forked child (refused: the session is the parent's).
 * See docs/EMBEDDING.md. C99.
 */
#ifndef PROOFSCOPE_H
#define PROOFSCOPE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PROOFSCOPE_API_VERSION 1

/* What a call that can fail returns. */
typedef enum proofscope_status {
    PROOFSCOPE_OK = 0,
    PROOFSCOPE_NOT_RUNNING = 1,      /* no session runs: the call did nothing */
    PROOFSCOPE_ALREADY_RUNNING = 2,
    PROOFSCOPE_INVALID_ARGUMENT = 3, /* NULL where a value is needed, or not UTF-8 */
    PROOFSCOPE_FAILED = 4,           /* could not start: proofscope_last_error() says why */
    PROOFSCOPE_FORKED = 5            /* called in a forked child */
} proofscope_status;

/* A call site: one static struct per site, with its name; the probe fills in `id` once. */
typedef struct proofscope_site {
    const char *name;
    uint32_t id;
} proofscope_site;

/* Declares a static call site `var` named `name` (a string literal). */
#define PROOFSCOPE_SITE(var, name) static proofscope_site var = {(name), 0}

/* An open span: its id (0: nothing recorded) and the context to restore when it ends. */
typedef struct proofscope_span {
    uint64_t id;
    uint64_t prev_span;
    uint64_t prev_proof;
} proofscope_span;

/* Names a span and its proof, to nest work of other threads under it. */
typedef struct proofscope_handle {
    uint64_t span;
    uint64_t proof;
} proofscope_handle;

/* How a session starts; any field may be NULL (defaults and PROOFSCOPE_* variables apply). */
typedef struct proofscope_config {
    const char *prover_name;    /* NULL: the executable's name */
    const char *prover_version;
    const char *backend;        /* e.g. "gpu" */
    const char *backend_reason; /* why that backend */
    const char *socket_path;    /* a path, "none", or NULL for the per-user default */
    const char *record_path;    /* a recording file, or NULL */
} proofscope_config;

typedef struct proofscope_proof_info {
    const char *circuit;
    uint64_t constraints; /* per circuit */
    uint32_t circuits;    /* in the batch */
    const char *backend;
    int synthetic_srs;    /* nonzero: proofs cannot verify */
} proofscope_proof_info;

/* A proof in progress: its id (0: nothing recorded) and its outer span. */
typedef struct proofscope_proof {
    uint64_t proof;
    proofscope_span outer;
} proofscope_proof;

typedef enum proofscope_verification {
    PROOFSCOPE_NOT_CHECKED = 0,
    PROOFSCOPE_VALID = 1,
    PROOFSCOPE_INVALID = 2,
    PROOFSCOPE_UNVERIFIABLE = 3
} proofscope_verification;

/* Session. */
proofscope_status proofscope_start(const proofscope_config *cfg);
proofscope_status proofscope_stop(const char *reason);
int proofscope_enabled(void);
const char *proofscope_last_error(void);
const char *proofscope_status_string(proofscope_status status);

/* Spans (begin and end on the same thread). */
proofscope_span proofscope_span_begin(const proofscope_site *site);
proofscope_span proofscope_span_begin_under(const proofscope_site *site, proofscope_handle parent);
proofscope_span proofscope_span_begin_named(const char *name);
void proofscope_span_end(proofscope_span span);
proofscope_handle proofscope_current(void);
proofscope_handle proofscope_adopt(proofscope_handle parent);
void proofscope_restore(proofscope_handle previous);

/* Instants. */
void proofscope_marker(const proofscope_site *site);
proofscope_status proofscope_marker_text(const char *name, const char *text);

/* Proofs: the outer span ("prove", the wrapper timer) and ProofBegin/ProofEnd. */
proofscope_proof proofscope_proof_begin(const proofscope_proof_info *info);
proofscope_status proofscope_proof_end(proofscope_proof proof, int ok,
                                       proofscope_verification verification,
                                       const char *error);

/* Clocks and GPU work: times on the session clock (ns since the session began). */
uint64_t proofscope_now_ns(void);
uint64_t proofscope_monotonic_to_session_ns(uint64_t monotonic_ns);
proofscope_status proofscope_gpu_span(uint32_t device, uint32_t stream, const char *name,
                                      uint64_t start_ns, uint64_t end_ns,
                                      proofscope_handle parent);

/* A custom allocator's blocks (reported as Alloc/Release at or above the large-block
 * threshold, counted either way): call right after the call returned, with its duration. */
proofscope_status proofscope_report_alloc(uint64_t bytes, uint64_t inside_ns);
proofscope_status proofscope_report_release(uint64_t bytes, uint64_t inside_ns);

#ifdef __cplusplus
}
#endif

#endif /* PROOFSCOPE_H */
