/* The malloc family and malloc_usable_size, as a program that trusts them: every block's
 * usable size at least what was asked, written whole, reallocated, freed; with "glibc" as its
 * argument, the usable size is also checked against glibc's own answer (looked up in libc.so.6
 * itself, past any preloaded library). Run under the preload alone and beside another
 * allocator in either order by tests/preload_allocators.rs. */
#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  size_t (*glibc_usable)(void *) = 0;
  if (argc > 1 && strcmp(argv[1], "glibc") == 0) {
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    glibc_usable = libc ? (size_t (*)(void *))dlsym(libc, "malloc_usable_size") : 0;
    if (!glibc_usable) {
      printf("no glibc malloc_usable_size\n");
      return 1;
    }
  }
  long blocks = 0;
  for (int i = 0; i < 2000; i++) {
    size_t n = (size_t)(i * 7919) % (i % 50 == 0 ? (8u << 20) : 5000) + 1;
    char *p = i % 3 == 0 ? calloc(1, n) : malloc(n);
    if (!p) return 1;
    size_t u = malloc_usable_size(p);
    if (u < n || (glibc_usable && glibc_usable(p) != u)) {
      printf("block %d: usable %zu for %zu bytes\n", i, u, n);
      return 1;
    }
    memset(p, 1, u);
    p = realloc(p, n * 2);
    if (!p || malloc_usable_size(p) < n * 2) return 1;
    free(p);
    blocks++;
  }
  void *a = aligned_alloc(4096, 1 << 16);
  if (!a || malloc_usable_size(a) < (1u << 16)) return 1;
  free(a);
  printf("%ld blocks, every usable size right\n", blocks);
  return 0;
}
