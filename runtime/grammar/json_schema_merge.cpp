#include "grammar/json_schema_merge.h"

#include "grammar/gbnf_text.h"

#include <algorithm>

namespace llmserve::grammar {

namespace {

using Json = nlohmann::ordered_json;

bool admits_everything(const Json &schema) {
  return (schema.is_boolean() && schema.get<bool>()) || (schema.is_object() && schema.empty());
}

// The conjunction of two subschemas, left for the converter to merge.
Json both(const Json &a, const Json &b) {
  if (admits_everything(a))
    return b;
  if (admits_everything(b) || a == b)
    return a;
  if ((a.is_boolean() && !a.get<bool>()) || (b.is_boolean() && !b.get<bool>()))
    return false;
  return Json{{"allOf", Json::array({a, b})}};
}

Json get_or(const Json &schema, const char *keyword, const Json &otherwise) {
  auto it = schema.find(keyword);
  return it == schema.end() ? otherwise : *it;
}

Json types_of(const Json &schema) {
  const Json &type = schema.at("type");
  return type.is_array() ? type : Json::array({type});
}

bool contains(const Json &array, const Json &value) {
  return std::find(array.begin(), array.end(), value) != array.end();
}

Json merged_types(const Json &a, const Json &b) {
  Json out = Json::array();
  for (const Json &type : types_of(a)) {
    Json kept;
    if (contains(types_of(b), type))
      kept = type;
    else if ((type == "integer" && contains(types_of(b), "number")) ||
             (type == "number" && contains(types_of(b), "integer")))
      kept = "integer";
    if (!kept.is_null() && !contains(out, kept))
      out.push_back(kept);
  }
  return out.size() == 1 ? out[0] : out;
}

Json values_of(const Json &schema) {
  return schema.contains("const") ? Json::array({schema.at("const")}) : schema.at("enum");
}

// properties, additionalProperties and required: a property one side does
// not declare must satisfy that side's additionalProperties.
void merge_object(const Json &a, const Json &b, Json &out) {
  Json extra_a = get_or(a, "additionalProperties", true), extra_b = get_or(b, "additionalProperties", true);
  Json props_a = get_or(a, "properties", Json::object()), props_b = get_or(b, "properties", Json::object());
  Json props = Json::object();
  for (const Json *side : {&props_a, &props_b})
    for (auto it = side->begin(); it != side->end(); ++it)
      if (!props.contains(it.key()))
        props[it.key()] = both(get_or(props_a, it.key().c_str(), extra_a), get_or(props_b, it.key().c_str(), extra_b));
  if (!props.empty())
    out["properties"] = props;
  if (a.contains("additionalProperties") || b.contains("additionalProperties"))
    out["additionalProperties"] = both(extra_a, extra_b);
  Json required = Json::array();
  for (const Json *side : {&a, &b})
    for (const Json &name : get_or(*side, "required", Json::array()))
      if (!contains(required, name))
        required.push_back(name);
  if (!required.empty())
    out["required"] = required;
}

// prefixItems and items: a position past one side's prefix takes its items.
void merge_array(const Json &a, const Json &b, Json &out) {
  Json items_a = get_or(a, "items", true), items_b = get_or(b, "items", true);
  Json prefix_a = get_or(a, "prefixItems", Json::array()), prefix_b = get_or(b, "prefixItems", Json::array());
  Json prefix = Json::array();
  for (size_t i = 0; i < std::max(prefix_a.size(), prefix_b.size()); ++i)
    prefix.push_back(both(i < prefix_a.size() ? prefix_a[i] : items_a, i < prefix_b.size() ? prefix_b[i] : items_b));
  if (!prefix.empty())
    out["prefixItems"] = prefix;
  if (a.contains("items") || b.contains("items"))
    out["items"] = both(items_a, items_b);
}

const char *const kLowerBounds[] = {"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"};
const char *const kUpperBounds[] = {"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"};
// Kept when one side has them or both have the same value.
const char *const kSameOnBoth[] = {"pattern", "format", "multipleOf", "uniqueItems", "anyOf", "oneOf"};

} // namespace

Json merge_schemas(const Json &a, const Json &b, const std::string &where) {
  if (admits_everything(a) || (b.is_boolean() && !b.get<bool>()))
    return b;
  if (admits_everything(b) || (a.is_boolean() && !a.get<bool>()))
    return a;
  auto fail = [&](const std::string &what) -> GrammarError {
    return GrammarError("json schema: " + (where.empty() ? std::string("(root)") : where) + ": allOf: " + what);
  };
  Json out = Json::object();
  if (a.contains("type") && b.contains("type")) {
    out["type"] = merged_types(a, b);
    if (out["type"].empty())
      throw fail("no type satisfies every subschema");
  } else if (a.contains("type") || b.contains("type")) {
    out["type"] = a.contains("type") ? a["type"] : b["type"];
  }
  bool values_a = a.contains("enum") || a.contains("const"), values_b = b.contains("enum") || b.contains("const");
  if (values_a && values_b) {
    Json values = Json::array();
    for (const Json &v : values_of(a))
      if (contains(values_of(b), v))
        values.push_back(v);
    if (values.empty())
      throw fail("no value of 'enum' or 'const' satisfies every subschema");
    out["enum"] = values;
  } else if (values_a || values_b) {
    const Json &side = values_a ? a : b;
    for (const char *keyword : {"enum", "const"})
      if (side.contains(keyword))
        out[keyword] = side[keyword];
  }
  merge_object(a, b, out);
  merge_array(a, b, out);
  for (const char *keyword : kLowerBounds)
    if (a.contains(keyword) || b.contains(keyword))
      out[keyword] = std::max(get_or(a, keyword, get_or(b, keyword, 0)), get_or(b, keyword, get_or(a, keyword, 0)));
  for (const char *keyword : kUpperBounds)
    if (a.contains(keyword) || b.contains(keyword))
      out[keyword] = std::min(get_or(a, keyword, get_or(b, keyword, 0)), get_or(b, keyword, get_or(a, keyword, 0)));
  for (const char *keyword : kSameOnBoth) {
    if (a.contains(keyword) && b.contains(keyword) && a[keyword] != b[keyword])
      throw fail("different values of '" + std::string(keyword) + "' cannot be combined");
    if (a.contains(keyword) || b.contains(keyword))
      out[keyword] = a.contains(keyword) ? a[keyword] : b[keyword];
  }
  return out;
}

} // namespace llmserve::grammar
