/* Maps address space and memory the ways a CUDA prover does, for tests/preload_mappings.rs:
 * a 64 GiB reservation (PROT_NONE, as cudaDeviceGetDefaultMemPool makes one of 300 GB) with
 * 16 MiB trimmed off its end (as a program aligning one does), 64 MiB committed inside it with
 * MAP_FIXED and 16 MiB committed and decommitted (PROT_NONE mapped over it); and memory: a file's 8 MiB mapped shared, a 48 MiB anonymous mapping and a
 * 32 MiB malloc block, each touched. All of it is unmapped or freed before it exits.
 * Usage: reserve_map FILE (a scratch file it creates). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static void pause_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static void *must(void *p, const char *what) {
  if (p == MAP_FAILED || p == NULL) {
    perror(what);
    exit(1);
  }
  return p;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: reserve_map FILE\n");
    return 2;
  }
  /* The preload's own session starts at once (PROOFSCOPE_PRELOAD_DELAY_MS=0), on a thread. */
  pause_ms(300);
  size_t reserve = (size_t)64 << 30;
  char *r = must(mmap(NULL, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0), "reserve");
  reserve -= 16 * MIB;
  munmap(r + reserve, 16 * MIB);
  char *c = must(mmap(r + 256 * MIB, 64 * MIB, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), "commit");
  memset(c, 1, 64 * MIB);
  /* Committed and given back the way a pool decommits: PROT_NONE mapped over it. */
  char *d = must(mmap(r + 512 * MIB, 16 * MIB, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), "commit 2");
  memset(d, 5, 16 * MIB);
  must(mmap(d, 16 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
            0), "decommit");
  int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)(8 * MIB)) != 0) {
    perror(argv[1]);
    return 1;
  }
  char *f = must(mmap(NULL, 8 * MIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), "file");
  memset(f, 2, 8 * MIB);
  char *m = must(mmap(NULL, 48 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                      0), "memory");
  memset(m, 3, 48 * MIB);
  char *b = must(malloc(32 * MIB), "malloc");
  memset(b, 4, 32 * MIB);
  pause_ms(200);
  free(b);
  munmap(m, 48 * MIB);
  munmap(f, 8 * MIB);
  close(fd);
  munmap(c, 64 * MIB);
  munmap(r, reserve);
  /* A range never mapped: munmap succeeds, and nothing was released. */
  munmap((void *)((uintptr_t)1 << 44), (size_t)1 << 40);
  pause_ms(200);
  printf("done\n");
  return 0;
}
