#include "bundle/expression.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace llmserve {
namespace {

using ::testing::HasSubstr;

int64_t eval(const char *text, Symbols s = {}) { return Expression::parse(text).evaluate(s); }

std::string parse_error(const std::string &text) {
  try {
    Expression::parse(text);
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  ADD_FAILURE() << "'" << text << "' parsed";
  return "";
}

std::string eval_error(const char *text, Symbols s) {
  try {
    eval(text, s);
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  ADD_FAILURE() << "'" << text << "' evaluated";
  return "";
}

TEST(Expression, EvaluatesTheGrammar) {
  const Symbols s{7, 3, 5, 11};
  EXPECT_EQ(eval("42"), 42);
  EXPECT_EQ(eval("T", s), 7);
  EXPECT_EQ(eval("S+1", s), 4);
  EXPECT_EQ(eval("MB", s), 5);
  EXPECT_EQ(eval("NB*16", s), 176);
  EXPECT_EQ(eval("T-S-1", s), 3); // left-associative
  EXPECT_EQ(eval("1+2*3", s), 7); // * binds tighter
  EXPECT_EQ(eval("(1+2)*3", s), 9);
  EXPECT_EQ(eval("2*T*S", s), 42);
  EXPECT_EQ(eval(" ceildiv( T , 2 ) + 1 ", s), 5);
  EXPECT_EQ(eval("ceildiv(T*S,ceildiv(8,3))", s), 7);
  EXPECT_EQ(eval("S-T", s), -4); // negative values are the caller's to judge
}

TEST(Expression, CeilDivRoundsUp) {
  for (int64_t n = -9; n <= 9; ++n)
    for (int64_t d = 1; d <= 4; ++d) {
      Symbols s{n, d, 0, 0};
      const double exact = static_cast<double>(n) / static_cast<double>(d);
      EXPECT_EQ(eval("ceildiv(T,S)", s), static_cast<int64_t>(std::ceil(exact)))
          << n << "/" << d;
    }
}

TEST(Expression, MinAndMax) {
  const Symbols s{4, 3, 5, 11};
  EXPECT_EQ(eval("min(T,S)", s), 3);
  EXPECT_EQ(eval("max(T,S)", s), 4);
  EXPECT_EQ(eval(" max( S - T , 0 ) ", s), 0);
  EXPECT_EQ(eval("2*min(NB,max(T,MB))+1", s), 11);
  // The selector a compiler writes for "the step has more than 64 rows".
  for (int64_t t = 1; t <= 200; ++t) {
    const Symbols rows{t, 1, 0, 0};
    EXPECT_EQ(eval("min(max(T-64,0),1)", rows), t > 64 ? 1 : 0) << t;
    EXPECT_EQ(eval("1-min(max(T-64,0),1)", rows), t > 64 ? 0 : 1) << t;
  }
  EXPECT_THAT(parse_error("min(T)"), HasSubstr("at position 5: expected ','"));
  EXPECT_THAT(parse_error("max T"), HasSubstr("expected '('"));
  EXPECT_THAT(parse_error("mean(T,S)"), HasSubstr("unknown symbol 'mean'"));
}

TEST(Expression, ConstantsAndSymbolUse) {
  const Expression c = Expression::constant(-3);
  EXPECT_EQ(c.evaluate({}), -3);
  EXPECT_EQ(c.text(), "-3");
  EXPECT_TRUE(c.is_constant());
  EXPECT_TRUE(Expression::parse("ceildiv(16,4)").is_constant());
  const Expression e = Expression::parse("NB * 16 + S");
  EXPECT_FALSE(e.is_constant());
  EXPECT_TRUE(e.uses("NB"));
  EXPECT_TRUE(e.uses("S"));
  EXPECT_FALSE(e.uses("T"));
  EXPECT_FALSE(e.uses("MB"));
  EXPECT_EQ(e.text(), "NB*16+S");
}

TEST(Expression, SetsSymbolsByName) {
  Symbols s;
  s.set("T", 1);
  s.set("S", 2);
  s.set("MB", 3);
  s.set("NB", 4);
  s.set("P", 5);
  s.set("MW", 6);
  EXPECT_EQ(eval("T*100000+S*10000+MB*1000+NB*100+P*10+MW", s), 123456);
  EXPECT_TRUE(Expression::parse("P+1").uses("P"));
  EXPECT_TRUE(Expression::parse("ceildiv(MW,4)").uses("MW"));
  EXPECT_FALSE(Expression::parse("MW+1").uses("P"));
  EXPECT_FALSE(Expression::parse("MW+1").is_constant());
  EXPECT_THROW(s.set("X", 1), std::invalid_argument);
}

TEST(Expression, ParseErrorsNameTextAndPosition) {
  EXPECT_THAT(parse_error(""), HasSubstr("bad expression '' at position 0"));
  EXPECT_THAT(parse_error("T+"), HasSubstr("'T+' at position 2: expected a number"));
  EXPECT_THAT(parse_error("T*X"), HasSubstr("at position 2: unknown symbol 'X'"));
  EXPECT_THAT(parse_error("t"), HasSubstr("unknown symbol 't'"));
  EXPECT_THAT(parse_error("ceildiv(T)"), HasSubstr("at position 9: expected ','"));
  EXPECT_THAT(parse_error("ceildiv T"), HasSubstr("expected '('"));
  EXPECT_THAT(parse_error("(T+1"), HasSubstr("at position 4: expected ')'"));
  EXPECT_THAT(parse_error("T 1"), HasSubstr("at position 2: unexpected '1'"));
  EXPECT_THAT(parse_error("T/2"), HasSubstr("at position 1: unexpected '/'"));
  EXPECT_THAT(parse_error("-1"), HasSubstr("at position 0"));
  EXPECT_THAT(parse_error("99999999999999999999"), HasSubstr("does not fit in int64"));
  EXPECT_THAT(parse_error(std::string(1000, '(') + "1" + std::string(1000, ')')),
              HasSubstr("nested too deeply"));
  std::string long_sum = "1";
  for (int i = 0; i < 40; ++i)
    long_sum = "1+(" + long_sum + ")";
  EXPECT_THAT(parse_error(long_sum), HasSubstr("nested too deeply"));
}

TEST(Expression, EvaluationErrorsNameExpressionAndSymbols) {
  EXPECT_THAT(eval_error("ceildiv(T,S)", {4, 0, 0, 0}),
              HasSubstr("expression 'ceildiv(T,S)' divides by 0 with T=4 S=0 MB=0 NB=0 P=0"));
  EXPECT_THAT(eval_error("ceildiv(T,S-2)", {4, 1, 0, 0}), HasSubstr("divides by -1"));
  const Symbols big{INT64_MAX / 2 + 1, 0, 0, 0};
  EXPECT_THAT(eval_error("T*2", big), HasSubstr("'T*2' overflows int64"));
  EXPECT_THAT(eval_error("T+T", big), HasSubstr("overflows"));
  EXPECT_THAT(eval_error("S-T-T-T", big), HasSubstr("overflows"));
}

} // namespace
} // namespace llmserve
