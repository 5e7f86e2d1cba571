#include "grammar/json_number_range.h"

#include "grammar/gbnf_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace llmserve::grammar {

namespace {

// A bound on the digits after the point: 0.`digits`, reached or not.
struct FractionBound {
  std::string digits;
  bool strict = false;
};

// The fraction parts (the digits after the point, at most some number) that
// satisfy some bounds: the empty one (no point at all) or not, and the
// non-empty ones as an expression ("" when there are none).
struct Fraction {
  bool empty_ok = false;
  std::string nonempty;
  bool alternatives = false; // `nonempty` is a|b, to parenthesize
};

std::string digit_class(int from, int to) {
  if (from == to)
    return std::string("\"") + static_cast<char>('0' + from) + "\"";
  return std::string("[") + static_cast<char>('0' + from) + "-" + static_cast<char>('0' + to) + "]";
}

std::string any_digits(size_t min, size_t max) {
  if (min == 1 && max == 1)
    return "[0-9]";
  if (min == 0 && max == 1)
    return "[0-9]?";
  if (min == max)
    return "[0-9]{" + std::to_string(min) + "}";
  return "[0-9]{" + std::to_string(min) + "," + std::to_string(max) + "}";
}

FractionBound rest_of(const FractionBound &bound) {
  return {bound.digits.empty() ? "" : bound.digits.substr(1), bound.strict};
}

// Fraction parts of at most `digits` digits between the bounds (each absent
// or a value in [0, 1)). Trailing zeros are allowed except that a fraction
// under a bound of zero is written without a point.
Fraction fraction(std::optional<FractionBound> min, const std::optional<FractionBound> &max, size_t digits) {
  if (min && min->digits.empty() && !min->strict) // at least 0: no bound
    min.reset();
  Fraction out;
  if (min && min->digits.empty() && !max && digits > 0) {
    // Above 0: ending in a non-zero digit (trailing zeros are never needed).
    out.nonempty = digits > 1 ? any_digits(0, digits - 1) + " [1-9]" : "[1-9]";
    return out;
  }
  out.empty_ok = !min && (!max || !max->digits.empty() || !max->strict);
  if (digits == 0 || (max && max->digits.empty()))
    return out;
  if (!min && !max) {
    out.nonempty = any_digits(1, digits);
    return out;
  }
  int low = min && !min->digits.empty() ? min->digits[0] - '0' : 0;
  int high = max ? max->digits[0] - '0' : 9;
  if (low > high)
    return out;
  std::vector<std::string> alternatives;
  // The first digit in [from, to], then digits - 1 more within the bounds.
  auto add = [&](int from, int to, std::optional<FractionBound> rest_min,
                 const std::optional<FractionBound> &rest_max) {
    if (from > to)
      return;
    if (rest_min && rest_min->digits.empty() && !rest_min->strict)
      rest_min.reset();
    std::string tail;
    if (!rest_min && !rest_max) {
      if (digits > 1)
        tail = any_digits(0, digits - 1);
    } else {
      Fraction rest = fraction(rest_min, rest_max, digits - 1);
      if (rest.nonempty.empty() && !rest.empty_ok)
        return;
      if (!rest.nonempty.empty())
        tail = rest.alternatives || rest.empty_ok ? "(" + rest.nonempty + ")" : rest.nonempty;
      if (!rest.nonempty.empty() && rest.empty_ok)
        tail += "?";
    }
    alternatives.push_back(digit_class(from, to) + (tail.empty() ? "" : " " + tail));
  };
  if (min && max && low == high) {
    add(low, low, rest_of(*min), rest_of(*max));
  } else {
    int from = low, to = high;
    if (min) {
      add(low, low, rest_of(*min), std::nullopt);
      from = low + 1;
    }
    if (max)
      to = high - 1;
    add(from, to, std::nullopt, std::nullopt);
    if (max)
      add(high, high, std::nullopt, rest_of(*max));
  }
  out.nonempty = gbnf_alternatives(alternatives);
  out.alternatives = alternatives.size() > 1;
  return out;
}

// Integers from `low` to `high`, both strings of the same length.
std::string same_length_range(const std::string &low, const std::string &high) {
  size_t common = 0;
  while (common < low.size() && low[common] == high[common])
    ++common;
  std::string prefix = common ? "\"" + low.substr(0, common) + "\"" : "";
  if (common == low.size())
    return prefix;
  size_t rest = low.size() - common - 1;
  int a = low[common] - '0', b = high[common] - '0';
  std::string body;
  if (rest == 0) {
    body = digit_class(a, b);
  } else {
    std::string low_rest = low.substr(common + 1), high_rest = high.substr(common + 1);
    bool low_zeros = low_rest == std::string(rest, '0');
    bool high_nines = high_rest == std::string(rest, '9');
    std::vector<std::string> alternatives;
    if (!low_zeros)
      alternatives.push_back(digit_class(a, a) + " " + same_length_range(low_rest, std::string(rest, '9')));
    int from = low_zeros ? a : a + 1, to = high_nines ? b : b - 1;
    if (from <= to)
      alternatives.push_back(digit_class(from, to) + " " + any_digits(rest, rest));
    if (!high_nines) {
      std::string tail = same_length_range(std::string(rest, '0'), high_rest);
      // "2" "0" is "20".
      bool literal = tail.front() == '"' && tail.find(' ') == std::string::npos;
      alternatives.push_back(literal ? "\"" + std::to_string(b) + tail.substr(1) : digit_class(b, b) + " " + tail);
    }
    body = gbnf_alternatives(alternatives);
    if (alternatives.size() > 1)
      body = "(" + body + ")";
  }
  return prefix.empty() ? body : prefix + " " + body;
}

// Integers from `from` to `to`, as alternatives by number of digits; the
// lengths every number of which is in range merge into one.
std::vector<std::string> integer_range(uint64_t from, uint64_t to) {
  std::vector<std::string> out;
  size_t full_from = 0, full_to = 0; // a run of complete lengths
  auto flush = [&]() {
    if (full_from)
      out.push_back("[1-9]" + (full_to > 1 ? " " + any_digits(full_from - 1, full_to - 1) : ""));
    full_from = 0;
  };
  uint64_t power = 1; // 10^(length - 1)
  for (size_t length = 1; length <= kMaxNumberDigits && from <= to; ++length, power *= 10) {
    uint64_t first = std::max(from, length == 1 ? uint64_t{0} : power), last = std::min(to, power * 10 - 1);
    if (first > last)
      continue;
    if (first == power && last == power * 10 - 1) {
      if (!full_from)
        full_from = length;
      full_to = length;
      continue;
    }
    flush();
    out.push_back(same_length_range(std::to_string(first), std::to_string(last)));
  }
  flush();
  return out;
}

uint64_t to_integer(const std::string &digits) { return std::strtoull(digits.c_str(), nullptr, 10); }

// An integer part followed by fraction parts, or nothing when no fraction fits.
void add_block(std::vector<std::string> &alternatives, const std::string &integer, const Fraction &f) {
  if (f.nonempty.empty()) {
    if (f.empty_ok)
      alternatives.push_back(integer);
    return;
  }
  std::string point = "\".\" " + (f.alternatives ? "(" + f.nonempty + ")" : f.nonempty);
  alternatives.push_back(integer + " " + (f.empty_ok ? "(" + point + ")?" : point));
}

// Non-negative numbers from `min` to `max` (absent: as large as the digits
// allow).
std::optional<std::string> magnitude_range(const NumberBound &min, const std::optional<NumberBound> &max,
                                           bool integers) {
  if (min.value.integer.size() > kMaxNumberDigits)
    return std::nullopt;
  // Without a maximum (or one past the digits) the top is the largest
  // integer part the digits allow, with any fraction.
  bool unbounded = !max || max->value.integer.size() > kMaxNumberDigits;
  std::string top = unbounded ? std::string(kMaxNumberDigits, '9') : max->value.integer;
  std::optional<FractionBound> top_fraction;
  if (!unbounded)
    top_fraction = FractionBound{max->value.fraction, max->exclusive};
  uint64_t low = to_integer(min.value.integer), high = to_integer(top);
  if (low > high)
    return std::nullopt;
  if (integers) {
    // From the least integer above the minimum to the greatest below the
    // maximum.
    bool below_top = !unbounded && max->exclusive && max->value.fraction.empty();
    if (below_top && high == 0)
      return std::nullopt;
    uint64_t first = low + (min.exclusive || !min.value.fraction.empty() ? 1 : 0);
    std::vector<std::string> range = integer_range(first, high - (below_top ? 1 : 0));
    if (range.empty())
      return std::nullopt;
    return gbnf_alternatives(range);
  }
  FractionBound bottom_fraction{min.value.fraction, min.exclusive};
  auto room = [](size_t integer_digits) { return kMaxNumberDigits - integer_digits; };
  std::vector<std::string> alternatives;
  if (low == high && !unbounded) {
    add_block(alternatives, "\"" + top + "\"", fraction(bottom_fraction, top_fraction, room(top.size())));
  } else {
    const std::string &bottom = min.value.integer;
    add_block(alternatives, "\"" + bottom + "\"", fraction(bottom_fraction, std::nullopt, room(bottom.size())));
    // The integer parts strictly between: at least the integer after the
    // lower bound's, so no fraction rounds down onto the bound; only just
    // below an exclusive integer maximum could a long fraction round up onto
    // it.
    uint64_t from = low + 1, to = unbounded ? high : high - 1;
    std::optional<uint64_t> below_top;
    if (max && top == max->value.integer && max->exclusive && max->value.fraction.empty() && from <= to)
      below_top = to--;
    if (from <= to) {
      std::vector<std::string> lengths = integer_range(from, to);
      std::string integer = lengths.size() > 1 ? "(" + gbnf_alternatives(lengths) + ")" : lengths[0];
      add_block(alternatives, integer, fraction(std::nullopt, std::nullopt, kMaxNumberDigits));
    }
    if (below_top) {
      std::string digits = std::to_string(*below_top);
      add_block(alternatives, "\"" + digits + "\"", fraction(std::nullopt, std::nullopt, room(digits.size())));
    }
    if (!unbounded)
      add_block(alternatives, "\"" + top + "\"", fraction(std::nullopt, top_fraction, room(top.size())));
  }
  if (alternatives.empty())
    return std::nullopt;
  return gbnf_alternatives(alternatives);
}

int compare(const Decimal &a, const Decimal &b) {
  if (a.negative != b.negative)
    return a.negative ? -1 : 1;
  int sign = a.negative ? -1 : 1;
  if (a.integer.size() != b.integer.size())
    return a.integer.size() < b.integer.size() ? -sign : sign;
  if (int c = a.integer.compare(b.integer))
    return c < 0 ? -sign : sign;
  if (int c = a.fraction.compare(b.fraction)) // no trailing zeros: lexicographic works
    return c < 0 ? -sign : sign;
  return 0;
}

Decimal negated(Decimal d) {
  if (d.integer != "0" || !d.fraction.empty())
    d.negative = !d.negative;
  return d;
}

} // namespace

