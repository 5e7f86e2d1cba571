// The GBNF json_schema_to_gbnf writes for small schemas, rule by rule.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

namespace llmserve::grammar {
namespace {

using Json = nlohmann::ordered_json;

std::string gbnf(const char *schema) { return json_schema_to_gbnf(Json::parse(schema)); }

// The rules every grammar below shares.
const std::string kSpace = "space ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";
const std::string kChar = R"(char ::= [^"\\\x00-\x1F\x7F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-CeEfF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2})))"
                          "\n";

TEST(JsonSchemaGbnf, OptionalPropertiesKeepTheirOrder) {
  // "name" may be left out, so it and the first required one each start an
  // alternative; what follows a property is a rule shared by both.
  EXPECT_EQ(gbnf(R"({"type": "object", "properties": {
                       "name": {"type": "string", "minLength": 1},
                       "age": {"type": "integer", "minimum": 0, "maximum": 130},
                       "nick": {"type": "string"}},
                     "required": ["age"]})"),
            R"(root ::= "{" space (root-name-kv root-rest-1 | root-age-kv root-rest-2) "}" space
)" + kChar + R"(root-age ::= ([0-9] | [1-9] [0-9] | "1" ([0-2] [0-9] | "30")) space
root-age-kv ::= "\"age\"" space ":" space root-age
root-name ::= "\"" char+ "\"" space
root-name-kv ::= "\"name\"" space ":" space root-name
root-nick-kv ::= "\"nick\"" space ":" space string
root-rest-1 ::= "," space root-age-kv root-rest-2
root-rest-2 ::= ("," space root-nick-kv)?
)" + kSpace + R"(string ::= "\"" char* "\"" space
)");
}

TEST(JsonSchemaGbnf, AllRequiredIsOneSequence) {
  EXPECT_EQ(gbnf(R"({"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "null"}},
                     "required": ["a", "b"], "additionalProperties": false})"),
            R"(root ::= "{" space root-a-kv "," space root-b-kv "}" space
boolean ::= ("true" | "false") space
null ::= "null" space
root-a-kv ::= "\"a\"" space ":" space boolean
root-b-kv ::= "\"b\"" space ":" space null
)" + kSpace);
}

TEST(JsonSchemaGbnf, AdditionalPropertiesNeverTakeADeclaredName) {
  // Names other than "id", written without escapes so that the text is the
  // name: "i" alone, or "id" followed by more, or anything else.
  EXPECT_EQ(gbnf(R"({"type": "object", "properties": {"id": {"type": "integer"}},
                     "additionalProperties": {"type": "boolean"}})"),
            R"(root ::= "{" space (root-id-kv root-rest-1 | root-additional-kv ("," space root-additional-kv)*)? "}" space
boolean ::= ("true" | "false") space
integer ::= "-"? ("0" | [1-9] [0-9]{0,14}) space
key-char ::= [^"\\\x00-\x1F\x7F]
root-additional-key ::= "\"" ([ !#-\[\]-hj-~\u0080-\uD7FF\uE000-\U0010FFFF] key-char* | "i" | "i" [ !#-\[\]-ce-~\u0080-\uD7FF\uE000-\U0010FFFF] key-char* | "id" [ !#-\[\]-~\u0080-\uD7FF\uE000-\U0010FFFF] key-char*)? "\"" space
root-additional-kv ::= root-additional-key ":" space boolean
root-id-kv ::= "\"id\"" space ":" space integer
root-rest-1 ::= ("," space root-additional-kv)*
)" + kSpace);
}

TEST(JsonSchemaGbnf, NumberBoundsDigitByDigit) {
  EXPECT_EQ(gbnf(R"({"type": "integer", "minimum": -5, "maximum": 20})"),
            R"(root ::= ([0-9] | ("1" [0-9] | "20") | "-" [1-5]) space
)" + kSpace);
  // Next to a bound 15 digits in all, so that a parser's rounding cannot
  // reach it; -1.5 and 2.25 themselves are the fractions "5" and "25".
  EXPECT_EQ(gbnf(R"({"type": "number", "minimum": -1.5, "exclusiveMaximum": 2.25})"),
            R"(root ::= ("0" ("." [0-9]{1,14})? | "1" ("." [0-9]{1,15})? | "2" ("." ([0-1] [0-9]{0,13} | "2" ([0-4] [0-9]{0,12})?))? | "-" ("0" "." [0-9]{0,13} [1-9] | "1" ("." ([0-4] [0-9]{0,13} | "5"))?)) space
)" + kSpace);
}

TEST(JsonSchemaGbnf, EnumValuesAsCompactJson) {
  EXPECT_EQ(gbnf(R"({"enum": ["red", 1, 2.5, null, {"k": [true]}, "say \"hi\""]})"),
            R"(root ::= ("\"red\"" | "1" | "2.5" | "null" | "{\"k\":[true]}" | "\"say \\\"hi\\\"\"") space
)" + kSpace);
}

