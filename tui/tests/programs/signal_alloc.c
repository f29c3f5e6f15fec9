/* A program whose signal handler allocates (malloc, and mmap/munmap, which are
 * async-signal-safe) at 5 kHz, while its own thread allocates through malloc only with the
 * signal blocked, and maps and unmaps large regions with it open: the handler then re-enters
 * the preload's hooks in the middle of one. Valid on its own: the handler never interrupts the
 * program's own malloc. Then the signal is blocked in the program's only thread: a handler
 * that still runs runs on a thread that is not the program's (the probe's, which deadlocked
 * on glibc's arena lock when it was inside malloc). Used by tests/preload_signals.rs. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

/* The threads of this process now (the probe's among them, under the preload). */
static int threads(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  int n = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  if (f) fclose(f);
  return n;
}
static volatile sig_atomic_t handled;
static void on_alarm(int s) {
  (void)s;
  void *a = malloc(64), *b = malloc(4 << 20);
  if (b) memset(b, 1, 4096);
  free(b);
  free(a);
  void *m = mmap(0, 8 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m != MAP_FAILED) munmap(m, 8 << 20);
  handled++;
}
int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 20000;
  sigset_t alarm_only;
  sigemptyset(&alarm_only);
  sigaddset(&alarm_only, SIGALRM);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, 0);
  struct itimerval t = {{0, 200}, {0, 200}};
  setitimer(ITIMER_REAL, &t, 0);
  for (long i = 0; i < iters; i++) {
    sigprocmask(SIG_BLOCK, &alarm_only, 0);
    for (int k = 0; k < 20; k++) free(malloc((k % 7) * 100 + 16));
    void *p = malloc((i % 7) * 100 + 16), *q = malloc(2 << 20);
    ((char *)q)[0] = 1;
    free(q);
    free(p);
    sigprocmask(SIG_UNBLOCK, &alarm_only, 0);
    void *m = mmap(0, 2 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      ((char *)m)[0] = 1;
      munmap(m, 2 << 20);
    }
  }
  long open_handled = handled;
  /* Blocked in every thread the program has: a handler that runs now runs on a thread
   * that is not the program's. */
  sigprocmask(SIG_BLOCK, &alarm_only, 0);
  for (long i = 0; i < iters; i++) {
    void *q = malloc(2 << 20);
    ((char *)q)[0] = 1;
    free(q);
    for (int k = 0; k < 20; k++) free(malloc((k % 7) * 100 + 16));
  }
  struct itimerval z = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &z, 0);
  printf("done %ld: %ld signals handled while open, %ld while blocked, %d threads\n", iters,
         open_handled, (long)(handled - open_handled), threads());
  return 0;
}
