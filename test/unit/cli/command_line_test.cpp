#include "cli/command_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace llmserve::cli {
namespace {

TEST(ToInteger, ReadsWholeDecimalIntegers) {
  EXPECT_EQ(to_integer("42"), 42);
  EXPECT_EQ(to_integer("-7"), -7);
  EXPECT_EQ(to_integer("+5"), 5);
  EXPECT_EQ(to_integer("010"), 10) << "decimal, not octal";
  EXPECT_EQ(to_integer("9223372036854775807"), INT64_MAX);
  for (const char *bad : {"", "x", "0x10", "1e3", "1.5", "12 ", " 12", "+-1", "++1", "+",
                          "9223372036854775808"})
    EXPECT_EQ(to_integer(bad), std::nullopt) << bad;
}

TEST(ToNumber, ReadsDecimalAndScientificNumbersAndInfinity) {
  EXPECT_EQ(to_number("0.25"), 0.25);
  EXPECT_EQ(to_number("+2"), 2.0);
  EXPECT_EQ(to_number("-1.5e3"), -1500.0);
  EXPECT_EQ(to_number("010"), 10.0);
  EXPECT_EQ(to_number("inf"), INFINITY);
  EXPECT_EQ(to_number("-infinity"), -INFINITY);
  for (const char *bad : {"", "warm", "nan", "0x1p3", "1e400", "1.5x", "+-1", "."})
    EXPECT_EQ(to_number(bad), std::nullopt) << bad;
}

// Parses `arguments` after the program name; the exit status, if any.
std::optional<int> parse_args(CLI::App &app, std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), "prog");
  std::vector<char *> argv;
  for (std::string &a : arguments)
    argv.push_back(a.data());
  return parse(app, static_cast<int>(argv.size()), argv.data());
}

TEST(IntegerIn, StoresTheDecimalValueItChecked) {
  CLI::App app("test", "prog");
  int64_t n = 0;
  integer_in(app.add_option("--n", n), 0, 100);
  EXPECT_EQ(parse_args(app, {"--n", "010"}), std::nullopt);
  EXPECT_EQ(n, 10) << "CLI11 alone would read octal 8";
}

TEST(IntegerIn, RefusesWhatIsNotAnIntegerInRange) {
  CLI::App app("test", "prog");
  int64_t n = 0;
  integer_in(app.add_option("--n", n), 0, 100);
  testing::internal::CaptureStderr();
  EXPECT_EQ(parse_args(app, {"--n", "0x10"}), 2);
  EXPECT_EQ(parse_args(app, {"--n", "101"}), 2);
  const std::string errors = testing::internal::GetCapturedStderr();
  EXPECT_THAT(errors, testing::HasSubstr("--n '0x10': not an integer"));
  EXPECT_THAT(errors, testing::HasSubstr("--n '101': must be in [0, 100]"));
}

TEST(Positive, RefusesZeroNegativesAndNonNumbers) {
  CLI::App app("test", "prog");
  double x = 0;
  positive(app.add_option("--x", x), 10);
  EXPECT_EQ(parse_args(app, {"--x", "2.5"}), std::nullopt);
  EXPECT_EQ(x, 2.5);
  testing::internal::CaptureStderr();
  EXPECT_EQ(parse_args(app, {"--x", "0"}), 2);
  EXPECT_EQ(parse_args(app, {"--x", "nan"}), 2);
  const std::string errors = testing::internal::GetCapturedStderr();
  EXPECT_THAT(errors, testing::HasSubstr("--x '0': must be in (0, 10]"));
  EXPECT_THAT(errors, testing::HasSubstr("--x 'nan': not a number"));
}

} // namespace
} // namespace llmserve::cli
