/* A program that forks from a 2 ms timer's signal handler while another thread allocates
 * (small blocks and 2 MiB ones), until it has forked N times (argv[2]); each child exits at
 * once. argv[1] is "fork" (glibc's, not async-signal-safe: it deadlocks when the signal lands
 * on the allocating thread inside malloc — with or without an observer) or "_Fork" (the
 * async-signal-safe one). Prints how many forks, how long they took, and how many signals
 * landed on the allocating thread. Run by tests/preload_signals.rs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int forks, diverted, stop;
static atomic_long total_ns, max_ns;
static pid_t main_tid;
static int safe;

static long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void on_alarm(int sig) {
  (void)sig;
  if (gettid() != main_tid) atomic_fetch_add(&diverted, 1);
  long t0 = now_ns();
  pid_t p = safe ? _Fork() : fork();
  if (p == 0) _exit(0);
  if (p < 0) return;
  long d = now_ns() - t0;
  atomic_fetch_add(&total_ns, d);
  if (d > atomic_load(&max_ns)) atomic_store(&max_ns, d);
  atomic_fetch_add(&forks, 1);
}

static void *allocate(void *arg) {
  (void)arg;
  size_t n = 0;
  while (!atomic_load(&stop)) {
    void *a = malloc(64 + n % 4096);
    void *b = malloc(2 << 20);
    memset(b, 1, 4096);
    __asm__ volatile("" ::"r"(a), "r"(b) : "memory");
    free(a);
    free(b);
    n++;
  }
  return NULL;
}

int main(int argc, char **argv) {
  safe = argc > 1 && strcmp(argv[1], "_Fork") == 0;
  int want = argc > 2 ? atoi(argv[2]) : 200;
  main_tid = gettid();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  pthread_t t;
  pthread_create(&t, NULL, allocate, NULL);
  struct itimerval every = {{0, 2000}, {0, 2000}};
  setitimer(ITIMER_REAL, &every, NULL);
  while (atomic_load(&forks) < want) {
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    usleep(500);
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  printf("forked %d times, %.3f ms a fork (at most %.3f), %d signals on the allocating thread\n",
         atomic_load(&forks), atomic_load(&total_ns) / 1e6 / atomic_load(&forks),
         atomic_load(&max_ns) / 1e6, atomic_load(&diverted));
  return 0;
}
