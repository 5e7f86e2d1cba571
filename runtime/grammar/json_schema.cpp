#include "grammar/json_schema.h"

#include "grammar/json_schema_converter.h"
#include "grammar/json_schema_merge.h"
#include "grammar/json_string_formats.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

namespace llmserve::grammar {

namespace {

// JSON Schema keywords no grammar here expresses.
const std::set<std::string> kUnsupported = {
    "not",           "if",          "then",        "else",           "dependentSchemas", "dependentRequired",
    "dependencies",  "patternProperties", "propertyNames", "unevaluatedProperties", "unevaluatedItems",
    "contains",      "minContains", "maxContains", "$dynamicRef",    "$dynamicAnchor",   "$recursiveRef",
    "$recursiveAnchor", "additionalItems",
};

const std::set<std::string> kObjectKeywords = {"properties", "required", "additionalProperties", "minProperties",
                                               "maxProperties"};
const std::set<std::string> kArrayKeywords = {"items", "prefixItems", "minItems", "maxItems", "uniqueItems"};
const std::set<std::string> kStringKeywords = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string> kNumberKeywords = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                               "multipleOf"};
const std::set<std::string> kTypes = {"null", "boolean", "object", "array", "string", "number", "integer"};

// The primitive rules, and the ones each uses.
struct Primitive {
  const char *body;
  std::vector<const char *> uses;
};
const std::map<std::string, Primitive> kPrimitives = {
    // Bounded, so that a model cannot write whitespace forever.
    {"space", {R"(| " " | "\n" [ \t]{0,20})", {}}},
    // No \u escape of a surrogate: each char is one code point, as
    // minLength and maxLength count them.
    {"char",
     {R"([^"\\\x00-\x1F\x7F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-CeEfF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2})))",
      {}}},
    {"string", {R"("\"" char* "\"" space)", {"char", "space"}}},
    {"integer", {R"("-"? ("0" | [1-9] [0-9]{0,14}) space)", {"space"}}},
    {"number", {R"("-"? ("0" | [1-9] [0-9]{0,14}) ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,2})? space)", {"space"}}},
    {"boolean", {R"(("true" | "false") space)", {"space"}}},
    {"null", {R"("null" space)", {"space"}}},
    {"value", {"object | array | string | number | boolean | null",
               {"object", "array", "string", "number", "boolean", "null"}}},
    {"object",
     {R"("{" space (string ":" space value ("," space string ":" space value)*)? "}" space)",
      {"string", "value", "space"}}},
    {"array", {R"("[" space (value ("," space value)*)? "]" space)", {"value", "space"}}},
    // Names of additional properties: no escapes, so the text is the name.
    {"key-char", {R"([^"\\\x00-\x1F\x7F])", {}}},
};

bool is_reserved(const std::string &name) {
  return name == "root" || kPrimitives.count(name) || find_string_format(name);
}

bool is_rule_name(const std::string &text) {
  return !text.empty() && text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") ==
                              std::string::npos;
}

bool has_constraints(const Json &schema, const std::set<std::string> &except) {
  if (!schema.is_object())
    return !schema.get<bool>();
  for (auto it = schema.begin(); it != schema.end(); ++it)
    if (SchemaConverter::constrains(it.key()) && !except.count(it.key()))
      return true;
  return false;
}

Json without(const Json &schema, const std::set<std::string> &keywords) {
  Json out = Json::object();
  for (auto it = schema.begin(); it != schema.end(); ++it)
    if (!keywords.count(it.key()))
      out[it.key()] = it.value();
  return out;
}

// nlohmann's copies, comparisons and dumps recurse: a value nested deeper
// than this (in `const`, say) is refused before any of them, measured
// without recursion.
constexpr size_t kMaxJsonNesting = 512;

template <typename JsonType> void check_nesting(const JsonType &root) {
  std::vector<std::pair<const JsonType *, size_t>> pending = {{&root, 1}};
  while (!pending.empty()) {
    auto [value, depth] = pending.back();
    pending.pop_back();
    if (depth > kMaxJsonNesting)
      throw GrammarError("json schema: nested over " + std::to_string(kMaxJsonNesting) + " deep");
    if (value->is_structured())
      for (const JsonType &child : *value)
        pending.push_back({&child, depth + 1});
  }
}

} // namespace

