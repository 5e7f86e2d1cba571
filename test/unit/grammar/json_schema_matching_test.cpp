// json_schema_to_gbnf's grammars through the real engine: documents valid
// against the schema are accepted, invalid ones refused, keyword by keyword;
// and random walks over number bounds checked against IEEE doubles, as a
// JSON parser reads them.
#include "grammar/json_number_range.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar_test_util.h"
#include "random_walk.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace llmserve::grammar {
namespace {

using Json = nlohmann::ordered_json;

// Matchers of one schema's grammar over single bytes.
class Schema {
public:
  explicit Schema(const char *schema)
      : grammar_(testing::compile_text(json_schema_to_gbnf(Json::parse(schema)))) {}
  bool accepts(const std::string &document) const {
    Matcher m(grammar_);
    return m.accept_bytes(document) && m.can_end();
  }
  const std::shared_ptr<const CompiledGrammar> &grammar() const { return grammar_; }

private:
  std::shared_ptr<const CompiledGrammar> grammar_;
};

void expect_accepts(const Schema &schema, const std::vector<std::string> &valid,
                    const std::vector<std::string> &invalid) {
  for (const std::string &document : valid)
    EXPECT_TRUE(schema.accepts(document)) << document;
  for (const std::string &document : invalid)
    EXPECT_FALSE(schema.accepts(document)) << document;
}

TEST(JsonSchemaMatching, Strings) {
  expect_accepts(Schema(R"({"type": "string"})"),
                 {R"("")", R"("a b")", R"("\"\\\/\b\f\n\r\t")", R"("\u00e9\uFFFF")", "\"\u00e9\U0001F600\"", "\"x\" "},
                 {R"(")", R"("a\")", R"("\x")", R"("\u12")", "\"\n\"", "\"\x01\"", R"("\uD83D\uDE00")", "'a'", "\"a\"x"});
  // Lengths count code points, an escape as the one it stands for.
  expect_accepts(Schema(R"({"type": "string", "minLength": 2, "maxLength": 3})"),
                 {R"("ab")", R"("abc")", "\"\u00e9\U0001F600\"", R"("\n\u0041")"},
                 {R"("a")", R"("abcd")", "\"\U0001F600\""});
}

TEST(JsonSchemaMatching, IntegersAndNumbers) {
  expect_accepts(Schema(R"({"type": "integer"})"), {"0", "-0", "7", "-123", "123456789012345"},
                 {"01", "1.0", "1e3", "+1", "-", "1234567890123456", "--1"});
  expect_accepts(Schema(R"({"type": "number"})"), {"0", "-0.5", "1e9", "2.5E-3", "123.456"},
                 {".5", "5.", "1e", "0x10", "NaN", "Infinity", "1e999"});
  expect_accepts(Schema(R"({"type": "integer", "minimum": -20, "exclusiveMaximum": 300})"),
                 {"-20", "-9", "0", "9", "10", "99", "100", "299"}, {"-21", "300", "301", "1000", "-100"});
  Schema unit(R"({"type": "number", "exclusiveMinimum": 0, "maximum": 1})");
  expect_accepts(unit, {"0.5", "1", "0.000001", "0.99999999999999"}, {"0", "0.0", "-0.5", "1.01", "2", "1e-3"});
  EXPECT_FALSE(unit.accepts("1.0")); // valid, but at a bound the grammar writes no zero fraction
  expect_accepts(Schema(R"({"type": "number", "minimum": -1.5, "maximum": 2.25})"),
                 {"-1.5", "-1.25", "-1", "0", "2", "2.25", "2.2", "2.249"},
                 {"-1.51", "-2", "2.26", "2.3", "3"});
  // An integral bound of a number keeps fractions: minimum 0.
  expect_accepts(Schema(R"({"type": "number", "minimum": 0})"), {"0", "0.1", "7.25", "123456789012345.5"},
                 {"-0.1", "-1", "-0"});
}

