// Objects and arrays: the half of SchemaConverter that writes "{...}" and
// "[...]" (json_schema_converter.h).
#include "grammar/json_schema_converter.h"

#include "tokenizer/unicode.h"

#include <algorithm>
#include <set>

namespace llmserve::grammar {

namespace {

const std::string kComma = R"("," space)";
constexpr size_t kMaxPropertyName = 1000;

// `item` from `min` to `max` (absent: any number of) times; "" when never.
std::string repeat(const std::string &item, uint64_t min, std::optional<uint64_t> max, bool never) {
  if (never || (max && *max == 0))
    return "";
  return "(" + item + ")" + gbnf_repetition(min, max);
}

std::string sequence(const std::string &a, const std::string &b) {
  return a.empty() ? b : b.empty() ? a : a + " " + b;
}

// A declared property as the object writes it.
struct Member {
  std::string name;
  Json schema;
  bool required = false;
  std::string rule; // `"name" space ":" space value`
};

// Names as a trie of code points, to write "any name but these".
struct NameTrie {
  bool ends_here = false;
  std::map<char32_t, NameTrie> next;
};

// Code points a key-char (json_schema.cpp) matches: no quote, backslash or
// control, so an additional property's name is written without escapes.
const CodepointSet kKeyChars = complement({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}});

// Alternatives for the names that start with `path` (the node's) and are
// none of the trie's: `path` itself when no name ends there, or `path`, a
// character no name continues with there, and anything. Flat, so long names
// do not nest parentheses.
void excluding(const NameTrie &node, const std::string &path, std::vector<std::string> &alternatives,
               bool &empty_name_ok) {
  std::string prefix = path.empty() ? "" : gbnf_literal(path);
  if (!node.ends_here) {
    if (path.empty())
      empty_name_ok = true;
    else
      alternatives.push_back(prefix);
  }
  CodepointSet taken;
  for (const auto &[cp, child] : node.next)
    taken.push_back({cp, cp});
  CodepointSet others = intersection(kKeyChars, complement(normalized(taken)));
  if (!others.empty())
    alternatives.push_back(sequence(prefix, gbnf_class(others) + " key-char*"));
  for (const auto &[cp, child] : node.next) {
    if (intersection({{cp, cp}}, kKeyChars).empty())
      continue; // never written without an escape: nothing to exclude
    std::string next = path;
    unicode::append_utf8(next, cp);
    excluding(child, next, alternatives, empty_name_ok);
  }
}

} // namespace

std::string SchemaConverter::key_excluding(const std::vector<std::string> &names, const std::string &name) {
  NameTrie trie;
  for (const std::string &n : names) {
    NameTrie *node = &trie;
    for (size_t pos = 0, len = 0; pos < n.size(); pos += len)
      node = &node->next[unicode::decode_at(n, pos, &len)];
    node->ends_here = true;
  }
  std::vector<std::string> alternatives;
  bool empty_name_ok = false;
  excluding(trie, "", alternatives, empty_name_ok);
  primitive("key-char");
  primitive("space");
  return add_rule(name, R"("\"" ()" + gbnf_alternatives(alternatives) + ")" + (empty_name_ok ? "?" : "") + R"( "\"" space)");
}

