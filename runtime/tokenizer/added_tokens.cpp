#include "tokenizer/added_tokens.h"

#include "tokenizer/unicode.h"

#include <algorithm>

namespace llmserve {

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens,
                                     std::vector<std::string> patterns)
    : tokens_(std::move(tokens)), patterns_(std::move(patterns)) {
  for (size_t i = 0; i < patterns_.size(); ++i)
    if (!patterns_[i].empty())
      by_first_byte_[static_cast<unsigned char>(patterns_[i][0])].push_back(
          static_cast<int32_t>(i));
  for (auto &bucket : by_first_byte_)
    std::stable_sort(bucket.begin(), bucket.end(), [&](int32_t a, int32_t b) {
      return patterns_[a].size() > patterns_[b].size();
    });
}

namespace {

// Start of the whitespace run that ends at `end`, not before `floor`.
size_t skip_whitespace_back(std::string_view s, size_t end, size_t floor) {
  while (end > floor) {
    size_t start = end - 1, len;
    while (start > floor && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80)
      --start;
    if (!unicode::is_white_space(unicode::decode_at(s, start, &len)))
      break;
    end = start;
  }
  return end;
}

size_t skip_whitespace(std::string_view s, size_t pos) {
  size_t len;
  while (pos < s.size() && unicode::is_white_space(unicode::decode_at(s, pos, &len)))
    pos += len;
  return pos;
}

} // namespace

void AddedTokenMatcher::split(std::string_view text,
                              std::vector<Segment> &out) const {
  size_t emitted = 0; // end of what is already in out
  for (size_t pos = 0; pos < text.size();) {
    const auto &bucket = by_first_byte_[static_cast<unsigned char>(text[pos])];
    const AddedToken *match = nullptr;
    size_t match_len = 0;
    for (int32_t i : bucket) {
      const std::string &p = patterns_[i];
      if (text.compare(pos, p.size(), p) == 0) {
        match = &tokens_[i];
        match_len = p.size();
        break;
      }
    }
    if (!match) {
      ++pos;
      continue;
    }
    size_t start = match->lstrip ? skip_whitespace_back(text, pos, emitted) : pos;
    size_t stop = pos + match_len;
    if (match->rstrip)
      stop = skip_whitespace(text, stop);
    if (start > emitted)
      out.push_back({text.substr(emitted, start - emitted), -1});
    out.push_back({text.substr(start, stop - start), match->id});
    emitted = pos = stop;
  }
  if (emitted < text.size())
    out.push_back({text.substr(emitted), -1});
}

} // namespace llmserve
