/* A program that bounds its own address space, as a careful server does: at the start of main
 * it sets RLIMIT_AS at what it uses plus HEADROOM MiB (argv[1]), then allocates 400 blocks of
 * BLOCK KiB (argv[2]), one a millisecond, writing each. Alone, every one fits (400 x 128 KiB
 * is 50 MiB of 64). Under the preload, the probe must not take that room from under it. Run
 * by tests/preload_address_space.rs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static long vm_size_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmSize:", 7) == 0) kib = atol(line + 7);
  if (f) fclose(f);
  return kib;
}

int main(int argc, char **argv) {
  long headroom_mib = argc > 1 ? atol(argv[1]) : 64;
  long block = (argc > 2 ? atol(argv[2]) : 128) << 10;
  long kib = vm_size_kib();
  struct rlimit lim = {(rlim_t)(kib + headroom_mib * 1024) * 1024, RLIM_INFINITY};
  if (kib < 0 || setrlimit(RLIMIT_AS, &lim) != 0) {
    perror("setrlimit");
    return 2;
  }
  enum { BLOCKS = 400 };
  static void *blocks[BLOCKS];
  int failed = 0;
  for (int i = 0; i < BLOCKS; i++) {
    blocks[i] = malloc(block);
    if (blocks[i])
      memset(blocks[i], 1, block);
    else
      failed++;
    usleep(1000);
  }
  for (int i = 0; i < BLOCKS; i++) free(blocks[i]);
  printf("%d of %d allocations failed (%ld KiB used at start, %ld MiB of headroom)\n", failed,
         BLOCKS, kib, headroom_mib);
  return failed != 0;
}
