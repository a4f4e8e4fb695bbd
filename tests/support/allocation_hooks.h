// Heap-traffic counting for tests: a binary that links tests/support/allocation_hooks.cc replaces
// every global operator new/delete and the C allocator (malloc, calloc, realloc, free,
// aligned_alloc, posix_memalign, memalign, valloc, pvalloc), forwarding to glibc's __libc_*
// entry points, and counts the calls made on a thread while counting is on for that thread.
// Under AddressSanitizer or ThreadSanitizer, which own the allocator, the hooks are left out and
// kAllocationHooks is false: tests then skip their counting assertions.
#pragma once

namespace hilsim::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HILSIM_ALLOCATION_HOOKS 0
#else
#define HILSIM_ALLOCATION_HOOKS 1
#endif
inline constexpr bool kAllocationHooks = HILSIM_ALLOCATION_HOOKS;

struct HeapCounts {
  long allocations = 0;
  long deallocations = 0;
};

/// Starts or stops counting on the calling thread (other threads are never counted).
void beginHeapCounting() noexcept;
void endHeapCounting() noexcept;
bool heapCountingActive() noexcept;
/// Totals counted on the calling thread so far.
HeapCounts threadHeapCounts() noexcept;
/// Totals counted so far on every thread that turned counting on (e.g. from a callback that
/// runs on a thread the test does not control).
HeapCounts allThreadsHeapCounts() noexcept;

/// Counts the calling thread's heap traffic from construction to stop() or destruction.
class HeapCountingScope {
 public:
  HeapCountingScope() : start_(threadHeapCounts()) { beginHeapCounting(); }
  ~HeapCountingScope() { stop(); }
  HeapCountingScope(const HeapCountingScope&) = delete;
  HeapCountingScope& operator=(const HeapCountingScope&) = delete;
  /// Stops counting and returns what was counted.
  HeapCounts stop() noexcept {
    if (!stopped_) {
      endHeapCounting();
      const HeapCounts now = threadHeapCounts();
      counted_ = HeapCounts{now.allocations - start_.allocations,
                            now.deallocations - start_.deallocations};
      stopped_ = true;
    }
    return counted_;
  }

 private:
  HeapCounts start_;
  HeapCounts counted_;
  bool stopped_ = false;
};

}  // namespace hilsim::test
