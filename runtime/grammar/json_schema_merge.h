// allOf: two schemas as one that admits only what both admit.
#ifndef LLMSERVE_GRAMMAR_JSON_SCHEMA_MERGE_H
#define LLMSERVE_GRAMMAR_JSON_SCHEMA_MERGE_H

#include <nlohmann/json.hpp>

#include <string>

namespace llmserve::grammar {

// The conjunction of `a` and `b`, neither with $ref or allOf at the top.
// Subschemas both constrain (a property's, items') become {"allOf": [x, y]},
// merged in turn when converted. Keywords that cannot be combined (two
// different patterns, two anyOf) throw GrammarError naming `where`.
nlohmann::ordered_json merge_schemas(const nlohmann::ordered_json &a, const nlohmann::ordered_json &b,
                                     const std::string &where);

} // namespace llmserve::grammar

#endif
