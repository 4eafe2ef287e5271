#include "redis/quorum.hpp"

#include <gtest/gtest.h>

using namespace bufferlock;
using namespace std::chrono_literals;

TEST(Quorum, MajorityIsHalfPlusOneRoundedDown) {
  EXPECT_EQ(quorum_majority(1), 1U);
  EXPECT_EQ(quorum_majority(2), 2U);
  EXPECT_EQ(quorum_majority(3), 2U);
  EXPECT_EQ(quorum_majority(4), 3U);
  EXPECT_EQ(quorum_majority(5), 3U);
  EXPECT_EQ(quorum_majority(6), 4U);
  EXPECT_EQ(quorum_majority(7), 4U);
}

TEST(Quorum, ValidityIsTtlLessElapsedLessDrift) {
  // drift = 1 % of the TTL + 2 ms
  EXPECT_EQ(quorum_validity(Nanos(10s), Nanos(0)), Nanos(10s - 100ms - 2ms));
  EXPECT_EQ(quorum_validity(Nanos(10s), Nanos(5ms)), Nanos(10s - 5ms - 100ms - 2ms));
  EXPECT_EQ(quorum_validity(Nanos(100ms), Nanos(3ms)), Nanos(100ms - 3ms - 1ms - 2ms));
  // A short TTL is used up by the drift allowance alone: never valid.
  EXPECT_LE(quorum_validity(Nanos(2ms), Nanos(0)).count(), 0);
  // An attempt that took longer than the TTL left nothing.
  EXPECT_LT(quorum_validity(Nanos(1s), Nanos(2s)).count(), 0);
  // The boundary: exactly used up is not valid (validity must stay > 0).
  EXPECT_EQ(quorum_validity(Nanos(1s), Nanos(1s - 10ms - 2ms)), Nanos(0));
}

TEST(Quorum, HeldOnAMajorityWithValidityLeft) {
  EXPECT_EQ(quorum_decide(3, 3, 0, 1ms), QuorumDecision::held);
  EXPECT_EQ(quorum_decide(3, 2, 1, 1ms), QuorumDecision::held); // one server down
  EXPECT_EQ(quorum_decide(5, 3, 2, 1ms), QuorumDecision::held);
  EXPECT_EQ(quorum_decide(1, 1, 0, 1ms), QuorumDecision::held);
  EXPECT_EQ(quorum_decide(3, 2, 0), QuorumDecision::held); // no validity: renewal, release
}

TEST(Quorum, AMajorityTooLateIsNotHeld) {
  EXPECT_EQ(quorum_decide(3, 3, 0, Nanos(0)), QuorumDecision::busy);
  EXPECT_EQ(quorum_decide(3, 3, 0, -1ms), QuorumDecision::busy);
  // ... and an error if the answers could not have made a majority anyway
  EXPECT_EQ(quorum_decide(5, 3, 3, Nanos(0)), QuorumDecision::error);
}

TEST(Quorum, BusyWhenEnoughAnsweredButNoMajorityActed) {
  EXPECT_EQ(quorum_decide(3, 1, 0, 1s), QuorumDecision::busy); // split: 1 ours, 2 another's
  EXPECT_EQ(quorum_decide(3, 0, 0, 1s), QuorumDecision::busy);
  EXPECT_EQ(quorum_decide(3, 1, 1, 1s), QuorumDecision::busy); // 2 answered: a majority could have
  EXPECT_EQ(quorum_decide(5, 2, 2, 1s), QuorumDecision::busy);
  EXPECT_EQ(quorum_decide(4, 2, 1, 1s), QuorumDecision::busy); // even N: half is not a majority
}

TEST(Quorum, ErrorWhenTooFewAnswered) {
  EXPECT_EQ(quorum_decide(3, 0, 2, 1s), QuorumDecision::error);
  EXPECT_EQ(quorum_decide(3, 1, 2, 1s), QuorumDecision::error);
  EXPECT_EQ(quorum_decide(3, 0, 3, 1s), QuorumDecision::error);
  EXPECT_EQ(quorum_decide(5, 2, 3, 1s), QuorumDecision::error);
  EXPECT_EQ(quorum_decide(4, 0, 2, 1s), QuorumDecision::error);
  EXPECT_EQ(quorum_decide(1, 0, 1, 1s), QuorumDecision::error);
  EXPECT_EQ(quorum_decide(1, 0, 0, 1s), QuorumDecision::busy);
}

TEST(Quorum, PttlIsWhatTheMajorityHolds) {
  EXPECT_EQ(quorum_pttl({500, 300, 100}, 3), 300);           // the 2nd longest of 3
  EXPECT_EQ(quorum_pttl({100, 500, 300, 200, 400}, 5), 300); // the 3rd longest of 5
  EXPECT_EQ(quorum_pttl({500, -2, 100}, 3), 100);
  EXPECT_EQ(quorum_pttl({500, -2, -2}, 3), -2); // one holder is no majority
  EXPECT_EQ(quorum_pttl({500, 400}, 3), 400);   // one did not answer
  EXPECT_EQ(quorum_pttl({500}, 3), -2);
  EXPECT_EQ(quorum_pttl({-1, -1, 100}, 3), -1); // no expiry on a majority
  EXPECT_EQ(quorum_pttl({-1, 200, 100}, 3), 200);
  EXPECT_EQ(quorum_pttl({}, 3), -2);
}
