/* `mremap` is variadic (its fifth argument, the new address, exists only with MREMAP_FIXED),
 * which stable Rust cannot define: this takes that argument and hands the call to the
 * accounting in src/lib.rs (`proofscope_preload_mremap`). Exported as `mremap` by a
 * trampoline in src/stdio.rs, as the stdio hooks are. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <sys/mman.h>

/* In src/lib.rs. */
void *proofscope_preload_mremap(void *old, size_t old_size, size_t new_size, int flags,
                                void *new_address);

void *ps_mremap(void *old, size_t old_size, size_t new_size, int flags, ...) {
  void *new_address = NULL;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    new_address = va_arg(ap, void *);
    va_end(ap);
  }
  return proofscope_preload_mremap(old, old_size, new_size, flags, new_address);
}