TEST(JsonSchemaMatching, Objects) {
  Schema person(R"({"type": "object", "properties": {
                      "name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array"}},
                    "required": ["age"]})");
  expect_accepts(person,
                 {R"({"age": 1})", R"({"name": "a", "age": 1})", R"({"name": "a", "age": 1, "tags": []})",
                  R"({"age": 1, "tags": [1, "x"]})", "{\n  \"age\" : 1\n}"},
                 {R"({})", R"({"name": "a"})", R"({"age": 1, "name": "a"})", R"({"age": 1,})",
                  R"({"age": 1, "other": 2})", R"({"age": 1, "age": 2})", R"({"age": "1"})"});
  Schema open(R"({"type": "object", "properties": {"id": {"type": "integer"}},
                  "additionalProperties": {"type": "boolean"}})");
  expect_accepts(open, {R"({})", R"({"id": 1})", R"({"x": true})", R"({"id": 1, "i": false, "idx": true, "": true})"},
                 {R"({"id": true})", R"({"x": 1})", R"({"id": 1, "id": true})", R"({"\u0069d": true})"});
  expect_accepts(Schema(R"({"type": "object"})"), {R"({})", R"({"a": [1, {"b": null}], "\n": "\u00e9"})"},
                 {"[]", R"({"a"})", R"({a: 1})"});
  // minProperties takes the first optional property; maxProperties leaves out the last.
  expect_accepts(Schema(R"({"properties": {"a": {}, "b": {}, "c": {}}, "minProperties": 1, "maxProperties": 2})"),
                 {R"({"a": 1})", R"({"a": 1, "b": 2})"}, {R"({})", R"({"b": 2})", R"({"a": 1, "c": 3})"});
}

TEST(JsonSchemaMatching, Arrays) {
  expect_accepts(Schema(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})"),
                 {"[1]", "[1, 2, 3]", "[ 1 ,2]"}, {"[]", "[1, 2, 3, 4]", "[1,]", R"(["1"])"});
  expect_accepts(Schema(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})"),
                 {"[]", R"(["a"])", R"(["a", 1])"}, {"[1]", R"(["a", 1, 2])", R"(["a", "b"])"});
}

TEST(JsonSchemaMatching, ValuesAndAlternatives) {
  expect_accepts(Schema(R"({"enum": ["a", 1, null, [true]]})"), {R"("a")", "1", "null", "[true]"},
                 {R"("b")", "1.0", "[ true ]", "true"});
  // Keywords of other types than the values' constrain nothing.
  expect_accepts(Schema(R"({"enum": ["a", 2], "properties": {"x": {}}, "minItems": 3, "maxLength": 1})"),
                 {R"("a")", "2"}, {R"("b")"});
  expect_accepts(Schema(R"({"type": ["string", "null"], "maxLength": 1})"), {"null", R"("")", R"("x")"},
                 {R"("xy")", "0"});
  Schema shape(R"({"oneOf": [
      {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}, "required": ["kind", "r"]},
      {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}}, "required": ["kind", "side"]}]})");
  expect_accepts(shape, {R"({"kind": "circle", "r": 1})", R"({"kind": "square", "side": 2})"},
                 {R"({"kind": "circle", "side": 1})", R"({"kind": "oval", "r": 1})"});
  // Keywords beside anyOf apply to each alternative.
  expect_accepts(Schema(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                            "anyOf": [{"required": ["a"]}, {"required": ["b"]}]})"),
                 {R"({"a": 1})", R"({"b": 1})", R"({"a": 1, "b": 2})"}, {R"({})", R"({"a": "x"})"});
  // allOf merges: both objects' properties, the tighter bounds.
  expect_accepts(Schema(R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}, "required": ["a"]},
                                      {"properties": {"a": {"maximum": 5}, "b": {"type": "string"}}}]})"),
                 {R"({"a": 0})", R"({"a": 5, "b": "x"})"}, {R"({"a": 6})", R"({"a": -1})", R"({"b": "x"})"});
  Schema tree(R"({"$defs": {"n": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "required": ["v"]}},
                  "$ref": "#/$defs/n"})");
  expect_accepts(tree, {R"({"v": 1})", R"({"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}, {"v": 4}]})"},
                 {R"({"v": 1, "kids": [{}]})", R"({"kids": []})"});
}

