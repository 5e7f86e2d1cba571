// Every way json_schema_to_gbnf refuses a schema, with its message: keywords
// it cannot express, malformed keywords, unsatisfiable schemas, and hostile
// ones (too deep, too large, too slow).
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

namespace llmserve::grammar {
namespace {

using Json = nlohmann::ordered_json;

std::string error_of(const Json &schema) {
  try {
    json_schema_to_gbnf(schema);
  } catch (const GrammarError &e) {
    return e.what();
  }
  return "";
}

std::string error_of(const nlohmann::json &schema) {
  try {
    json_schema_to_gbnf(schema);
  } catch (const GrammarError &e) {
    return e.what();
  }
  return "";
}

std::string error_of(const char *schema) { return error_of(Json::parse(schema)); }

struct Case {
  const char *schema;
  const char *message;
};

void expect_errors(const std::vector<Case> &cases) {
  for (const Case &c : cases)
    EXPECT_EQ(error_of(c.schema), c.message) << c.schema;
}

TEST(JsonSchemaErrors, UnsupportedKeywordsNamedWithTheirPlace) {
  expect_errors({
      {R"({"properties": {"a": {"not": {"type": "string"}}}})",
       "json schema: /properties/a/not: unsupported keyword 'not'"},
      {R"({"if": {}, "then": {}})", "json schema: /if: unsupported keyword 'if'"},
      {R"({"type": "object", "patternProperties": {"^x": {}}})",
       "json schema: /patternProperties: unsupported keyword 'patternProperties'"},
      {R"({"items": {"contains": {}}})", "json schema: /items/contains: unsupported keyword 'contains'"},
      {R"({"anyOf": [{"type": "null"}, {"propertyNames": {"maxLength": 3}}]})",
       "json schema: /anyOf/1/propertyNames: unsupported keyword 'propertyNames'"},
      {R"({"properties": {"a/b~c": {"unevaluatedProperties": false}}})",
       "json schema: /properties/a~1b~0c/unevaluatedProperties: unsupported keyword 'unevaluatedProperties'"},
      {R"({"dependentRequired": {"a": ["b"]}})", "json schema: /dependentRequired: unsupported keyword 'dependentRequired'"},
      {R"({"$dynamicRef": "#x"})", "json schema: /$dynamicRef: unsupported keyword '$dynamicRef'"},
      {R"({"type": "array", "uniqueItems": true})", "json schema: /uniqueItems: uniqueItems true is not supported"},
  });
}

TEST(JsonSchemaErrors, MalformedKeywords) {
  expect_errors({
      {"42", "json schema: (root): a schema must be an object or a boolean"},
      {R"({"properties": {"a": []}})", "json schema: /properties/a: a schema must be an object or a boolean"},
      {R"({"type": "float"})", "json schema: /type: 'type' must be a type name or a non-empty list of them"},
      {R"({"type": []})", "json schema: /type: 'type' must be a type name or a non-empty list of them"},
      {R"({"enum": []})", "json schema: /enum: 'enum' must be a non-empty array"},
      {R"({"properties": []})", "json schema: /properties: 'properties' must be an object"},
      {R"({"required": [1]})", "json schema: /required: 'required' must be an array of strings"},
      {R"({"additionalProperties": 1})", "json schema: /additionalProperties: 'additionalProperties' must be a schema"},
      {R"({"items": [{}]})",
       "json schema: /items: 'items' must be a schema ('items' as an array is Draft 7's prefixItems)"},
      {R"({"anyOf": []})", "json schema: /anyOf: 'anyOf' must be a non-empty array of schemas"},
      {R"({"minLength": -1})", "json schema: /minLength: 'minLength' must be a non-negative integer"},
      {R"({"maxItems": 1.5})", "json schema: /maxItems: 'maxItems' must be a non-negative integer"},
      {R"({"minimum": "0"})", "json schema: /minimum: 'minimum' must be a number"},
      {R"({"minimum": 0, "exclusiveMinimum": true})", "json schema: /exclusiveMinimum: 'exclusiveMinimum' must be a number"},
      {R"({"multipleOf": 0})", "json schema: /multipleOf: 'multipleOf' must be a positive number"},
      {R"({"uniqueItems": 1})", "json schema: /uniqueItems: 'uniqueItems' must be a boolean"},
      {R"({"$ref": 1})", "json schema: /$ref: '$ref' must be a string"},
      {R"({"pattern": null})", "json schema: /pattern: 'pattern' must be a string"},
  });
}

TEST(JsonSchemaErrors, References) {
  expect_errors({
      {R"({"$ref": "https://example.com/s.json"})",
       "json schema: /$ref: remote reference 'https://example.com/s.json' is not supported"},
      {R"({"$ref": "#node"})", "json schema: /$ref: reference to an anchor '#node' is not supported"},
      {R"({"properties": {"a": {"$ref": "#/$defs/missing"}}})",
       "json schema: /properties/a/$ref: unresolved reference '#/$defs/missing'"},
      // Rules that would call themselves before writing anything.
      {R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}},
           "$ref": "#/$defs/a"})",
       "json schema: /$defs/b/anyOf/0/$ref: '#/$defs/a' refers to itself before any text is written"},
      {R"({"$ref": "#"})", "json schema: /$ref: '#' refers to itself before any text is written"},
      {R"({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})",
       "json schema: /$defs/a: subschemas nested over 64 deep"},
  });
}

TEST(JsonSchemaErrors, CombinationsThatCannotBeExpressed) {
  expect_errors({
      {R"({"allOf": [{"type": "string"}, {"type": "integer"}]})",
       "json schema: (root): allOf: no type satisfies every subschema"},
      {R"({"allOf": [{"enum": [1, 2]}, {"const": 3}]})",
       "json schema: (root): allOf: no value of 'enum' or 'const' satisfies every subschema"},
      {R"({"allOf": [{"pattern": "a"}, {"pattern": "b"}]})",
       "json schema: (root): allOf: different values of 'pattern' cannot be combined"},
      {R"({"anyOf": [{}], "oneOf": [{}]})", "json schema: (root): 'anyOf' together with 'oneOf' is not supported"},
      {R"({"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 3}]})",
       "json schema: /oneOf: alternatives 0 and 1 may both match; oneOf is supported only for alternatives "
       "that exclude each other (by type or by const/enum values)"},
      {R"({"oneOf": [{"type": "integer"}, {"type": "number"}]})",
       "json schema: /oneOf: alternatives 0 and 1 may both match; oneOf is supported only for alternatives "
       "that exclude each other (by type or by const/enum values)"},
      {R"({"enum": ["a", "bb"], "pattern": "a"})",
       "json schema: /pattern: 'pattern' together with 'enum' or 'const' is not supported"},
      {R"({"type": "string", "format": "date", "pattern": "^2"})",
       "json schema: /pattern: 'pattern' together with 'format' is not supported"},
      {R"({"type": "string", "format": "email", "maxLength": 64})",
       "json schema: /format: values of format 'email' do not fit maxLength"},
      {R"({"type": "string", "format": "date", "minLength": 11})",
       "json schema: /format: minLength together with 'format' is supported only when every match is at least that "
       "long"},
      {R"({"type": "string", "pattern": "^a+$", "minLength": 2})",
       "json schema: /pattern: minLength together with 'pattern' is supported only when every match is at least that "
       "long"},
      {R"({"type": "string", "pattern": "^a{5}b*$", "maxLength": 4})",
       "json schema: /pattern: regex: the pattern has matches longer than 4 characters"},
      {R"({"type": "string", "pattern": "(a)\\1"})",
       "json schema: /pattern: regex: backreference '\\1' at offset 3 is not supported"},
      {R"({"type": "number", "multipleOf": 0.5})", "json schema: /multipleOf: multipleOf other than 1 is not supported"},
      {R"({"type": "number", "minimum": 0.12345678901234567})",
       "json schema: /minimum: a bound needs at most 15 significant digits"},
      {R"({"type": "object", "properties": {"a": {}, "b": {}}, "minProperties": 3})",
       "json schema: /minProperties: minProperties beyond the declared properties is not supported"},
  });
}