std::string SchemaConverter::object_body(const Json &schema, const std::string &name, const std::string &where,
                                         int depth) {
  std::set<std::string> leading;
  leading.swap(leading_references_); // "{" is written first
  Json properties = schema.value("properties", Json::object());
  Json required = schema.value("required", Json::array());
  // Without additionalProperties, declared properties are the only ones (as
  // in llama.cpp); without any declared, any property is allowed.
  Json additional = schema.contains("additionalProperties") ? schema["additionalProperties"]
                    : properties.empty() && required.empty() ? Json(true)
                                                             : Json(false);
  auto is_required = [&](const std::string &n) {
    return std::find(required.begin(), required.end(), n) != required.end();
  };
  std::vector<Member> members;
  std::vector<std::string> declared;
  for (auto it = properties.begin(); it != properties.end(); ++it)
    members.push_back({it.key(), it.value(), is_required(it.key()), ""});
  // A required property not declared takes additionalProperties' schema
  // (true when absent: that default of ours only leaves out optional ones).
  for (const Json &r : required)
    if (std::none_of(members.begin(), members.end(), [&](const Member &m) { return m.name == r.get<std::string>(); }))
      members.push_back({r.get<std::string>(), schema.value("additionalProperties", Json(true)), true, ""});
  std::vector<Member> written;
  for (Member &m : members) {
    // Names go into rule names and, excluded from additional properties'
    // names, into a trie walked recursively.
    if (m.name.size() > kMaxPropertyName)
      fail(pointer(where, properties.contains(m.name) ? "properties" : "required"),
           "a property name over " + std::to_string(kMaxPropertyName) + " bytes");
    declared.push_back(m.name);
    if (m.schema.is_boolean() && !m.schema.get<bool>()) {
      if (m.required)
        fail(properties.contains(m.name) ? pointer(pointer(where, "properties"), m.name) : pointer(where, "required"),
             "required property '" + m.name + "' admits no value");
      continue; // forbidden: never written, and excluded from the others
    }
    written.push_back(std::move(m));
  }

  // minProperties by requiring more declared properties, maxProperties by
  // leaving out the last optional ones: counting additional properties would
  // need their names to differ, which a grammar cannot ensure.
  uint64_t min = count_keyword(schema, "minProperties", where).value_or(0);
  std::optional<uint64_t> max = count_keyword(schema, "maxProperties", where);
  uint64_t count = static_cast<uint64_t>(std::count_if(written.begin(), written.end(), [](const Member &m) { return m.required; }));
  for (Member &m : written)
    if (count < min && !m.required) {
      m.required = true;
      ++count;
    }
  if (count < min)
    fail(pointer(where, "minProperties"), "minProperties beyond the declared properties is not supported");
  std::optional<uint64_t> max_additional;
  if (max) {
    if (count > *max)
      fail(pointer(where, "maxProperties"), "maxProperties is below the number of required properties");
    uint64_t optional_room = *max - count;
    std::vector<Member> kept;
    for (Member &m : written)
      if (m.required || optional_room > 0) {
        optional_room -= m.required ? 0 : 1;
        kept.push_back(std::move(m));
      }
    written = std::move(kept);
    max_additional = *max - written.size();
  }
  bool any_additional = !(additional.is_boolean() && !additional.get<bool>()) && max_additional.value_or(1) > 0;

  if (written.empty() && declared.empty() && any_additional && !max && min == 0 && additional == true) {
    leading.swap(leading_references_);
    return primitive("object");
  }
  for (Member &m : written) {
    std::string value = visit(m.schema, name + "-" + m.name, pointer(pointer(where, "properties"), m.name), depth + 1);
    m.rule = add_rule(name + "-" + m.name + "-kv", gbnf_literal(Json(m.name).dump()) + R"( space ":" space )" + value);
  }
  std::string additional_kv;
  if (any_additional) {
    std::string key = declared.empty() ? primitive("string") : key_excluding(declared, name + "-additional-key");
    std::string value = additional == true ? primitive("value")
                                           : visit(additional, name + "-additional", pointer(where, "additionalProperties"), depth + 1);
    additional_kv = add_rule(name + "-additional-kv", key + R"( ":" space )" + value);
  }
  primitive("space");

  // Members in declared order, each optional one free to be left out: the
  // first written needs no comma, so each optional property that can come
  // first starts an alternative, followed by rules for the rest after it.
  size_t n = written.size();
  auto piece = [&](size_t i) {
    std::string member = sequence(kComma, written[i].rule);
    return written[i].required ? member : "(" + member + ")?";
  };
  std::string trailing = repeat(sequence(kComma, additional_kv), 0, max_additional, additional_kv.empty());
  size_t first_required = 0;
  while (first_required < n && !written[first_required].required)
    ++first_required;
  std::string members_text;
  if (first_required == 0 && n > 0) {
    members_text = written[0].rule;
    for (size_t i = 1; i < n; ++i)
      members_text = sequence(members_text, piece(i));
    members_text = sequence(members_text, trailing);
  } else {
    size_t last = std::min(first_required + 1, n);
    std::vector<std::string> alternatives;
    if (last > 0) {
      // rest[j]: what follows written[j - 1].
      std::vector<std::string> rest(last + 1);
      std::string tail = trailing;
      for (size_t i = n; i-- > last;)
        tail = sequence(piece(i), tail);
      if (!tail.empty())
        rest[last] = add_rule(name + "-rest-" + std::to_string(last), tail);
      for (size_t j = last; j-- > 1;)
        rest[j] = add_rule(name + "-rest-" + std::to_string(j), sequence(piece(j), rest[j + 1]));
      for (size_t i = 0; i < last; ++i)
        alternatives.push_back(sequence(written[i].rule, rest[i + 1]));
    }
    bool all_optional = first_required == n;
    if (all_optional && !additional_kv.empty()) {
      std::optional<uint64_t> more;
      if (max_additional)
        more = *max_additional - 1;
      alternatives.push_back(sequence(additional_kv, repeat(sequence(kComma, additional_kv), 0, more, false)));
    }
    if (!alternatives.empty())
      members_text = "(" + gbnf_alternatives(alternatives) + ")" + (all_optional ? "?" : "");
  }
  leading.swap(leading_references_);
  return sequence(R"("{" space)", sequence(members_text, R"("}" space)"));
}

