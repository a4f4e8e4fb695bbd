// Watchdog: each policy applies after exactly N silent cycles; success rate and command age.

#include "rt/watchdog.h"

#include <gtest/gtest.h>

namespace hilsim::rt {
namespace {

constexpr Nanoseconds kPeriod = 1'000'000;

TEST(Watchdog, UnarmedUntilTheFirstCommand) {
  Watchdog w(WatchdogConfig{WatchdogPolicy::kFault, 3, 1.0});
  for (int k = 0; k < 10; ++k) EXPECT_EQ(w.onCycle(false, k * kPeriod), WatchdogAction::kZeroTorque);
  EXPECT_FALSE(w.armed());
  EXPECT_EQ(w.missedCycles(), 0u);
  EXPECT_EQ(w.commandAge(0), -1);
  EXPECT_EQ(w.onCycle(true, 10 * kPeriod), WatchdogAction::kApplyCommand);
  EXPECT_TRUE(w.armed());
}

void expectPolicyAfterLimit(WatchdogPolicy policy, WatchdogAction tripped_action) {
  constexpr int kLimit = 20;
  Watchdog w(WatchdogConfig{policy, kLimit, 2.0});
  EXPECT_EQ(w.onCycle(true, 0), WatchdogAction::kApplyCommand);
  for (int k = 1; k < kLimit; ++k) {
    EXPECT_EQ(w.onCycle(false, k * kPeriod), WatchdogAction::kHoldLast) << "silent cycle " << k;
    EXPECT_FALSE(w.tripped());
  }
  EXPECT_EQ(w.onCycle(false, kLimit * kPeriod), tripped_action) << "silent cycle " << kLimit;
  EXPECT_TRUE(w.tripped());
  EXPECT_EQ(w.trips(), 1u);
  EXPECT_EQ(w.consecutiveMissed(), kLimit);
  EXPECT_EQ(w.commandAge(kLimit * kPeriod), kLimit * kPeriod);
  // staying silent keeps the action and does not count a second trip
  EXPECT_EQ(w.onCycle(false, (kLimit + 1) * kPeriod), tripped_action);
  EXPECT_EQ(w.trips(), 1u);
  // a fresh command clears it
  EXPECT_EQ(w.onCycle(true, (kLimit + 2) * kPeriod), WatchdogAction::kApplyCommand);
  EXPECT_FALSE(w.tripped());
  EXPECT_EQ(w.consecutiveMissed(), 0);
  EXPECT_EQ(w.missedCycles(), static_cast<std::uint64_t>(kLimit + 1));
}

TEST(Watchdog, HoldLast) { expectPolicyAfterLimit(WatchdogPolicy::kHoldLast, WatchdogAction::kHoldLast); }
TEST(Watchdog, ZeroTorque) { expectPolicyAfterLimit(WatchdogPolicy::kZeroTorque, WatchdogAction::kZeroTorque); }
TEST(Watchdog, Damping) { expectPolicyAfterLimit(WatchdogPolicy::kDamping, WatchdogAction::kDamping); }
TEST(Watchdog, FaultAfterTwentyAsFrankaFci) {
  expectPolicyAfterLimit(WatchdogPolicy::kFault, WatchdogAction::kFault);
  EXPECT_EQ(WatchdogConfig{}.missed_cycles_limit, 20);
}

TEST(Watchdog, SilentSpellsShorterThanTheLimitNeverTrip) {
  Watchdog w(WatchdogConfig{WatchdogPolicy::kFault, 5, 1.0});
  for (int k = 0; k < 1000; ++k) {
    const bool fresh = k % 5 == 0;  // 4 silent cycles between commands
    EXPECT_NE(w.onCycle(fresh, k * kPeriod), WatchdogAction::kFault);
  }
  EXPECT_EQ(w.trips(), 0u);
}

TEST(Watchdog, SuccessRateOverTheLastHundredCycles) {
  Watchdog w(WatchdogConfig{WatchdogPolicy::kHoldLast, 1000, 1.0});
  EXPECT_DOUBLE_EQ(w.successRate(), 1.0);
  for (int k = 0; k < 100; ++k) w.onCycle(k % 4 != 3, k * kPeriod);  // 75 % fresh
  EXPECT_DOUBLE_EQ(w.successRate(), 0.75);
  for (int k = 100; k < 150; ++k) w.onCycle(true, k * kPeriod);  // last 100: 50 fresh + 37/50
  EXPECT_DOUBLE_EQ(w.successRate(), (50.0 + 37.0) / 100.0);
  for (int k = 150; k < 250; ++k) w.onCycle(false, k * kPeriod);
  EXPECT_DOUBLE_EQ(w.successRate(), 0.0);
}

TEST(Watchdog, DisarmForgetsTheSpell) {
  Watchdog w(WatchdogConfig{WatchdogPolicy::kZeroTorque, 2, 1.0});
  w.onCycle(true, 0);
  w.onCycle(false, kPeriod);
  w.onCycle(false, 2 * kPeriod);
  EXPECT_TRUE(w.tripped());
  w.disarm();
  EXPECT_FALSE(w.armed());
  EXPECT_FALSE(w.tripped());
  EXPECT_EQ(w.onCycle(false, 3 * kPeriod), WatchdogAction::kZeroTorque);  // unarmed
  EXPECT_EQ(w.trips(), 1u) << "trips are cumulative";
}

TEST(WatchdogPolicy, NamesRoundTrip) {
  for (WatchdogPolicy p : {WatchdogPolicy::kHoldLast, WatchdogPolicy::kZeroTorque,
                           WatchdogPolicy::kDamping, WatchdogPolicy::kFault}) {
    EXPECT_EQ(parseWatchdogPolicy(watchdogPolicyName(p)), p);
  }
  EXPECT_FALSE(parseWatchdogPolicy("ignore").has_value());
}

}  // namespace
}  // namespace hilsim::rt