TEST(JsonSchemaErrors, NothingSatisfiesTheSchema) {
  expect_errors({
      {"false", "json schema: (root): the schema 'false' admits no document"},
      {R"({"properties": {"a": false}, "required": ["a"]})",
       "json schema: /properties/a: required property 'a' admits no value"},
      {R"({"required": ["a"], "additionalProperties": false})",
       "json schema: /required: required property 'a' admits no value"},
      {R"({"type": "object", "required": ["a", "b"], "maxProperties": 1})",
       "json schema: /maxProperties: maxProperties is below the number of required properties"},
      {R"({"enum": ["a", 1], "type": "boolean"})", "json schema: (root): no value of 'enum' or 'const' satisfies the schema"},
      {R"({"type": "string", "minLength": 3, "maxLength": 2})", "json schema: (root): minLength is over maxLength"},
      {R"({"type": "array", "prefixItems": [{}], "items": false, "minItems": 2})",
       "json schema: (root): no array length satisfies minItems, maxItems and the items allowed"},
      {R"({"type": "integer", "minimum": 5, "maximum": 3})",
       "json schema: (root): no integer of at most 15 digits is within the bounds"},
      {R"({"type": "number", "minimum": 1e20})",
       "json schema: (root): no number of at most 15 digits is within the bounds"},
      {R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 1})",
       "json schema: (root): no integer of at most 15 digits is within the bounds"},
  });
}

