#include "tokenizer/regex.h"

#include <oniguruma.h>

#include <chrono>
#include <mutex>
#include <stdexcept>

namespace llmserve {
namespace {

// Backtracking limits of one search. In match: Oniguruma's default, which
// Hugging Face keeps. In search (over all start positions) and the match
// stack: unlimited there; bounded here so that a pathological pattern fails
// within about a second instead of running on.
constexpr unsigned long kRetryLimitInMatch = 10'000'000;
constexpr unsigned long kRetryLimitInSearch = 100'000'000;
constexpr unsigned int kMatchStackLimit = 4'000'000; // entries
// Searches that each stay under those limits can still add up to quadratic
// time on a long text; find_all gives up after this long.
constexpr std::chrono::seconds kTimeLimit{10};

std::string error_message(int code, OnigErrorInfo *info = nullptr) {
  OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
  int len = onig_error_code_to_str(message, code, info);
  return std::string(reinterpret_cast<const char *>(message), len);
}

// onig_new is not thread-safe (the onig crate serializes it too).
std::mutex compile_mutex;

struct MatchParam {
  OnigMatchParam *param = onig_new_match_param();
  MatchParam() {
    if (!param)
      throw std::bad_alloc();
    onig_initialize_match_param(param);
    onig_set_retry_limit_in_match_of_match_param(param, kRetryLimitInMatch);
    onig_set_retry_limit_in_search_of_match_param(param, kRetryLimitInSearch);
    onig_set_match_stack_limit_size_of_match_param(param, kMatchStackLimit);
  }
  ~MatchParam() { onig_free_match_param(param); }
};

struct Region {
  OnigRegion *region = onig_region_new();
  Region() {
    if (!region)
      throw std::bad_alloc();
  }
  ~Region() { onig_region_free(region, 1); }
};

size_t utf8_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

} // namespace

void Regex::Free::operator()(re_pattern_buffer *regex) const { onig_free(regex); }

Regex::Regex(const std::string &pattern) : pattern_(pattern) {
  const auto *p = reinterpret_cast<const OnigUChar *>(pattern.data());
  OnigRegex regex = nullptr;
  OnigErrorInfo info{};
  int status;
  {
    std::lock_guard<std::mutex> lock(compile_mutex);
    static const int initialized = [] {
      OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
      return onig_initialize(encodings, 1);
    }();
    // The onig crate's default syntax is Oniguruma's default, this one.
    status = initialized != ONIG_NORMAL
                 ? initialized
                 : onig_new(&regex, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                            ONIG_SYNTAX_ONIGURUMA, &info);
  }
  if (status != ONIG_NORMAL)
    throw std::invalid_argument("Oniguruma cannot compile '" + pattern + "': " +
                                error_message(status, &info));
  regex_.reset(regex);
}

void Regex::find_all(std::string_view text, std::vector<Span> &out) const {
  const auto *str = reinterpret_cast<const OnigUChar *>(text.data());
  const auto *end = str + text.size();
  MatchParam param;
  Region region;
  size_t from = 0;
  bool skip_next_empty = false;
  auto deadline = std::chrono::steady_clock::now() + kTimeLimit;
  while (from <= text.size()) {
    if (std::chrono::steady_clock::now() > deadline)
      throw std::invalid_argument("regex '" + pattern_ + "' ran longer than " +
                                  std::to_string(kTimeLimit.count()) + " s on this text");
    int found = onig_search_with_param(regex_.get(), str, end, str + from, end, region.region,
                                       ONIG_OPTION_NONE, param.param);
    if (found == ONIG_MISMATCH)
      return;
    if (found < 0)
      throw std::invalid_argument("regex '" + pattern_ + "' failed on this text: " +
                                  error_message(found));
    Span match{static_cast<size_t>(region.region->beg[0]),
               static_cast<size_t>(region.region->end[0])};
    from = match.end;
    if (match.start == match.end) {
      // Step over the next character so the search moves on.
      from += from < text.size() ? utf8_length(str[from]) : 1;
      if (skip_next_empty) {
        skip_next_empty = false;
        continue;
      }
    } else {
      skip_next_empty = true;
    }
    out.push_back(match);
  }
}

} // namespace llmserve