std::string SchemaConverter::array_body(const Json &schema, const std::string &name, const std::string &where,
                                        int depth) {
  std::set<std::string> leading;
  leading.swap(leading_references_); // "[" is written first
  Json items = schema.value("items", Json(true));
  Json prefix = schema.value("prefixItems", Json::array());
  uint64_t min = count_keyword(schema, "minItems", where).value_or(0);
  std::optional<uint64_t> max = count_keyword(schema, "maxItems", where);
  if (items.is_boolean() && !items.get<bool>())
    max = std::min<uint64_t>(max.value_or(prefix.size()), prefix.size());
  if (max && min > *max)
    fail(where, "no array length satisfies minItems, maxItems and the items allowed");
  if (schema.value("uniqueItems", false) && max.value_or(2) > 1)
    fail(pointer(where, "uniqueItems"), "uniqueItems true is not supported");
  if (prefix.empty() && items == true && min == 0 && !max) {
    leading.swap(leading_references_);
    return primitive("array");
  }
  primitive("space");
  size_t fixed = static_cast<size_t>(std::min<uint64_t>(prefix.size(), max.value_or(prefix.size())));
  std::vector<std::string> fixed_rules;
  for (size_t i = 0; i < fixed; ++i)
    fixed_rules.push_back(visit(prefix[i], name + "-" + std::to_string(i),
                                pointer(pointer(where, "prefixItems"), std::to_string(i)), depth + 1));
  // Items past the prefix, as the element at `position` (0-based) and after.
  auto more = [&](size_t position, bool first) -> std::string {
    std::optional<uint64_t> room;
    if (max)
      room = *max - position;
    if (room && *room == 0)
      return "";
    uint64_t needed = min > position ? min - position : 0;
    std::string item = visit(items, name + "-item", pointer(where, "items"), depth + 1);
    std::string comma_item = sequence(kComma, item);
    if (!first)
      return repeat(comma_item, needed, room, false);
    std::optional<uint64_t> after_first;
    if (room)
      after_first = *room - 1;
    std::string out = sequence(item, repeat(comma_item, needed ? needed - 1 : 0, after_first, false));
    return needed ? out : "(" + out + ")?";
  };
  // The elements from the last prefix item back to the first: one past
  // minItems is optional and so is everything after it. Nested optional
  // items go into rules, so the grammar does not nest ever deeper.
  std::string elements = more(fixed, fixed == 0);
  for (size_t position = fixed; position-- > 0;) {
    std::string element = sequence(position == 0 ? "" : kComma, fixed_rules[position]);
    elements = sequence(element, elements);
    if (position >= min)
      elements = "(" + elements + ")?";
    if (position > min)
      elements = add_rule(name + "-from-" + std::to_string(position), elements);
  }
  std::string body = sequence(R"("[" space)", sequence(elements, R"("]" space)"));
  leading.swap(leading_references_);
  return body;
}

} // namespace llmserve::grammar
