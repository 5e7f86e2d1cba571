// enum and const, strings and numbers: the part of SchemaConverter that
// writes scalars (json_schema_converter.h).
#include "grammar/json_number_range.h"
#include "grammar/json_schema_converter.h"
#include "grammar/json_string_formats.h"
#include "grammar/regex_to_gbnf.h"

#include <algorithm>
#include <set>

namespace llmserve::grammar {

namespace {

size_t codepoints(const std::string &text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// Whether a value of `enum` or `const` satisfies the keywords beside it.
bool satisfies(const Json &value, const Json &schema) {
  if (schema.contains("type") && !SchemaConverter::has_any_type(value, SchemaConverter::types_of(schema)))
    return false;
  if (value.is_number()) {
    if ((schema.contains("minimum") && value < schema["minimum"]) ||
        (schema.contains("maximum") && value > schema["maximum"]) ||
        (schema.contains("exclusiveMinimum") && value <= schema["exclusiveMinimum"]) ||
        (schema.contains("exclusiveMaximum") && value >= schema["exclusiveMaximum"]))
      return false;
  }
  if (value.is_string()) {
    size_t length = codepoints(value.get<std::string>());
    if ((schema.contains("minLength") && length < schema["minLength"].get<uint64_t>()) ||
        (schema.contains("maxLength") && length > schema["maxLength"].get<uint64_t>()))
      return false;
  }
  return true;
}

std::optional<NumberBound> bound_of(const Json &schema, const char *keyword, bool exclusive,
                                    const std::string &where) {
  if (!schema.contains(keyword))
    return std::nullopt;
  const Json &value = schema[keyword];
  NumberBound bound;
  bound.exclusive = exclusive;
  if (value.is_number_unsigned()) {
    bound.value = decimal_of_unsigned(value.get<uint64_t>());
  } else if (value.is_number_integer()) {
    bound.value = decimal_of_integer(value.get<int64_t>());
  } else if (auto d = decimal_of_double(value.get<double>())) {
    bound.value = *d;
  } else {
    SchemaConverter::fail(SchemaConverter::pointer(where, keyword),
                          "a bound needs at most " + std::to_string(kMaxNumberDigits) + " significant digits");
  }
  return bound;
}

// The tighter of an inclusive and an exclusive bound.
std::optional<NumberBound> tighter(const Json &schema, const char *inclusive, const char *exclusive, bool lower,
                                   const std::string &where) {
  std::optional<NumberBound> a = bound_of(schema, inclusive, false, where);
  std::optional<NumberBound> b = bound_of(schema, exclusive, true, where);
  if (!a || !b)
    return a ? a : b;
  const Json &x = schema[inclusive], &y = schema[exclusive];
  // At an equal value the exclusive bound is the tighter one.
  return (lower ? y >= x : y <= x) ? b : a;
}

} // namespace

std::string SchemaConverter::values(const Json &schema, const std::string &where) {
  static const std::set<std::string> kAlongside = {"type",      "enum",      "const",           "minimum",
                                                   "maximum",   "exclusiveMinimum", "exclusiveMaximum",
                                                   "minLength", "maxLength"};
  Json candidates = schema.value("enum", Json::array());
  if (schema.contains("const")) {
    bool in_enum = !schema.contains("enum") || std::find(candidates.begin(), candidates.end(), schema["const"]) !=
                                                   candidates.end();
    candidates = in_enum ? Json::array({schema["const"]}) : Json::array();
  }
  // Other keywords are checked on no value: refused unless no value has the
  // type they apply to ("properties" beside an enum of strings).
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    const std::string &k = it.key();
    if (!constrains(k) || kAlongside.count(k))
      continue;
    const char *type = keyword_type(k);
    if (!type || std::any_of(candidates.begin(), candidates.end(), [&](const Json &v) { return has_type(v, type); }))
      fail(pointer(where, k), "'" + k + "' together with 'enum' or 'const' is not supported");
  }
  std::vector<std::string> literals;
  std::set<std::string> seen;
  size_t bytes = 0;
  for (const Json &value : candidates) {
    std::string literal = gbnf_literal(value.dump());
    bytes += literal.size() + 3;
    if (bytes > kMaxGrammarBytes)
      fail("", "the grammar is over " + std::to_string(kMaxGrammarBytes) + " bytes");
    if (satisfies(value, schema) && seen.insert(literal).second)
      literals.push_back(literal);
  }
  if (literals.empty())
    fail(where, "no value of 'enum' or 'const' satisfies the schema");
  primitive("space");
  return (literals.size() == 1 ? literals[0] : "(" + gbnf_alternatives(literals) + ")") + " space";
}

std::string SchemaConverter::string_body(const Json &schema, const std::string &where) {
  uint64_t min = count_keyword(schema, "minLength", where).value_or(0);
  std::optional<uint64_t> max = count_keyword(schema, "maxLength", where);
  if (max && min > *max)
    fail(where, "minLength is over maxLength");
  const StringFormat *format =
      schema.contains("format") ? find_string_format(schema["format"].get<std::string>()) : nullptr;
  if (!schema.contains("pattern") && !format) {
    if (min == 0 && !max)
      return primitive("string");
    primitive("space");
    return R"("\"" )" + primitive("char") + gbnf_repetition(min, max) + R"( "\"" space)";
  }
  // A pattern, or a format's: its open-ended repetitions are cut to fit
  // maxLength, but minLength must hold for every match.
  const char *keyword = format ? "format" : "pattern";
  std::string at = pointer(where, keyword);
  if (format && schema.contains("pattern"))
    fail(pointer(where, "pattern"), "'pattern' together with 'format' is not supported");
  RegexBody regex;
  try {
    regex = regex_rule_body(format ? format->pattern : schema["pattern"].get<std::string>(), RegexText::JsonString,
                            max ? static_cast<size_t>(*max) : RegexBody::kUnbounded);
  } catch (const GrammarError &e) {
    fail(at, format ? "values of format '" + std::string(format->name) + "' do not fit maxLength" : e.what());
  }
  if (min > regex.min_chars)
    fail(at, std::string("minLength together with '") + keyword +
                 "' is supported only when every match is at least that long");
  std::string content = format ? add_rule(std::string(format->name), regex.gbnf) : "(" + regex.gbnf + ")";
  primitive("space");
  return R"("\"" )" + content + R"( "\"" space)";
}

std::string SchemaConverter::number_body(const Json &schema, const std::string &where, bool integers) {
  if (schema.contains("multipleOf")) {
    if (schema["multipleOf"] != 1)
      fail(pointer(where, "multipleOf"), "multipleOf other than 1 is not supported");
    integers = true;
  }
  std::optional<NumberBound> min = tighter(schema, "minimum", "exclusiveMinimum", true, where);
  std::optional<NumberBound> max = tighter(schema, "maximum", "exclusiveMaximum", false, where);
  if (!min && !max)
    return primitive(integers ? "integer" : "number");
  std::optional<std::string> range = number_range_gbnf(min, max, integers);
  if (!range)
    fail(where, std::string("no ") + (integers ? "integer" : "number") + " of at most " +
                    std::to_string(kMaxNumberDigits) + " digits is within the bounds");
  primitive("space");
  return "(" + *range + ") space";
}

} // namespace llmserve::grammar