TEST(JsonSchemaGbnf, TupleThenItems) {
  EXPECT_EQ(gbnf(R"({"type": "array", "prefixItems": [{"type": "boolean"}, {"const": "x"}],
                     "items": {"type": "null"}, "minItems": 1, "maxItems": 4})"),
            R"(root ::= "[" space boolean ("," space root-1 ("," space null){0,2})? "]" space
boolean ::= ("true" | "false") space
null ::= "null" space
root-1 ::= "\"x\"" space
)" + kSpace);
}

TEST(JsonSchemaGbnf, RecursiveReferenceIsARule) {
  EXPECT_EQ(gbnf(R"({"$defs": {"node": {"type": "object",
                                "properties": {"next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
                                "required": ["next"]}},
                     "$ref": "#/$defs/node"})"),
            R"(root ::= node
node ::= "{" space node-next-kv "}" space
node-next ::= node | null
node-next-kv ::= "\"next\"" space ":" space node-next
null ::= "null" space
)" + kSpace);
}

TEST(JsonSchemaGbnf, StringFormatsAndPatterns) {
  EXPECT_EQ(gbnf(R"({"type": "string", "format": "uuid"})"),
            R"(root ::= "\"" uuid "\"" space
)" + kSpace + R"(uuid ::= [0-9A-Fa-f]{8} "-" [0-9A-Fa-f]{4} "-" [0-9A-Fa-f]{4} "-" [0-9A-Fa-f]{4} "-" [0-9A-Fa-f]{12}
)");
  // The pattern's text is JSON-escaped inside the quotes: a quote is \".
  EXPECT_EQ(gbnf(R"({"type": "string", "pattern": "^\"[a-z]+\"$"})"),
            R"(root ::= "\"" ("\\\"" [a-z]+ "\\\"") "\"" space
)" + kSpace);
}

TEST(JsonSchemaGbnf, AnyJsonObject) {
  EXPECT_EQ(json_object_gbnf(), R"(root ::= object
array ::= "[" space (value ("," space value)*)? "]" space
boolean ::= ("true" | "false") space
)" + kChar + R"(null ::= "null" space
number ::= "-"? ("0" | [1-9] [0-9]{0,14}) ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,2})? space
object ::= "{" space (string ":" space value ("," space string ":" space value)*)? "}" space
)" + kSpace + R"(string ::= "\"" char* "\"" space
value ::= object | array | string | number | boolean | null
)");
}

TEST(JsonSchemaGbnf, AnnotationsAndUnknownKeywordsChangeNothing) {
  EXPECT_EQ(gbnf(R"({"title": "T", "description": "d", "$comment": "c", "x-vendor": {"not": 1},
                     "nullable": true, "type": "object", "properties": {
                       "a": {"type": "string", "default": "x", "examples": ["y"], "deprecated": true}},
                     "required": ["a"]})"),
            gbnf(R"({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})"));
}

TEST(JsonSchemaGbnf, PlainJsonSortsPropertiesOrderedJsonKeepsThem) {
  const char *text = R"({"type": "object", "properties": {"b": {"type": "null"}, "a": {"type": "null"}},
                         "required": ["b", "a"]})";
  EXPECT_NE(json_schema_to_gbnf(Json::parse(text)).find(R"("{" space root-b-kv "," space root-a-kv)"),
            std::string::npos);
  EXPECT_NE(json_schema_to_gbnf(nlohmann::json::parse(text)).find(R"("{" space root-a-kv "," space root-b-kv)"),
            std::string::npos);
}

TEST(JsonSchemaGbnf, NoTypeMeansTheTypesItsKeywordsImply) {
  EXPECT_EQ(gbnf("{}"), gbnf("true"));
  EXPECT_EQ(gbnf("{}").substr(0, 15), "root ::= value\n");
  EXPECT_EQ(gbnf(R"({"minLength": 2})"), gbnf(R"({"type": "string", "minLength": 2})"));
  EXPECT_EQ(gbnf(R"({"maximum": 2, "maxItems": 1})"), gbnf(R"({"type": ["number", "array"], "maximum": 2, "maxItems": 1})"));
}

} // namespace
} // namespace llmserve::grammar
