#ifndef GATEHOUSE_ALLOCATION_COUNTER_H
#define GATEHOUSE_ALLOCATION_COUNTER_H

#include <stdint.h>

/// The blocks of memory the calling thread has asked for since it started: every `malloc`, `calloc`,
/// `aligned_alloc`, `posix_memalign`, `memalign` and `realloc` of nothing (a `realloc` that grows a block is not a new
/// one). Read on an event loop's thread (`EventLoop.submit`), it counts what that loop's work allocated.
uint64_t gatehouse_thread_allocations(void);

#endif