const char *SchemaConverter::keyword_type(const std::string &keyword) {
  return kObjectKeywords.count(keyword)   ? "object"
         : kArrayKeywords.count(keyword)  ? "array"
         : kStringKeywords.count(keyword) ? "string"
         : kNumberKeywords.count(keyword) ? "number"
                                          : nullptr;
}

bool SchemaConverter::constrains(const std::string &keyword) {
  return kObjectKeywords.count(keyword) || kArrayKeywords.count(keyword) || kStringKeywords.count(keyword) ||
         kNumberKeywords.count(keyword) || kUnsupported.count(keyword) ||
         std::set<std::string>{"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"}.count(keyword);
}

std::vector<std::string> SchemaConverter::types_of(const Json &schema) {
  const Json &type = schema.at("type");
  if (type.is_string())
    return {type.get<std::string>()};
  std::vector<std::string> out;
  for (const Json &t : type)
    out.push_back(t.get<std::string>());
  return out;
}

bool SchemaConverter::has_type(const Json &value, const std::string &type) {
  switch (value.type()) {
  case Json::value_t::null: return type == "null";
  case Json::value_t::boolean: return type == "boolean";
  case Json::value_t::string: return type == "string";
  case Json::value_t::object: return type == "object";
  case Json::value_t::array: return type == "array";
  case Json::value_t::number_float:
    return type == "number" || (type == "integer" && std::floor(value.get<double>()) == value.get<double>());
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned: return type == "number" || type == "integer";
  default: return false;
  }
}

bool SchemaConverter::has_any_type(const Json &value, const std::vector<std::string> &types) {
  return std::any_of(types.begin(), types.end(), [&](const std::string &t) { return has_type(value, t); });
}

void SchemaConverter::fail(const std::string &where, const std::string &what) {
  throw GrammarError("json schema: " + (where.empty() ? std::string("(root)") : where) + ": " + what);
}

std::string SchemaConverter::pointer(const std::string &where, const std::string &key) {
  std::string out = where + "/";
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::optional<uint64_t> SchemaConverter::count_keyword(const Json &schema, const char *keyword, const std::string &where) {
  if (!schema.contains(keyword))
    return std::nullopt;
  uint64_t value = schema[keyword].get<uint64_t>();
  if (value > kMaxRepetition)
    SchemaConverter::fail(SchemaConverter::pointer(where, keyword),
                          std::string(keyword) + " " + std::to_string(value) + " is over the limit of " +
                              std::to_string(kMaxRepetition));
  return value;
}

namespace {

// Refuses unsupported keywords and malformed values of supported ones.
void check_keywords(const Json &schema, const std::string &where) {
  if (schema.is_boolean())
    return;
  if (!schema.is_object())
    SchemaConverter::fail(where, "a schema must be an object or a boolean");
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    const std::string &key = it.key();
    const Json &value = it.value();
    std::string at = SchemaConverter::pointer(where, key);
    auto expect = [&](bool ok, const char *what) {
      if (!ok)
        SchemaConverter::fail(at, std::string("'") + key + "' must be " + what);
    };
    if (kUnsupported.count(key))
      SchemaConverter::fail(at, "unsupported keyword '" + key + "'");
    if (key == "type") {
      bool ok = value.is_string() || (value.is_array() && !value.empty());
      if (ok)
        for (const Json &t : value.is_string() ? Json::array({value}) : value)
          ok = ok && t.is_string() && kTypes.count(t.get<std::string>());
      expect(ok, "a type name or a non-empty list of them");
    } else if (key == "enum") {
      expect(value.is_array() && !value.empty(), "a non-empty array");
    } else if (key == "properties") {
      expect(value.is_object(), "an object");
    } else if (key == "required") {
      expect(value.is_array() && std::all_of(value.begin(), value.end(), [](const Json &v) { return v.is_string(); }),
             "an array of strings");
    } else if (key == "additionalProperties" || key == "items") {
      expect(!value.is_array() || key != "items", "a schema ('items' as an array is Draft 7's prefixItems)");
      expect(value.is_object() || value.is_boolean(), "a schema");
    } else if (key == "prefixItems" || key == "anyOf" || key == "oneOf" || key == "allOf") {
      expect(value.is_array() && !value.empty(), "a non-empty array of schemas");
    } else if (key == "minLength" || key == "maxLength" || key == "minItems" || key == "maxItems" ||
               key == "minProperties" || key == "maxProperties") {
      expect(value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0),
             "a non-negative integer");
    } else if (key == "minimum" || key == "maximum" || key == "exclusiveMinimum" || key == "exclusiveMaximum") {
      expect(value.is_number(), "a number");
    } else if (key == "multipleOf") {
      expect(value.is_number() && value > 0, "a positive number");
    } else if (key == "uniqueItems") {
      expect(value.is_boolean(), "a boolean");
    } else if (key == "$ref" || key == "pattern" || key == "format") {
      expect(value.is_string(), "a string");
    }
  }
}

} // namespace

