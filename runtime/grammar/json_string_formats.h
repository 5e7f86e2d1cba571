// JSON Schema string formats as regular expressions (regex_syntax.h's
// subset), which json_schema.cpp turns into grammars for what goes between a
// JSON string's quotes. Each accepts only valid values (Feb 29 only in leap
// years, no year 0000, IPv4 octets without leading zeros) and may accept
// fewer than the standard allows (IPv6 only in its full eight-group form,
// URIs only as scheme://host[:port][/path][?query]).
#ifndef LLMSERVE_GRAMMAR_JSON_STRING_FORMATS_H
#define LLMSERVE_GRAMMAR_JSON_STRING_FORMATS_H

#include <string_view>

namespace llmserve::grammar {

struct StringFormat {
  std::string_view name;    // as in JSON Schema: "date-time"
  std::string_view pattern; // matched in full
};

// The format of that name, or nullptr when there is no grammar for it.
const StringFormat *find_string_format(std::string_view name);

} // namespace llmserve::grammar

#endif
