/* A buffer resized with mremap, as a prover growing a vector in place might: 64 MiB mapped,
 * shrunk to 16 MiB, grown to 128 MiB (moved if it must), moved whole to an address of its
 * own choosing (MREMAP_FIXED: the variadic fifth argument), then unmapped; and calls that
 * fail (an address never mapped, an unaligned one), which change nothing and keep errno. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MIB ((size_t)1 << 20)

static void *must(void *p, const char *what) {
  if (p == MAP_FAILED) {
    perror(what);
    return NULL;
  }
  return p;
}

static void pause_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&t, NULL);
}

int main(void) {
  pause_ms(200); /* the probe's session starts on a thread of its own */
  char *a = must(mmap(NULL, 64 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                      0), "mmap");
  if (!a) return 1;
  memset(a, 1, 64 * MIB);
  char *b = must(mremap(a, 64 * MIB, 16 * MIB, 0), "shrink");
  if (!b) return 1;
  char *c = must(mremap(b, 16 * MIB, 128 * MIB, MREMAP_MAYMOVE), "grow");
  if (!c) return 1;
  memset(c, 2, 128 * MIB);
  /* Somewhere free to move it: reserve, then move onto the reservation. */
  char *spot = must(mmap(NULL, 128 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                    "spot");
  if (!spot) return 1;
  munmap(spot, 128 * MIB);
  char *d = must(mremap(c, 128 * MIB, 128 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED, spot), "move");
  if (d != spot) {
    fprintf(stderr, "moved to %p, not %p\n", (void *)d, (void *)spot);
    return 1;
  }
  if (mremap((void *)((uintptr_t)1 << 44), 64 * MIB, 32 * MIB, 0) != MAP_FAILED || errno != EFAULT) {
    fprintf(stderr, "a range never mapped was remapped\n");
    return 1;
  }
  /* A failed munmap keeps the kernel's errno (the hook used to overwrite it with EPERM). */
  if (munmap((void *)1, 64 * MIB) != -1 || errno != EINVAL) {
    fprintf(stderr, "munmap of an unaligned address: errno %d, not EINVAL\n", errno);
    return 1;
  }
  pause_ms(200);
  munmap(d, 128 * MIB);
  pause_ms(200);
  printf("done\n");
  return 0;
}
