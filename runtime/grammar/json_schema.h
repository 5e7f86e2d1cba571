// JSON Schema as GBNF, as llama.cpp's json-schema-to-grammar does: the
// grammar for `response_format` json_schema / json_object, vLLM's
// `structured_outputs.json` and tool-call arguments.
//
// Every document the grammar accepts validates against the schema: where a
// keyword cannot be expressed exactly the grammar accepts fewer documents
// (noted below), or the schema is refused with a GrammarError that names the
// place, e.g. "json schema: /properties/a/not: unsupported keyword 'not'".
//
// Supported: type (also as a list), enum, const, properties (written in their
// order), required, additionalProperties, minProperties and maxProperties,
// items, prefixItems, minItems, maxItems, anyOf, oneOf (when its alternatives
// provably exclude each other), allOf (merged), $ref to local JSON pointers
// (#/$defs/..., #/definitions/..., recursion included), minLength, maxLength,
// pattern (see regex_to_gbnf.h), format (date, time, date-time, uuid, email,
// ipv4, ipv6, uri; other formats are annotations, as in Draft 2020-12 by
// default), minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf 1.
// Annotations and keywords outside the JSON Schema vocabulary are ignored.
// Refused: not, if/then/else, dependentSchemas, dependentRequired,
// patternProperties, propertyNames, unevaluated*, contains, uniqueItems true,
// $dynamicRef, remote references, and combinations the grammar cannot express.
//
// Fewer documents than the schema allows: no whitespace but llama.cpp's
// bounded `space`; properties only in their declared order; without
// additionalProperties an object with declared properties has no others;
// a schema without `type` produces the types its keywords imply; numbers have
// at most 15 digits before the point and 15 after (json_number_range.h) and,
// when bounded, no exponent; strings use no \u escape of a surrogate;
// additional property names use no escapes; a pattern's open-ended
// repetitions are cut to fit maxLength; format grammars as in
// json_string_formats.h; minProperties is met with declared properties,
// maxProperties by leaving out later optional ones.
//
// Refused as too large: counts (maxLength, maxItems...) over grammar.h's
// kMaxRepetition, subschemas nested over 64 deep, JSON values nested over
// 512, property names over 1000 bytes, grammars over 10000 rules or
// kMaxGrammarBytes. The engine counts long repetitions rather than write
// them out, so a maxLength of thousands compiles in milliseconds.
#ifndef LLMSERVE_GRAMMAR_JSON_SCHEMA_H
#define LLMSERVE_GRAMMAR_JSON_SCHEMA_H

#include "grammar/grammar.h" // GrammarError

#include <nlohmann/json.hpp>

#include <string>

namespace llmserve::grammar {

// A grammar whose `root` accepts JSON documents valid against `schema`.
// Throws GrammarError for what it cannot express and for schemas too large
// (nesting, repetition counts, grammar size) to turn into a grammar.
std::string json_schema_to_gbnf(const nlohmann::ordered_json &schema);

// The same for a schema parsed into nlohmann::json, which sorts object keys:
// properties come out in alphabetical order. Parse with ordered_json to keep
// the order the schema declares.
std::string json_schema_to_gbnf(const nlohmann::json &schema);

// A grammar whose `root` accepts any JSON object: `{"type": "json_object"}`.
std::string json_object_gbnf();

} // namespace llmserve::grammar

#endif
