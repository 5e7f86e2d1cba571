// JSON numbers between bounds as GBNF, digit by digit, as llama.cpp does for
// integer bounds, extended to decimal fractions and fractional bounds. The
// numbers have at most kMaxNumberDigits digits before the point and as many
// after it; next to a bound, at most kMaxNumberDigits digits in all: enough
// for an IEEE double to tell any two such decimals (and the bound) apart, so
// a value the grammar puts inside the bounds stays inside after a parser
// rounds it.
#ifndef LLMSERVE_GRAMMAR_JSON_NUMBER_RANGE_H
#define LLMSERVE_GRAMMAR_JSON_NUMBER_RANGE_H

#include <cstdint>
#include <optional>
#include <string>

namespace llmserve::grammar {

// See above; json_schema.cpp's unbounded numbers keep to it too.
constexpr size_t kMaxNumberDigits = 15;

// An exact decimal value: `integer` without leading zeros ("0" for zero),
// `fraction` without trailing zeros; zero is never negative.
struct Decimal {
  bool negative = false;
  std::string integer = "0";
  std::string fraction;
};

Decimal decimal_of_integer(int64_t value);
Decimal decimal_of_unsigned(uint64_t value);

// The shortest decimal that reads back as `value`, or nullopt when that needs
// more than kMaxNumberDigits significant digits (or `value` is not finite).
std::optional<Decimal> decimal_of_double(double value);

struct NumberBound {
  Decimal value;
  bool exclusive = false;
};

// A GBNF expression (alternatives, to parenthesize in a sequence) for the JSON
// numbers within the bounds written without exponent and with the digits
// above; only integers when `integers`. nullopt when no such
// number is within the bounds.
std::optional<std::string> number_range_gbnf(const std::optional<NumberBound> &min,
                                             const std::optional<NumberBound> &max, bool integers);

} // namespace llmserve::grammar

#endif