TEST(JsonSchemaErrors, HostileSchemasAreRefusedQuickly) {
  expect_errors({
      {R"({"type": "string", "maxLength": 1000000000})",
       "json schema: /maxLength: maxLength 1000000000 is over the limit of 10000"},
      {R"({"type": "array", "minItems": 10001})", "json schema: /minItems: minItems 10001 is over the limit of 10000"},
      {R"({"properties": {"a": {"maxProperties": 99999999999999999999}}})",
       "json schema: /properties/a/maxProperties: 'maxProperties' must be a non-negative integer"},
  });
  EXPECT_EQ(error_of(Json{{"properties", Json{{std::string(1001, 'x'), Json::object()}}}}),
            "json schema: /properties: a property name over 1000 bytes");
  // Nesting: of values, measured before anything recurses on them, and of
  // subschemas.
  nlohmann::json value = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i)
    value = nlohmann::json::array({std::move(value)});
  EXPECT_EQ(error_of(nlohmann::json{{"const", std::move(value)}}), "json schema: nested over 512 deep");
  Json deep = Json::object();
  for (int i = 0; i < 100; ++i)
    deep = Json{{"type", "array"}, {"items", deep}};
  EXPECT_EQ(error_of(deep).substr(0, 22), "json schema: /items/it");
  EXPECT_NE(error_of(deep).find(": subschemas nested over 64 deep"), std::string::npos);
  // Size: a long enum.
  Json long_enum = Json::array();
  for (int i = 0; i < 20000; ++i)
    long_enum.push_back(std::string(64, 'a') + std::to_string(i));
  EXPECT_EQ(error_of(Json{{"enum", long_enum}}), "json schema: (root): the grammar is over 1048576 bytes");
  // Rules.
  Json many = Json::object();
  for (int i = 0; i < 10001; ++i)
    many["p" + std::to_string(i)] = Json{{"type", "integer"}};
  EXPECT_EQ(error_of(Json{{"type", "object"}, {"properties", many}}),
            "json schema: (root): the grammar needs over 10000 rules");
  // Time: each allOf doubles the work of merging.
  Json defs = Json::object();
  for (int i = 0; i < 25; ++i) {
    std::string next = "#/$defs/d" + std::to_string(i + 1);
    defs["d" + std::to_string(i)] = Json{{"allOf", Json::array({Json{{"$ref", next}}, Json{{"$ref", next}}})}};
  }
  defs["d25"] = Json{{"type", "string"}};
  EXPECT_NE(error_of(Json{{"$defs", defs}, {"$ref", "#/$defs/d0"}}).find("steps to convert"), std::string::npos);
}

TEST(JsonSchemaErrors, InvalidUtf8IsAGrammarError) {
  Json schema = Json{{"const", std::string("\xff")}};
  EXPECT_EQ(error_of(schema).substr(0, 13), "json schema: ");
}

} // namespace
} // namespace llmserve::grammar
