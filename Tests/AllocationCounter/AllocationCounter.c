// The test binary's allocator functions: each counts the call on its thread and hands it to glibc's own (the
// `__libc_` entry points, which need no `dlsym` and so no allocation of their own). Being defined in the executable,
// these take the place of glibc's for every library it loads (the Swift runtime, Foundation, NIO), as swift-nio's
// allocation-counter tests do. `free` is glibc's, untouched: every block still comes from glibc's allocator.
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "AllocationCounter.h"

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *block, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

// Initial-exec: the counter lives in the thread's static block, so reading it never allocates (a lazily made
// thread-local would call malloc from inside malloc).
static __thread uint64_t allocations __attribute__((tls_model("initial-exec")));

uint64_t gatehouse_thread_allocations(void) { return allocations; }

void *malloc(size_t size) {
    allocations++;
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    allocations++;
    return __libc_calloc(count, size);
}

void *realloc(void *block, size_t size) {
    if (block == NULL) allocations++;
    return __libc_realloc(block, size);
}

void *memalign(size_t alignment, size_t size) {
    allocations++;
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    allocations++;
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **block, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *made = __libc_memalign(alignment, size);
    if (made == NULL) return ENOMEM;
    allocations++;
    *block = made;
    return 0;
}
