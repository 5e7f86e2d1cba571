// The converter behind json_schema_to_gbnf (json_schema.h), in parts:
// json_schema.cpp (keywords, rules, references, composition),
// json_schema_scalars.cpp (enum and const, strings, numbers) and
// json_schema_containers.cpp (objects and arrays).
#ifndef LLMSERVE_GRAMMAR_JSON_SCHEMA_CONVERTER_H
#define LLMSERVE_GRAMMAR_JSON_SCHEMA_CONVERTER_H

#include "grammar/gbnf_text.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace llmserve::grammar {

using Json = nlohmann::ordered_json;

// Limits that keep a hostile schema from producing a huge grammar or a long
// conversion; over them the schema is refused.
// Counts (minItems, maxLength...) are bounded by grammar.h's kMaxRepetition
// and the grammar text by its kMaxGrammarBytes.
constexpr int kMaxSchemaDepth = 64; // nested subschemas, $ref included
constexpr size_t kMaxGrammarRules = 10000;
constexpr size_t kMaxConversionSteps = 100000; // subschemas visited or merged

class SchemaConverter {
public:
  explicit SchemaConverter(const Json &root) : root_(root) {}

  // The whole grammar, `root` first.
  std::string grammar();

  // "json schema: <where>: <what>"
  [[noreturn]] static void fail(const std::string &where, const std::string &what);
  // `where` extended by one key or index.
  static std::string pointer(const std::string &where, const std::string &key);

  // The type a keyword constrains ("object" for "properties"), or nullptr
  // for one that applies to all.
  static const char *keyword_type(const std::string &keyword);
  // Whether a keyword constrains documents, unlike annotations ("title",
  // "$defs"...) and keywords outside the vocabulary, which are ignored.
  static bool constrains(const std::string &keyword);
  // The names in a schema's "type".
  static std::vector<std::string> types_of(const Json &schema);
  // Whether a value has the type (an integral number is also an "integer",
  // as Draft 6 and later count 1.0).
  static bool has_type(const Json &value, const std::string &type);
  static bool has_any_type(const Json &value, const std::vector<std::string> &types);
  // A non-negative integer keyword of `schema` (absent: nullopt), refused
  // above grammar.h's kMaxRepetition.
  static std::optional<uint64_t> count_keyword(const Json &schema, const char *keyword, const std::string &where);

private:
  // The rule for `schema`: a new one named after `name`, or an existing one.
  std::string visit(const Json &schema, const std::string &name, const std::string &where, int depth);
  // The expression `schema` stands for.
  std::string body(const Json &schema, const std::string &name, const std::string &where, int depth);

  // Defines `name ::= body` (or finds the same rule) and returns its name.
  std::string add_rule(const std::string &name, const std::string &body);
  // Adds a rule's share to the grammar's size, refused over kMaxGrammarBytes.
  void count_bytes(const std::string &name, const std::string &body);
  // A rule every grammar may share (space, string, value...), with the ones
  // it uses.
  std::string primitive(const std::string &name);

  // The rule of a $ref, made once: a recursive schema refers to it by name.
  std::string reference(const std::string &ref, const std::string &where, int depth);
  // What a local reference points to, and its JSON pointer in *target_where.
  const Json &resolve(const std::string &ref, const std::string &where, std::string *target_where) const;
  // `schema` with its top-level $ref and allOf merged into it.
  Json expand(const Json &schema, const std::string &where, int depth);
  // anyOf and oneOf.
  std::string alternatives(const Json &schema, const std::string &name, const std::string &where, int depth);
  // Whether no document validates against both `a` and `b`.
  bool exclusive(const Json &a, const Json &b, const std::string &where, int depth);
  // enum and const.
  std::string values(const Json &schema, const std::string &where);
  // One alternative per type the schema admits.
  std::string typed(const Json &schema, const std::string &name, const std::string &where, int depth);
  std::string string_body(const Json &schema, const std::string &where);
  std::string number_body(const Json &schema, const std::string &where, bool integers);
  std::string object_body(const Json &schema, const std::string &name, const std::string &where, int depth);
  std::string array_body(const Json &schema, const std::string &name, const std::string &where, int depth);
  // The name of a string (with quotes and space) that is none of `names`.
  std::string key_excluding(const std::vector<std::string> &names, const std::string &name);

  void step(const std::string &where);

  const Json &root_;
  std::map<std::string, std::string> rules_;
  std::map<std::string, std::string> references_; // $ref -> rule name
  // References being converted with no text written since they began.
  std::set<std::string> leading_references_;
  size_t grammar_bytes_ = 0;
  size_t steps_ = 0;
};

} // namespace llmserve::grammar

#endif
