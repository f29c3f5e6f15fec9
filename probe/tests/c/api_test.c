/* Every function of proofscope.h, used well and badly, from C99. Exits 0 when each call
 * returned what the header promises; prints the first failure otherwise. Run by
 * probe/tests/c_api.rs with PROOFSCOPE_SOCKET pointing into a temporary directory. */
#include "proofscope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "api_test.c:%d: failed: %s\n", __LINE__, #cond);        \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

PROOFSCOPE_SITE(site_phase, "phase");
PROOFSCOPE_SITE(site_child, "child");
PROOFSCOPE_SITE(site_marker, "tick");
static proofscope_site site_null = {NULL, 0};
static proofscope_site site_bad_utf8 = {"\xff\xfe", 0};

int main(int argc, char **argv) {
    const char *record = argc > 1 ? argv[1] : NULL;

    /* Before start: every call is safe and does nothing. */
    CHECK(!proofscope_enabled());
    proofscope_span s0 = proofscope_span_begin(&site_phase);
    CHECK(s0.id == 0);
    proofscope_span_end(s0);
    proofscope_marker(&site_marker);
    CHECK(proofscope_marker_text("m", "t") == PROOFSCOPE_NOT_RUNNING);
    proofscope_proof_info pi = {"c2", 1000, 2, "cpu", 0};
    proofscope_proof p0 = proofscope_proof_begin(&pi);
    CHECK(p0.proof == 0);
    CHECK(proofscope_proof_end(p0, 1, PROOFSCOPE_VALID, NULL) == PROOFSCOPE_NOT_RUNNING);
    CHECK(proofscope_gpu_span(0, 0, "k", 1, 2, proofscope_current()) == PROOFSCOPE_NOT_RUNNING);
    CHECK(proofscope_report_alloc(1 << 20, 10) == PROOFSCOPE_NOT_RUNNING);
    CHECK(proofscope_now_ns() == 0);
    CHECK(proofscope_stop("never started") == PROOFSCOPE_NOT_RUNNING);
    CHECK(strlen(proofscope_status_string(PROOFSCOPE_FORKED)) > 0);

    /* Start, and a second start. */
    proofscope_config bad = {"\xff", NULL, NULL, NULL, NULL, NULL};
    CHECK(proofscope_start(&bad) == PROOFSCOPE_INVALID_ARGUMENT);
    proofscope_config cfg = {"c-api-test", "1.0", "cpu", "a C test", NULL, record};
    proofscope_status st = proofscope_start(&cfg);
    if (st != PROOFSCOPE_OK) {
        fprintf(stderr, "start: %s: %s\n", proofscope_status_string(st), proofscope_last_error());
        return 1;
    }
    CHECK(proofscope_enabled());
    CHECK(proofscope_start(&cfg) == PROOFSCOPE_ALREADY_RUNNING);

    /* A proof with a phase, a child under a handle, markers, a GPU span, custom blocks. */
    proofscope_proof p = proofscope_proof_begin(&pi);
    CHECK(p.proof != 0 && p.outer.id != 0);
    proofscope_span s = proofscope_span_begin(&site_phase);
    CHECK(s.id != 0);
    proofscope_handle h = proofscope_current();
    CHECK(h.span == s.id && h.proof == p.proof);
    proofscope_span c = proofscope_span_begin_under(&site_child, h);
    CHECK(c.id != 0);
    proofscope_span_end(c);
    proofscope_handle prev = proofscope_adopt(h);
    proofscope_span d = proofscope_span_begin_named("dynamic");
    CHECK(d.id != 0);
    proofscope_span_end(d);
    proofscope_restore(prev);
    proofscope_marker(&site_marker);
    CHECK(proofscope_marker_text("note", "text") == PROOFSCOPE_OK);
    uint64_t now = proofscope_now_ns();
    CHECK(now > 0);
    CHECK(proofscope_monotonic_to_session_ns(0) == 0);
    CHECK(proofscope_gpu_span(0, 1, "kernel", now, now + 1000, h) == PROOFSCOPE_OK);
    CHECK(proofscope_report_alloc(8u << 20, 1000) == PROOFSCOPE_OK);
    CHECK(proofscope_report_release(8u << 20, 2000) == PROOFSCOPE_OK);
    proofscope_span_end(s);

    /* Bad use: NULL and non-UTF-8 names, a NULL site, an end without a begin. */
    CHECK(proofscope_span_begin(NULL).id == 0);
    CHECK(proofscope_span_begin(&site_null).id == 0);
    CHECK(proofscope_span_begin(&site_bad_utf8).id == 0);
    CHECK(proofscope_span_begin_named(NULL).id == 0);
    CHECK(proofscope_span_begin_named("\xc3\x28").id == 0);
    proofscope_span nothing = {0, 0, 0};
    proofscope_span_end(nothing);
    proofscope_marker(NULL);
    CHECK(proofscope_marker_text(NULL, "t") == PROOFSCOPE_INVALID_ARGUMENT);
    CHECK(proofscope_marker_text("\xff", "t") == PROOFSCOPE_INVALID_ARGUMENT);
    CHECK(proofscope_gpu_span(0, 0, NULL, 1, 2, h) == PROOFSCOPE_INVALID_ARGUMENT);
    CHECK(proofscope_proof_end(p, 1, PROOFSCOPE_VALID, "\xff") == PROOFSCOPE_INVALID_ARGUMENT);

    CHECK(proofscope_proof_end(p, 1, PROOFSCOPE_VALID, NULL) == PROOFSCOPE_OK);

    /* A forked child: the probe is the parent's. */
    pid_t pid = fork();
    if (pid == 0) {
        if (proofscope_enabled()) _exit(10);
        if (proofscope_span_begin(&site_phase).id != 0) _exit(11);
        if (proofscope_marker_text("m", "t") != PROOFSCOPE_FORKED) _exit(12);
        if (proofscope_stop("child") != PROOFSCOPE_FORKED) _exit(13);
        if (proofscope_start(&cfg) != PROOFSCOPE_FORKED) _exit(14);
        _exit(0);
    }
    int wst = 0;
    CHECK(waitpid(pid, &wst, 0) == pid);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    CHECK(proofscope_enabled());

    CHECK(proofscope_stop("done") == PROOFSCOPE_OK);
    CHECK(!proofscope_enabled());
    CHECK(proofscope_stop("again") == PROOFSCOPE_NOT_RUNNING);
    puts("c api ok");
    return 0;
}