TEST(JsonSchemaMatching, Formats) {
  auto format = [](const char *name) {
    return Schema((std::string(R"({"type": "string", "format": ")") + name + "\"}").c_str());
  };
  expect_accepts(format("date"), {R"("2024-02-29")", R"("2000-02-29")", R"("0001-01-31")", R"("2023-04-30")"},
                 {R"("2023-02-29")", R"("1900-02-29")", R"("0000-01-01")", R"("2023-04-31")", R"("2023-13-01")", R"("23-01-01")"});
  expect_accepts(format("time"), {R"("23:59:59Z")", R"("00:00:00.123+05:30")", R"("12:00:00-08:00")"},
                 {R"("24:00:00Z")", R"("12:60:00Z")", R"("12:00:00")", R"("12:00Z")"});
  expect_accepts(format("date-time"), {R"("2024-01-01T00:00:00Z")"}, {R"("2024-01-01 00:00:00Z")", R"("2024-01-01")"});
  expect_accepts(format("uuid"), {R"("123e4567-e89b-12d3-a456-426614174000")"}, {R"("123e4567e89b12d3a456426614174000")"});
  expect_accepts(format("email"), {R"("a.b+c@example.co.uk")"}, {R"("a@b")", R"("@b.c")", R"("a..b@c.d")"});
  expect_accepts(format("ipv4"), {R"("192.168.0.1")", R"("0.0.0.0")", R"("255.255.255.255")"},
                 {R"("256.0.0.1")", R"("01.2.3.4")", R"("1.2.3")"});
  expect_accepts(format("ipv6"), {R"("2001:db8:0:0:0:0:0:1")"}, {R"("2001:db8::1")"});
  expect_accepts(format("uri"), {R"("https://example.com/a%20b?q=1")", R"("s3://bucket")"},
                 {R"("example.com")", R"("http://a b")", R"("http://x/%zz")"});
  // A format's open-ended repetitions are cut to fit maxLength.
  Schema short_uri(R"({"type": "string", "format": "uri", "maxLength": 200})");
  expect_accepts(short_uri, {R"("https://example.com/a/b?q=1")"},
                 {"\"https://example.com/" + std::string(190, 'a') + "\""});
  // Other formats are annotations.
  expect_accepts(format("x-anything"), {R"("whatever")"}, {"1"});
}

TEST(JsonSchemaMatching, PatternsMatchTheDecodedString) {
  // The pattern is on the string's value: a quote in it is written \".
  expect_accepts(Schema(R"({"type": "string", "pattern": "^\"?[a-z]\\\\$"})"),
                 {R"("\"a\\")", R"("b\\")"}, {R"(""a\")", R"("a\")", R"("\"A\\")"});
  expect_accepts(Schema(R"({"type": "string", "pattern": "^[^a]$"})"), {R"("\n")", R"("\"")", R"("\u0001")", R"("b")"},
                 {R"("a")", "\"\n\""});
  // Open-ended repetitions are cut to maxLength.
  expect_accepts(Schema(R"({"type": "string", "pattern": "^x+y*$", "maxLength": 4})"),
                 {R"("xxy")", R"("xy")", R"("xx")"}, {R"("xxxxx")", R"("y")"});
}

TEST(JsonSchemaMatching, WhitespaceIsBounded) {
  Schema list(R"({"type": "array"})");
  expect_accepts(list, {"[ ]", "[\n" + std::string(20, ' ') + "1]", "[1 ]"},
                 {"[  1]", "[\n" + std::string(21, ' ') + "1]", " [1]", "[\t1]", "[\n\n1]"});
}

TEST(JsonSchemaMatching, AnyJsonObject) {
  Matcher m(testing::compile_text(json_object_gbnf()));
  EXPECT_TRUE(m.accept_bytes(R"({"a": {"b": [1, 2.5e3, "x", true, false, null]}, "": {}})") && m.can_end());
  for (const char *text : {"[]", "1", R"({"a": })", R"({"a": 1,})"}) {
    Matcher n(testing::compile_text(json_object_gbnf()));
    EXPECT_FALSE(n.accept_bytes(text) && n.can_end()) << text;
  }
}

// Random numbers of bounded grammars, read as a JSON parser does (IEEE
// doubles), stay within the bounds, inclusive or exclusive, also where
// rounding could reach a bound.
TEST(JsonSchemaMatching, RandomNumbersStayWithinTheirBoundsAsDoubles) {
  std::mt19937_64 random(7);
  const char *bounds[] = {"0", "1", "-1", "0.5", "-0.25", "2.25", "99.99", "1e-6", "0.1", "1000000", "-7.125", "3"};
  std::uniform_int_distribution<size_t> pick(0, std::size(bounds) - 1);
  std::uniform_int_distribution<int> flag(0, 1);
  for (int round = 0; round < 60; ++round) {
    std::string low = bounds[pick(random)], high = bounds[pick(random)];
    if (std::strtod(low.c_str(), nullptr) > std::strtod(high.c_str(), nullptr))
      std::swap(low, high);
    bool low_exclusive = flag(random), high_exclusive = flag(random), integer = round % 4 == 0;
    std::string schema = std::string(R"({"type": ")") + (integer ? "integer" : "number") + "\", \"" +
                         (low_exclusive ? "exclusiveMinimum" : "minimum") + "\": " + low + ", \"" +
                         (high_exclusive ? "exclusiveMaximum" : "maximum") + "\": " + high + "}";
    std::string gbnf;
    try {
      gbnf = json_schema_to_gbnf(Json::parse(schema));
    } catch (const GrammarError &) {
      continue; // no number within the bounds
    }
    sampling::RandomWalk walk(compile(Grammar::parse(gbnf), sampling::walk_vocabulary()), round);
    double lo = std::strtod(low.c_str(), nullptr), hi = std::strtod(high.c_str(), nullptr);
    for (int i = 0; i < 40; ++i) {
      std::optional<std::string> text = walk.next(200);
      ASSERT_TRUE(text) << schema;
      double x = std::strtod(text->c_str(), nullptr);
      EXPECT_TRUE(low_exclusive ? x > lo : x >= lo) << schema << " " << *text;
      EXPECT_TRUE(high_exclusive ? x < hi : x <= hi) << schema << " " << *text;
      if (integer)
        EXPECT_EQ(text->find_first_of(".eE"), std::string::npos) << schema << " " << *text;
    }
  }
}

// Close to an exclusive bound, more digits would round onto it.
TEST(JsonSchemaMatching, DigitsNextToABoundAreLimited) {
  Schema below_one(R"({"type": "number", "exclusiveMaximum": 1})");
  EXPECT_TRUE(below_one.accepts("0.99999999999999"));
  EXPECT_FALSE(below_one.accepts("0.9999999999999999999")); // 1.0 as a double
  Schema above_ten(R"({"type": "number", "exclusiveMinimum": 10})");
  EXPECT_TRUE(above_ten.accepts("10.0000000000001"));
  EXPECT_FALSE(above_ten.accepts("10.000000000000000001"));
  EXPECT_EQ(decimal_of_double(0.1)->fraction, "1");
  EXPECT_EQ(decimal_of_double(-1.5e-7)->fraction, "00000015");
  EXPECT_EQ(decimal_of_double(2e20)->integer, "200000000000000000000");
  EXPECT_FALSE(decimal_of_double(0.1 + 0.2)); // 0.30000000000000004
}

} // namespace
} // namespace llmserve::grammar