Decimal decimal_of_unsigned(uint64_t value) {
  Decimal d;
  d.integer = std::to_string(value);
  return d;
}

Decimal decimal_of_integer(int64_t value) {
  Decimal d = decimal_of_unsigned(value < 0 ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value));
  d.negative = value < 0;
  return d;
}

std::optional<Decimal> decimal_of_double(double value) {
  if (!std::isfinite(value))
    return std::nullopt;
  if (value == 0)
    return Decimal{};
  char text[64];
  int precision = 1;
  for (; precision <= 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*e", precision - 1, value);
    if (std::strtod(text, nullptr) == value)
      break;
  }
  if (precision > static_cast<int>(kMaxNumberDigits))
    return std::nullopt;
  // text is [-]d[.ddd]e[+-]xx
  std::string s = text, digits;
  Decimal d;
  d.negative = s[0] == '-';
  size_t e = s.find('e');
  for (size_t i = d.negative ? 1 : 0; i < e; ++i)
    if (s[i] != '.')
      digits += s[i];
  long point = std::strtol(s.c_str() + e + 1, nullptr, 10) + 1; // digits before the point
  if (point >= static_cast<long>(digits.size())) {
    d.integer = digits + std::string(static_cast<size_t>(point) - digits.size(), '0');
  } else if (point <= 0) {
    d.fraction = std::string(static_cast<size_t>(-point), '0') + digits;
  } else {
    d.integer = digits.substr(0, static_cast<size_t>(point));
    d.fraction = digits.substr(static_cast<size_t>(point));
  }
  while (!d.fraction.empty() && d.fraction.back() == '0')
    d.fraction.pop_back();
  return d;
}

std::optional<std::string> number_range_gbnf(const std::optional<NumberBound> &min,
                                             const std::optional<NumberBound> &max, bool integers) {
  const Decimal zero;
  std::vector<std::string> alternatives;
  // Zero and above.
  if (!max || compare(max->value, zero) > 0 || (compare(max->value, zero) == 0 && !max->exclusive)) {
    NumberBound low = min && !min->value.negative ? *min : NumberBound{zero, false};
    if (auto range = magnitude_range(low, max, integers))
      alternatives.push_back(*range);
  }
  // Below zero, as "-" and a magnitude (never "-0": the magnitude is above 0).
  if (!min || min->value.negative) {
    NumberBound low = max && max->value.negative ? NumberBound{negated(max->value), max->exclusive}
                                                 : NumberBound{zero, true};
    std::optional<NumberBound> high;
    if (min)
      high = NumberBound{negated(min->value), min->exclusive};
    if (auto range = magnitude_range(low, high, integers))
      alternatives.push_back(range->find(" | ") == std::string::npos ? "\"-\" " + *range
                                                                      : "\"-\" (" + *range + ")");
  }
  if (alternatives.empty())
    return std::nullopt;
  return gbnf_alternatives(alternatives);
}

} // namespace llmserve::grammar
