/* The stdio side of the output stamps (src/output.rs): glibc's printf family, fputs, fwrite,
 * putc and fflush write through glibc's own internal entry points, which no interposer sees,
 * so a line a C or C++ prover prints (supraseal's CUZK_TIMING lines: fprintf(stderr, ...))
 * would carry no stamp. Each function here forwards to glibc's and reports the bytes the call
 * flushed to stdout or stderr: what was pending in the stream's buffer before, plus what the
 * call produced, less what is pending after. The stream's lock is held across the call (it is
 * recursive: glibc's own function takes it again), so another thread's output on the same
 * stream is not counted as this call's. Written in C because a variadic function cannot be
 * defined in stable Rust. Each `ps_NAME` here is exported as `NAME` by a trampoline in
 * src/stdio.rs (a Rust shared library exports only what its Rust code defines).
 *
 * The buffer pointers read are glibc's public FILE fields (_IO_write_base, _IO_write_ptr),
 * laid out so since glibc 2.0. Calls on streams other than stdout and stderr (or their
 * duplicates) pass straight through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* In src/output.rs. */
int proofscope_preload_stream_of(int fd);
void proofscope_preload_written(int stream, unsigned long long bytes);

/* glibc's function `name`, found once. */
#define NEXT(type, var, name)                                                                \
  static type var;                                                                           \
  if (!var) var = (type)dlsym(RTLD_NEXT, name)

static size_t pending(FILE *f) {
  return f->_IO_write_ptr > f->_IO_write_base ? (size_t)(f->_IO_write_ptr - f->_IO_write_base)
                                              : 0;
}

/* The stream `f` writes to (1, 2), or 0. */
static int stream_of(FILE *f) { return f ? proofscope_preload_stream_of(fileno(f)) : 0; }

/* After a call on `f` (locked, of stream `s`) that produced `produced` bytes with `before`
 * pending: the bytes it flushed. */
static void flushed(FILE *f, int s, size_t before, long long produced) {
  long long after = (long long)pending(f);
  long long out = (long long)before + (produced > 0 ? produced : 0) - after;
  if (out > 0) proofscope_preload_written(s, (unsigned long long)out);
}

/* Runs `call` (an expression whose value is the bytes produced, or negative) on `f` with
 * the accounting around it; `result` is the call's own return value. */
#define AROUND(f, result_type, call, produced_of)                                            \
  do {                                                                                       \
    int s_ = stream_of(f);                                                                   \
    if (!s_) return (call);                                                                  \
    flockfile(f);                                                                            \
    size_t before_ = pending(f);                                                             \
    result_type r_ = (call);                                                                 \
    flushed(f, s_, before_, (long long)(produced_of));                                       \
    funlockfile(f);                                                                          \
    return r_;                                                                               \
  } while (0)

typedef int (*vfprintf_t)(FILE *, const char *, va_list);
typedef int (*vfprintf_chk_t)(FILE *, int, const char *, va_list);

int ps_vfprintf(FILE *f, const char *fmt, va_list ap) {
  NEXT(vfprintf_t, real, "vfprintf");
  AROUND(f, int, real(f, fmt, ap), r_);
}

int ps_vprintf(const char *fmt, va_list ap) { return ps_vfprintf(stdout, fmt, ap); }

int ps_fprintf(FILE *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = ps_vfprintf(f, fmt, ap);
  va_end(ap);
  return r;
}

int ps_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = ps_vfprintf(stdout, fmt, ap);
  va_end(ap);
  return r;
}

/* The _FORTIFY_SOURCE entry points, which -O2 builds on many distributions call instead. */
int ps___vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap) {
  NEXT(vfprintf_chk_t, real, "__vfprintf_chk");
  AROUND(f, int, real(f, flag, fmt, ap), r_);
}

int ps___vprintf_chk(int flag, const char *fmt, va_list ap) {
  return ps___vfprintf_chk(stdout, flag, fmt, ap);
}

int ps___fprintf_chk(FILE *f, int flag, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = ps___vfprintf_chk(f, flag, fmt, ap);
  va_end(ap);
  return r;
}

int ps___printf_chk(int flag, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = ps___vfprintf_chk(stdout, flag, fmt, ap);
  va_end(ap);
  return r;
}

typedef int (*fputs_t)(const char *, FILE *);
typedef int (*puts_t)(const char *);
typedef size_t (*fwrite_t)(const void *, size_t, size_t, FILE *);
typedef int (*putc_t)(int, FILE *);
typedef int (*fflush_t)(FILE *);

int ps_fputs(const char *str, FILE *f) {
  NEXT(fputs_t, real, "fputs");
  AROUND(f, int, real(str, f), r_ >= 0 ? strlen(str) : 0);
}

int ps_puts(const char *str) {
  NEXT(puts_t, real, "puts");
  AROUND(stdout, int, real(str), r_ >= 0 ? strlen(str) + 1 : 0);
}

size_t ps_fwrite(const void *p, size_t size, size_t n, FILE *f) {
  NEXT(fwrite_t, real, "fwrite");
  AROUND(f, size_t, real(p, size, n, f), r_ * size);
}

int ps_fputc(int c, FILE *f) {
  NEXT(putc_t, real, "fputc");
  AROUND(f, int, real(c, f), r_ != EOF ? 1 : 0);
}

int ps_putc(int c, FILE *f) {
  NEXT(putc_t, real, "putc");
  AROUND(f, int, real(c, f), r_ != EOF ? 1 : 0);
}

int ps_putchar(int c) { return ps_putc(c, stdout); }

int ps_fflush(FILE *f) {
  NEXT(fflush_t, real, "fflush");
  if (!f) {
    /* Every stream: account for the two that are ours one at a time, then the rest. */
    ps_fflush(stdout);
    ps_fflush(stderr);
    return real(NULL);
  }
  AROUND(f, int, real(f), 0);
}