void SchemaConverter::step(const std::string &where) {
  if (++steps_ > kMaxConversionSteps)
    fail(where, "the schema takes over " + std::to_string(kMaxConversionSteps) + " steps to convert");
}

std::string SchemaConverter::grammar() {
  visit(root_, "root", "", 0);
  std::string out = "root ::= " + rules_["root"] + "\n";
  for (const auto &[name, body] : rules_)
    if (name != "root")
      out += name + " ::= " + body + "\n";
  return out;
}

std::string SchemaConverter::add_rule(const std::string &wanted, const std::string &body) {
  // A body that is just another rule's name needs no rule of its own.
  if (wanted != "root" && is_rule_name(body) && rules_.count(body))
    return body;
  std::string base = gbnf_rule_name(wanted), name = base;
  for (int i = 1; rules_.count(name) && rules_[name] != body; ++i)
    name = base + std::to_string(i);
  if (rules_.count(name))
    return name;
  if (rules_.size() >= kMaxGrammarRules)
    fail("", "the grammar needs over " + std::to_string(kMaxGrammarRules) + " rules");
  count_bytes(name, body);
  rules_[name] = body;
  return name;
}

void SchemaConverter::count_bytes(const std::string &name, const std::string &body) {
  grammar_bytes_ += name.size() + body.size() + 6; // "name ::= body\n"
  if (grammar_bytes_ > kMaxGrammarBytes)
    fail("", "the grammar is over " + std::to_string(kMaxGrammarBytes) + " bytes");
}

std::string SchemaConverter::primitive(const std::string &name) {
  if (rules_.count(name))
    return name;
  const Primitive &p = kPrimitives.at(name);
  rules_[name] = p.body;
  for (const char *use : p.uses)
    primitive(use);
  return name;
}

std::string SchemaConverter::visit(const Json &schema, const std::string &name, const std::string &where,
                                   int depth) {
  return add_rule(name, body(schema, name, where, depth));
}

std::string SchemaConverter::body(const Json &schema, const std::string &name, const std::string &where,
                                  int depth) {
  step(where);
  if (depth > kMaxSchemaDepth)
    fail(where, "subschemas nested over " + std::to_string(kMaxSchemaDepth) + " deep");
  check_keywords(schema, where);
  if (schema.is_boolean()) {
    if (!schema.get<bool>())
      fail(where, "the schema 'false' admits no document");
    return primitive("value");
  }
  if (schema.contains("$ref") && !has_constraints(schema, {"$ref"}))
    return reference(schema["$ref"].get<std::string>(), pointer(where, "$ref"), depth);
  if (schema.contains("$ref") || schema.contains("allOf"))
    return body(expand(schema, where, depth), name, where, depth + 1);
  if (schema.contains("anyOf") || schema.contains("oneOf"))
    return alternatives(schema, name, where, depth);
  if (schema.contains("enum") || schema.contains("const"))
    return values(schema, where);
  return typed(schema, name, where, depth);
}

