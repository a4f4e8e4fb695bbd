// The lock-free channels (rt/spsc_queue.h, rt/triple_buffer.h): behaviour, concurrent stress
// tests (meant to run under ThreadSanitizer too), and no heap traffic in the calls the RT thread
// makes (counted through tests/support/allocation_hooks.h, off under the sanitizers).
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include <gtest/gtest.h>

#include "rt/spsc_queue.h"
#include "rt/triple_buffer.h"
#include "tests/support/allocation_hooks.h"

namespace hilsim::rt {
namespace {

/// A joint-torque command of the size the RT loop receives (~1 KB).
struct Command {
  std::uint64_t seq = 0;
  std::int64_t t = 0;
  int n = 0;
  std::array<double, 128> tau{};
};

/// A snapshot whose every field equals one counter, so that a torn read is detectable.
struct Snapshot {
  std::uint64_t counter = 0;
  std::array<double, 128> values{};
};

Command commandNumber(std::uint64_t k) {
  Command command;
  command.seq = k;
  command.t = static_cast<std::int64_t>(k);
  command.n = static_cast<int>(k % 128);
  command.tau.fill(static_cast<double>(k));
  return command;
}

void fillSnapshot(Snapshot& snapshot, std::uint64_t counter) {
  snapshot.counter = counter;
  snapshot.values.fill(static_cast<double>(counter));
}

bool consistent(const Snapshot& snapshot) {
  for (double value : snapshot.values) {
    if (value != static_cast<double>(snapshot.counter)) return false;
  }
  return true;
}

// Neither channel may be copied or moved: the two threads hold references to it.
static_assert(!std::is_copy_constructible_v<SpscQueue<Command>>);
static_assert(!std::is_move_constructible_v<SpscQueue<Command>>);
static_assert(!std::is_copy_assignable_v<SpscQueue<Command>>);
static_assert(!std::is_copy_constructible_v<TripleBuffer<Snapshot>>);
static_assert(!std::is_move_constructible_v<TripleBuffer<Snapshot>>);
static_assert(!std::is_copy_assignable_v<TripleBuffer<Snapshot>>);

// ---- SpscQueue ----------------------------------------------------------------------------------

TEST(SpscQueue, PopsInPushOrder) {
  SpscQueue<Command> queue(8);
  for (std::uint64_t k = 1; k <= 5; ++k) ASSERT_TRUE(queue.tryPush(commandNumber(k)));
  for (std::uint64_t k = 1; k <= 5; ++k) {
    Command out;
    ASSERT_TRUE(queue.tryPop(out));
    EXPECT_EQ(out.seq, k);
    EXPECT_EQ(out.n, static_cast<int>(k));
    EXPECT_EQ(out.tau[127], static_cast<double>(k));
  }
}

TEST(SpscQueue, PopOnEmptyReturnsFalseAndLeavesTheOutputAlone) {
  SpscQueue<Command> queue(4);
  Command out = commandNumber(42);
  EXPECT_FALSE(queue.tryPop(out));
  EXPECT_EQ(out.seq, 42u);
  ASSERT_TRUE(queue.tryPush(commandNumber(1)));
  ASSERT_TRUE(queue.tryPop(out));
  EXPECT_FALSE(queue.tryPop(out));
  EXPECT_EQ(out.seq, 1u);
}

TEST(SpscQueue, HoldsExactlyItsCapacityAndCountsEveryDrop) {
  SpscQueue<Command> queue(7);
  EXPECT_EQ(queue.capacity(), 7u);
  EXPECT_EQ(queue.sizeApprox(), 0u);
  for (std::uint64_t k = 0; k < 7; ++k) ASSERT_TRUE(queue.tryPush(commandNumber(k))) << k;
  EXPECT_EQ(queue.sizeApprox(), 7u);
  EXPECT_EQ(queue.dropped(), 0u);

  EXPECT_FALSE(queue.tryPush(commandNumber(100)));
  EXPECT_EQ(queue.dropped(), 1u);
  EXPECT_FALSE(queue.tryPush(commandNumber(101)));
  EXPECT_FALSE(queue.tryPush(commandNumber(102)));
  EXPECT_EQ(queue.dropped(), 3u);
  EXPECT_EQ(queue.sizeApprox(), 7u);  // no growth

  Command out;
  ASSERT_TRUE(queue.tryPop(out));
  EXPECT_EQ(out.seq, 0u);
  EXPECT_TRUE(queue.tryPush(commandNumber(7)));  // room for exactly one again
  EXPECT_FALSE(queue.tryPush(commandNumber(103)));
  EXPECT_EQ(queue.dropped(), 4u);

  // the rejected messages never entered: 1..7 come out
  for (std::uint64_t k = 1; k <= 7; ++k) {
    ASSERT_TRUE(queue.tryPop(out));
    EXPECT_EQ(out.seq, k);
  }
  EXPECT_FALSE(queue.tryPop(out));
  EXPECT_EQ(queue.sizeApprox(), 0u);
}

TEST(SpscQueue, CapacityOneAlternates) {
  SpscQueue<std::uint64_t> queue(1);
  std::uint64_t out = 0;
  for (std::uint64_t k = 0; k < 10; ++k) {
    ASSERT_TRUE(queue.tryPush(k));
    EXPECT_FALSE(queue.tryPush(k));
    ASSERT_TRUE(queue.tryPop(out));
    EXPECT_EQ(out, k);
  }
  EXPECT_EQ(queue.dropped(), 10u);
}

TEST(SpscQueue, KeepsOrderAcrossManyWrapArounds) {
  SpscQueue<std::uint64_t> queue(3);
  std::uint64_t next_in = 0, next_out = 0, out = 0;
  for (int round = 0; round < 100; ++round) {
    while (queue.tryPush(next_in)) ++next_in;
    ASSERT_TRUE(queue.tryPop(out));
    EXPECT_EQ(out, next_out++);
    if (round % 3 == 0) {
      while (queue.tryPop(out)) EXPECT_EQ(out, next_out++);
    }
  }
  while (queue.tryPop(out)) EXPECT_EQ(out, next_out++);
  EXPECT_EQ(next_out, next_in);
}

TEST(SpscQueue, ZeroCapacityIsRejected) {
  EXPECT_THROW(SpscQueue<Command> queue(0), std::invalid_argument);
}

// One producer thread pushes 0..N−1, retrying when full; this thread must receive exactly
// 0..N−1 in order. A small capacity keeps the queue full often, exercising the drop path.
TEST(SpscQueueStress, ConsumerSeesEverySequenceNumberInOrder) {
  constexpr std::uint64_t kMessages = 1'000'000;
  SpscQueue<std::uint64_t> queue(64);
  std::thread producer([&queue] {
    for (std::uint64_t k = 0; k < kMessages; ++k) {
      while (!queue.tryPush(k)) std::this_thread::yield();
    }
  });
  std::uint64_t expected = 0, out_of_order = 0, first_bad = kMessages;
  while (expected < kMessages) {
    std::uint64_t value = 0;
    if (!queue.tryPop(value)) {
      std::this_thread::yield();  // the producer may share our core on a loaded machine
      continue;
    }
    if (value != expected && out_of_order++ == 0) first_bad = expected;
    expected = value + 1;
  }
  producer.join();
  EXPECT_EQ(out_of_order, 0u) << "first gap at " << first_bad;
  std::uint64_t extra = 0;
  EXPECT_FALSE(queue.tryPop(extra)) << "unexpected extra message " << extra;
  EXPECT_EQ(queue.sizeApprox(), 0u);
}

// The same with whole ~1 KB commands: every field of every message must arrive intact.
TEST(SpscQueueStress, CommandsArriveWhole) {
  constexpr std::uint64_t kMessages = 100'000;
  SpscQueue<Command> queue(16);
  std::thread producer([&queue] {
    for (std::uint64_t k = 0; k < kMessages; ++k) {
      const Command command = commandNumber(k);
      while (!queue.tryPush(command)) std::this_thread::yield();
    }
  });
  std::uint64_t received = 0, bad = 0;
  Command out;
  while (received < kMessages) {
    if (!queue.tryPop(out)) {
      std::this_thread::yield();
      continue;
    }
    const double expected = static_cast<double>(received);
    bool whole = out.seq == received && out.t == static_cast<std::int64_t>(received) &&
                 out.n == static_cast<int>(received % 128);
    for (double tau : out.tau) whole = whole && tau == expected;
    if (!whole) ++bad;
    ++received;
  }
  producer.join();
  EXPECT_EQ(bad, 0u);
}

// ---- TripleBuffer -------------------------------------------------------------------------------

TEST(TripleBuffer, DefaultInitialValueIsValueInitialised) {
  TripleBuffer<Snapshot> buffer;
  EXPECT_EQ(buffer.readBuffer().counter, 0u);
  EXPECT_EQ(buffer.readBuffer().values[0], 0.0);
  Snapshot out;
  fillSnapshot(out, 9);
  EXPECT_FALSE(buffer.read(out));
  EXPECT_EQ(out.counter, 0u);
  EXPECT_TRUE(consistent(out));
}

TEST(TripleBuffer, GivenInitialValueIsReadBeforeAnyPublish) {
  Snapshot initial;
  fillSnapshot(initial, 17);
  TripleBuffer<Snapshot> buffer(initial);
  EXPECT_FALSE(buffer.update());
  EXPECT_EQ(buffer.readBuffer().counter, 17u);
  Snapshot out;
  EXPECT_FALSE(buffer.read(out));
  EXPECT_EQ(out.counter, 17u);
  EXPECT_TRUE(consistent(out));
}

TEST(TripleBuffer, NewestPublishedValueWins) {
  TripleBuffer<Snapshot> buffer;
  Snapshot in;
  for (std::uint64_t k = 1; k <= 3; ++k) {
    fillSnapshot(in, k);
    buffer.write(in);
  }
  Snapshot out;
  EXPECT_TRUE(buffer.read(out));
  EXPECT_EQ(out.counter, 3u);
  EXPECT_TRUE(consistent(out));
  // the overwritten snapshots 1 and 2 are gone for good
  EXPECT_FALSE(buffer.read(out));
  EXPECT_EQ(out.counter, 3u);
}

TEST(TripleBuffer, ReadWithoutNewDataReturnsFalseAndKeepsTheOldValue) {
  TripleBuffer<Snapshot> buffer;
  Snapshot in;
  fillSnapshot(in, 5);
  buffer.write(in);
  Snapshot out;
  ASSERT_TRUE(buffer.read(out));
  for (int k = 0; k < 3; ++k) {
    fillSnapshot(out, 0);
    EXPECT_FALSE(buffer.read(out));
    EXPECT_EQ(out.counter, 5u);
    EXPECT_TRUE(consistent(out));
    EXPECT_FALSE(buffer.update());
    EXPECT_EQ(buffer.readBuffer().counter, 5u);
  }
  fillSnapshot(in, 6);
  buffer.write(in);
  EXPECT_TRUE(buffer.read(out));
  EXPECT_EQ(out.counter, 6u);
}

TEST(TripleBuffer, InPlaceWritesAreInvisibleUntilPublished) {
  TripleBuffer<Snapshot> buffer;
  fillSnapshot(buffer.writeBuffer(), 1);
  buffer.publish();
  ASSERT_TRUE(buffer.update());
  EXPECT_EQ(buffer.readBuffer().counter, 1u);

  fillSnapshot(buffer.writeBuffer(), 2);  // not published
  EXPECT_FALSE(buffer.update());
  EXPECT_EQ(buffer.readBuffer().counter, 1u);
  EXPECT_TRUE(consistent(buffer.readBuffer()));

  buffer.publish();
  EXPECT_TRUE(buffer.update());
  EXPECT_EQ(buffer.readBuffer().counter, 2u);
  EXPECT_NE(&buffer.readBuffer(), &buffer.writeBuffer());
}

TEST(TripleBuffer, TheThreeSlotsRotate) {
  TripleBuffer<Snapshot> buffer;
  Snapshot in, out;
  for (std::uint64_t k = 1; k <= 20; ++k) {
    fillSnapshot(in, k);
    buffer.write(in);
    if (k % 2 == 0) buffer.write(in);  // a second publish before the read
    ASSERT_TRUE(buffer.read(out));
    EXPECT_EQ(out.counter, k);
    EXPECT_NE(&buffer.readBuffer(), &buffer.writeBuffer());
  }
}

// A producer publishes counters 1..N, every field equal to the counter; this thread reads
// concurrently. Every read must be internally consistent (no torn snapshot), counters never go
// backwards, a fresh read is strictly newer and a stale one repeats the last.
TEST(TripleBufferStress, ReadsAreNeverTornAndNeverGoBackwards) {
  constexpr std::uint64_t kSnapshots = 200'000;
  TripleBuffer<Snapshot> buffer;
  std::thread producer([&buffer] {
    Snapshot snapshot;
    for (std::uint64_t k = 1; k <= kSnapshots; ++k) {
      if (k % 2 == 0) {
        fillSnapshot(buffer.writeBuffer(), k);  // in place
        buffer.publish();
      } else {
        fillSnapshot(snapshot, k);
        buffer.write(snapshot);  // by copy
      }
    }
  });
  std::uint64_t last = 0, torn = 0, backwards = 0, stale_fresh = 0, changed_stale = 0;
  std::uint64_t fresh_reads = 0, round = 0;
  Snapshot copy;
  while (last < kSnapshots) {
    // alternately by copy and in place (reading the slot while the producer fills another)
    const bool by_copy = round++ % 2 == 0;
    const bool fresh = by_copy ? buffer.read(copy) : buffer.update();
    const Snapshot& out = by_copy ? copy : buffer.readBuffer();
    if (!consistent(out)) ++torn;
    if (out.counter < last) ++backwards;
    if (fresh && out.counter == last) ++stale_fresh;
    if (!fresh && out.counter != last) ++changed_stale;
    if (fresh) ++fresh_reads;
    last = out.counter;
  }
  producer.join();
  EXPECT_EQ(torn, 0u);
  EXPECT_EQ(backwards, 0u);
  EXPECT_EQ(stale_fresh, 0u);
  EXPECT_EQ(changed_stale, 0u);
  EXPECT_GT(fresh_reads, 0u);
  EXPECT_EQ(last, kSnapshots);  // the last publish is never lost
  EXPECT_FALSE(buffer.update());
}

// ---- no heap traffic on the RT paths ------------------------------------------------------------

// Keeps the compiler from eliding the self-test's new/delete pair.
Command* volatile g_sink = nullptr;

TEST(ChannelAllocations, CounterSeesAllocationsInsideTheScopeOnly) {
  if (!test::kAllocationHooks) GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
  test::HeapCounts traffic;
  {
    test::HeapCountingScope scope;
    g_sink = new Command();
    delete g_sink;
    traffic = scope.stop();
    g_sink = new Command();  // after stop(): not counted
    delete g_sink;
  }
  EXPECT_EQ(traffic.allocations, 1);
  EXPECT_EQ(traffic.deallocations, 1);
}

TEST(ChannelAllocations, PushPopWriteReadAllocateNothing) {
  if (!test::kAllocationHooks) GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
  SpscQueue<Command> queue(8);
  TripleBuffer<Snapshot> buffer;
  Command in = commandNumber(1), out;
  Snapshot snapshot, read_back;
  std::uint64_t sum = 0;
  test::HeapCounts traffic;
  {
    test::HeapCountingScope scope;
    for (std::uint64_t k = 0; k < 1000; ++k) {
      in.seq = k;
      for (int i = 0; i < 10; ++i) sum += queue.tryPush(in) ? 1 : 0;  // fills, then drops
      sum += queue.sizeApprox() + queue.dropped() + queue.capacity();
      while (queue.tryPop(out)) sum += out.seq;
      sum += queue.tryPop(out) ? 1 : 0;  // empty

      fillSnapshot(snapshot, k);
      buffer.write(snapshot);
      sum += buffer.read(read_back) ? 1 : 0;
      sum += buffer.read(read_back) ? 1 : 0;  // nothing new
      buffer.writeBuffer().counter = k;
      buffer.publish();
      sum += buffer.update() ? buffer.readBuffer().counter : 0;
    }
    traffic = scope.stop();
  }
  EXPECT_EQ(traffic.allocations, 0);
  EXPECT_EQ(traffic.deallocations, 0);
  EXPECT_EQ(queue.dropped(), 2000u);
  EXPECT_GT(sum, 0u);
}

}  // namespace
}  // namespace hilsim::rt
