#include "server/stop_strings.h"

#include <gtest/gtest.h>

namespace llmserve {
namespace {

TEST(StopStrings, PassesTextThroughWithoutStops) {
  StopStrings stops({});
  EXPECT_EQ(stops.push("hello "), "hello ");
  EXPECT_EQ(stops.push("world"), "world");
  EXPECT_EQ(stops.flush(), "");
  EXPECT_FALSE(stops.stopped());
}

TEST(StopStrings, HoldsBackAPossibleStartUntilDecided) {
  StopStrings stops({"END"});
  EXPECT_EQ(stops.push("abc E"), "abc ");
  EXPECT_EQ(stops.push("N"), "");
  EXPECT_EQ(stops.push("X"), "ENX"); // not a stop after all
  EXPECT_FALSE(stops.stopped());
}

TEST(StopStrings, StopsBeforeAMatchSpanningPieces) {
  StopStrings stops({"END"});
  EXPECT_EQ(stops.push("one E"), "one ");
  EXPECT_EQ(stops.push("ND two"), "");
  EXPECT_TRUE(stops.stopped());
  EXPECT_EQ(stops.push("more"), "");
  EXPECT_EQ(stops.flush(), "");
}

TEST(StopStrings, EarliestOfSeveralWins) {
  StopStrings stops({"world", "lo w"});
  EXPECT_EQ(stops.push("hello world"), "hel");
  EXPECT_TRUE(stops.stopped());
}

TEST(StopStrings, HeldTailIsReleasedAtTheEnd) {
  StopStrings stops({"</answer>"});
  EXPECT_EQ(stops.push("42</ans"), "42");
  EXPECT_EQ(stops.flush(), "</ans");
}

TEST(StopStrings, EmptyStopStringsAreIgnored) {
  StopStrings stops({"", "x"});
  EXPECT_EQ(stops.push("abc"), "abc");
  EXPECT_EQ(stops.push("yxz"), "y");
  EXPECT_TRUE(stops.stopped());
}

TEST(StopStrings, StopAtTheVeryStartEmitsNothing) {
  StopStrings stops({"\n\n"});
  EXPECT_EQ(stops.push("\n"), "");
  EXPECT_EQ(stops.push("\nrest"), "");
  EXPECT_TRUE(stops.stopped());
}

} // namespace
} // namespace llmserve