const Json &SchemaConverter::resolve(const std::string &ref, const std::string &where,
                                     std::string *target_where) const {
  if (ref.empty() || ref[0] != '#')
    fail(where, "remote reference '" + ref + "' is not supported");
  if (ref.size() > 1 && ref[1] != '/')
    fail(where, "reference to an anchor '" + ref + "' is not supported");
  const Json *node = &root_;
  std::string path = ref.substr(1);
  *target_where = "";
  size_t pos = 0;
  while (pos < path.size()) {
    size_t end = path.find('/', pos + 1);
    std::string raw = path.substr(pos + 1, end == std::string::npos ? std::string::npos : end - pos - 1);
    pos = end == std::string::npos ? path.size() : end;
    // Percent-decoding (a URI fragment), then ~1 and ~0 (a JSON pointer).
    std::string key;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '%' && i + 2 < raw.size() && std::isxdigit(static_cast<unsigned char>(raw[i + 1])) &&
          std::isxdigit(static_cast<unsigned char>(raw[i + 2]))) {
        key += static_cast<char>(std::stoi(raw.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        key += raw[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        key += raw[i];
      }
    }
    const Json *next = nullptr;
    if (node->is_object() && node->contains(key)) {
      next = &(*node)[key];
    } else if (node->is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos &&
               key.size() < 10 && std::stoul(key) < node->size()) {
      next = &(*node)[std::stoul(key)];
    }
    if (!next)
      fail(where, "unresolved reference '" + ref + "'");
    node = next;
    *target_where = pointer(*target_where, key);
  }
  return *node;
}

std::string SchemaConverter::reference(const std::string &ref, const std::string &where, int depth) {
  // A reference back to itself before any text (through $ref or anyOf)
  // would be a left-recursive rule: a grammar that never ends a match.
  if (leading_references_.count(ref))
    fail(where, "'" + ref + "' refers to itself before any text is written");
  auto known = references_.find(ref);
  if (known != references_.end())
    return known->second;
  std::string target_where;
  const Json &target = resolve(ref, where, &target_where);
  std::string last = ref.substr(ref.rfind('/') + 1);
  std::string base = gbnf_rule_name(last.empty() || last == "#" ? "ref" : last);
  if (is_reserved(base))
    base += "-ref";
  // Reserve the name first: a recursive schema refers to it while it is made.
  std::string name = base;
  for (int i = 1; rules_.count(name); ++i)
    name = base + std::to_string(i);
  rules_[name] = "";
  references_[ref] = name;
  leading_references_.insert(ref);
  std::string b = body(target, name, target_where, depth + 1);
  leading_references_.erase(ref);
  count_bytes(name, b);
  rules_[name] = b;
  return name;
}

Json SchemaConverter::expand(const Json &schema, const std::string &where, int depth) {
  step(where);
  if (depth > kMaxSchemaDepth)
    fail(where, "subschemas nested over " + std::to_string(kMaxSchemaDepth) + " deep");
  check_keywords(schema, where);
  if (!schema.is_object() || (!schema.contains("$ref") && !schema.contains("allOf")))
    return schema;
  Json out = without(schema, {"$ref", "allOf"});
  if (schema.contains("$ref")) {
    std::string target_where;
    const Json &target = resolve(schema["$ref"].get<std::string>(), pointer(where, "$ref"), &target_where);
    out = merge_schemas(out, expand(target, target_where, depth + 1), where);
  }
  if (schema.contains("allOf")) {
    const Json &parts = schema["allOf"];
    for (size_t i = 0; i < parts.size(); ++i)
      out = merge_schemas(out, expand(parts[i], pointer(pointer(where, "allOf"), std::to_string(i)), depth + 1),
                          where);
  }
  return out;
}

std::string SchemaConverter::alternatives(const Json &schema, const std::string &name, const std::string &where,
                                          int depth) {
  if (schema.contains("anyOf") && schema.contains("oneOf"))
    fail(where, "'anyOf' together with 'oneOf' is not supported");
  const char *keyword = schema.contains("anyOf") ? "anyOf" : "oneOf";
  const Json &choices = schema[keyword];
  // Keywords beside anyOf apply to every alternative: merged into each.
  Json common = without(schema, {keyword});
  bool merge = has_constraints(common, {});
  if (merge)
    common = expand(common, where, depth + 1);
  std::vector<Json> alts;
  std::vector<std::string> wheres;
  for (size_t i = 0; i < choices.size(); ++i) {
    wheres.push_back(pointer(pointer(where, keyword), std::to_string(i)));
    alts.push_back(merge ? merge_schemas(common, expand(choices[i], wheres.back(), depth + 1), wheres.back())
                         : choices[i]);
  }
  if (std::string(keyword) == "oneOf")
    for (size_t i = 0; i < alts.size(); ++i)
      for (size_t j = i + 1; j < alts.size(); ++j)
        if (!exclusive(alts[i], alts[j], where, depth + 1))
          fail(pointer(where, keyword), "alternatives " + std::to_string(i) + " and " + std::to_string(j) +
                                            " may both match; oneOf is supported only for alternatives that "
                                            "exclude each other (by type or by const/enum values)");
  std::vector<std::string> rules;
  for (size_t i = 0; i < alts.size(); ++i)
    rules.push_back(visit(alts[i], name + "-" + std::to_string(i), wheres[i], depth + 1));
  return gbnf_alternatives(rules);
}

// Whether no document validates against both: by their types, their enum or
// const values, or the values of a property both require.
bool SchemaConverter::exclusive(const Json &a_schema, const Json &b_schema, const std::string &where, int depth) {
  Json a = expand(a_schema, where, depth), b = expand(b_schema, where, depth);
  if ((a.is_boolean() && !a.get<bool>()) || (b.is_boolean() && !b.get<bool>()))
    return true;
  if (!a.is_object() || !b.is_object())
    return false;
  auto values_of = [](const Json &s) {
    return s.contains("const") ? Json::array({s["const"]}) : s.contains("enum") ? s["enum"] : Json();
  };
  Json va = values_of(a), vb = values_of(b);
  if (!va.is_null() && !vb.is_null() &&
      std::none_of(va.begin(), va.end(), [&](const Json &v) { return std::find(vb.begin(), vb.end(), v) != vb.end(); }))
    return true;
  // Values of one that the other's type excludes.
  auto excluded = [](const Json &values, const Json &other) {
    return !values.is_null() && other.contains("type") &&
           std::none_of(values.begin(), values.end(), [&](const Json &v) { return has_any_type(v, types_of(other)); });
  };
  if (excluded(va, b) || excluded(vb, a))
    return true;
  if (!a.contains("type") || !b.contains("type"))
    return false;
  std::vector<std::string> common;
  for (const std::string &t : types_of(a))
    for (const std::string &u : types_of(b))
      if (t == u || (t == "integer" && u == "number") || (t == "number" && u == "integer"))
        common.push_back(t);
  if (common.empty())
    return true;
  if (std::any_of(common.begin(), common.end(), [](const std::string &t) { return t != "object"; }))
    return false;
  // Objects: a discriminating property both require.
  for (const Json &key : a.value("required", Json::array())) {
    const Json &rb = b.value("required", Json::array());
    if (std::find(rb.begin(), rb.end(), key) == rb.end())
      continue;
    std::string k = key.get<std::string>();
    const Json pa = a.value("properties", Json::object()).value(k, Json(true));
    const Json pb = b.value("properties", Json::object()).value(k, Json(true));
    if (exclusive(pa, pb, where, depth + 1))
      return true;
  }
  return false;
}

std::string SchemaConverter::typed(const Json &schema, const std::string &name, const std::string &where,
                                   int depth) {
  std::vector<std::string> types;
  if (schema.contains("type")) {
    types = types_of(schema);
  } else {
    // No type: the types its keywords constrain (a schema with only
    // "properties" also admits strings; the grammar writes only objects).
    for (auto it = schema.begin(); it != schema.end(); ++it) {
      const std::string &k = it.key();
      const char *type = keyword_type(k);
      if (type && std::find(types.begin(), types.end(), type) == types.end())
        types.push_back(type);
    }
    if (types.empty())
      return primitive("value");
  }
  bool number = std::find(types.begin(), types.end(), "number") != types.end();
  std::vector<std::string> bodies;
  std::set<std::string> seen;
  for (const std::string &type : types) {
    if (!seen.insert(type).second || (type == "integer" && number))
      continue;
    std::string b = type == "null"      ? primitive("null")
                    : type == "boolean" ? primitive("boolean")
                    : type == "string"  ? string_body(schema, where)
                    : type == "integer" ? number_body(schema, where, true)
                    : type == "number"  ? number_body(schema, where, false)
                    : type == "object"  ? object_body(schema, name, where, depth)
                                        : array_body(schema, name, where, depth);
    bodies.push_back(types.size() == 1 ? b : add_rule(name + "-" + type, b));
  }
  return gbnf_alternatives(bodies);
}

std::string json_schema_to_gbnf(const nlohmann::ordered_json &schema) {
  check_nesting(schema);
  try {
    return SchemaConverter(schema).grammar();
  } catch (const nlohmann::json::exception &e) {
    throw GrammarError(std::string("json schema: ") + e.what());
  }
}

std::string json_schema_to_gbnf(const nlohmann::json &schema) {
  check_nesting(schema); // before the copy, which recurses
  return json_schema_to_gbnf(nlohmann::ordered_json(schema));
}

std::string json_object_gbnf() { return json_schema_to_gbnf(nlohmann::ordered_json{{"type", "object"}}); }

} // namespace llmserve::grammar
