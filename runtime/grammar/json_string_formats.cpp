#include "grammar/json_string_formats.h"

namespace llmserve::grammar {

namespace {

// Years 0001-9999 (Python's date has no year 0); the leap ones; a day that
// exists in its month.
#define YEAR R"((?:\d{3}[1-9]|\d{2}[1-9]0|\d[1-9]00|[1-9]000))"
#define LEAP_YEAR R"((?:\d{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00))"
#define DATE                                                                                       \
  "(?:" YEAR R"(-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30))" \
  R"(|02-(?:0[1-9]|1\d|2[0-8]))|)" LEAP_YEAR "-02-29)"
#define HOUR R"((?:[01]\d|2[0-3]))"
#define TIME HOUR R"(:[0-5]\d:[0-5]\d(?:\.\d{1,6})?(?:Z|[+-])" HOUR R"(:[0-5]\d))"
#define OCTET R"((?:25[0-5]|2[0-4]\d|1\d\d|[1-9]\d|\d))"
#define LABEL R"([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)"
#define ATEXT R"([A-Za-z0-9!#$%&'*+/=?^_`{|}~-])"
#define PCHAR R"((?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2}))"

// No open-ended repetition inside another, so that cut to a maxLength
// (regex_rule_body) each keeps a fair share.
const StringFormat kFormats[] = {
    {"date", DATE},
    {"time", TIME},
    {"date-time", DATE "T" TIME},
    {"uuid", R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"},
    {"email", ATEXT "(?:" ATEXT R"(|\.)" ATEXT ")*@" LABEL R"((?:\.)" LABEL ")+"},
    {"ipv4", OCTET R"((?:\.)" OCTET "){3}"},
    {"ipv6", R"([0-9a-fA-F]{1,4}(?::[0-9a-fA-F]{1,4}){7})"},
    {"uri", R"([A-Za-z][A-Za-z0-9+.-]*://[A-Za-z0-9][A-Za-z0-9.-]*(?::\d{1,5})?(?:/(?:)" PCHAR R"(|/)*)?(?:\?(?:)" PCHAR
            R"(|[/?])*)?)"},
};

#undef YEAR
#undef LEAP_YEAR
#undef DATE
#undef HOUR
#undef TIME
#undef OCTET
#undef LABEL
#undef ATEXT
#undef PCHAR

} // namespace

const StringFormat *find_string_format(std::string_view name) {
  for (const StringFormat &format : kFormats)
    if (format.name == name)
      return &format;
  return nullptr;
}

} // namespace llmserve::grammar
