// Replaced global allocators that count heap traffic per thread (see allocation_hooks.h).

#include "tests/support/allocation_hooks.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

// ------------------------------------------------------------------------------------------------
// Counters. Plain thread_local PODs in the executable use the local-exec TLS model: reading them
// never allocates (unlike dynamic TLS in shared objects), so they are safe inside malloc.

namespace {

thread_local bool t_counting = false;
thread_local long t_allocations = 0;
thread_local long t_deallocations = 0;

// the sum over every counting thread, for threads the test cannot ask directly (an RT thread)
std::atomic<long> g_allocations{0};
std::atomic<long> g_deallocations{0};

inline void noteAllocation() {
  if (t_counting) {
    ++t_allocations;
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
}
inline void noteDeallocation(const void* p) {
  if (t_counting && p != nullptr) {
    ++t_deallocations;
    g_deallocations.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

namespace hilsim::test {

void beginHeapCounting() noexcept { t_counting = true; }
void endHeapCounting() noexcept { t_counting = false; }
bool heapCountingActive() noexcept { return t_counting; }
HeapCounts threadHeapCounts() noexcept { return HeapCounts{t_allocations, t_deallocations}; }
HeapCounts allThreadsHeapCounts() noexcept {
  return HeapCounts{g_allocations.load(std::memory_order_relaxed),
                    g_deallocations.load(std::memory_order_relaxed)};
}

}  // namespace hilsim::test

#if HILSIM_ALLOCATION_HOOKS

extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* p, std::size_t size);
void __libc_free(void* p);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void* __libc_valloc(std::size_t size);
void* __libc_pvalloc(std::size_t size);

void* malloc(std::size_t size) noexcept {
  noteAllocation();
  return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) noexcept {
  noteAllocation();
  return __libc_calloc(count, size);
}
void* realloc(void* p, std::size_t size) noexcept {
  noteAllocation();
  return __libc_realloc(p, size);
}
void free(void* p) noexcept {
  noteDeallocation(p);
  __libc_free(p);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  noteAllocation();
  return __libc_memalign(alignment, size);
}
void* memalign(std::size_t alignment, std::size_t size) noexcept {
  noteAllocation();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
  noteAllocation();
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return 22;  // EINVAL
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return 12;  // ENOMEM
  *out = p;
  return 0;
}
void* valloc(std::size_t size) noexcept {
  noteAllocation();
  return __libc_valloc(size);
}
void* pvalloc(std::size_t size) noexcept {
  noteAllocation();
  return __libc_pvalloc(size);
}
}  // extern "C"

namespace {

void* allocate(std::size_t size, std::size_t alignment, bool nothrow) {
  noteAllocation();
  if (size == 0) size = 1;
  void* p = alignment > alignof(std::max_align_t) ? __libc_memalign(alignment, size)
                                                  : __libc_malloc(size);
  if (p == nullptr && !nothrow) throw std::bad_alloc();
  return p;
}

void deallocate(void* p) noexcept {
  noteDeallocation(p);
  __libc_free(p);
}

constexpr std::size_t kDefault = 0;
std::size_t alignmentOf(std::align_val_t a) { return static_cast<std::size_t>(a); }

}  // namespace

void* operator new(std::size_t n) { return allocate(n, kDefault, false); }
void* operator new[](std::size_t n) { return allocate(n, kDefault, false); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, kDefault, true); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, kDefault, true); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate(n, alignmentOf(a), false); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate(n, alignmentOf(a), false); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, alignmentOf(a), true);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, alignmentOf(a), true);
}

void operator delete(void* p) noexcept { deallocate(p); }
void operator delete[](void* p) noexcept { deallocate(p); }
void operator delete(void* p, std::size_t) noexcept { deallocate(p); }
void operator delete[](void* p, std::size_t) noexcept { deallocate(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { deallocate(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { deallocate(p); }
void operator delete(void* p, std::align_val_t) noexcept { deallocate(p); }
void operator delete[](void* p, std::align_val_t) noexcept { deallocate(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { deallocate(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { deallocate(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { deallocate(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { deallocate(p); }

#endif  // HILSIM_ALLOCATION_HOOKS
