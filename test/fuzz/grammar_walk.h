// What the grammar targets share: a small vocabulary shaped like a model's,
// and a matcher walk steered by the fuzzer's bytes.
#ifndef LLMSERVE_TEST_FUZZ_GRAMMAR_WALK_H
#define LLMSERVE_TEST_FUZZ_GRAMMAR_WALK_H

#include "grammar/compiled_grammar.h"
#include "grammar/matcher.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve::fuzz {

// The 256 single bytes, multi-byte tokens of JSON and text (so that masks
// cover tokens that span rules), a stop token and a special token without
// bytes. Small, so that compiling stays fast enough to fuzz.
inline std::shared_ptr<const grammar::Vocabulary> vocabulary() {
  static const auto vocabulary = [] {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b)
      bytes.push_back(std::string(1, static_cast<char>(b)));
    for (const char *t : {"{\"", "\"}", "\":", "\": ", ", \"", "\",", "[\"", "\"]", "true", "false",
                          "null", "  ", "    ", "\n", "\n  ", "\\n", "\\\"", "\\u00", "\\ud83d",
                          "12", "0.5", "-1", "e+", "1e", "ab", "abc", " the", "name", "type",
                          "id", "http", "://", "@", ".com", "2024-", "-01", "T12:", ":00Z",
                          "\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x98\x80", "\xe2\x82",
                          "\xac", "\xc3", "<tool_call>", "</tool_call>", "{\"name\": \"",
                          "\"arguments\": "})
      bytes.push_back(t);
    const int32_t stop = static_cast<int32_t>(bytes.size());
    bytes.push_back(""); // the stop token
    bytes.push_back(""); // a special token: never allowed
    return std::make_shared<const grammar::Vocabulary>(std::move(bytes), std::vector<int32_t>{stop});
  }();
  return vocabulary;
}

// Walks `grammar` for up to 64 steps, one per byte of `choices`: each byte
// picks one of the allowed tokens, or, when it is 0xFF, rolls back one step. A
// token the mask allows must be accepted: aborts otherwise. GrammarError
// (a grammar too ambiguous to follow) ends the walk.
inline void walk(std::shared_ptr<const grammar::CompiledGrammar> grammar, std::string_view choices) {
  try {
    grammar::Matcher matcher(std::move(grammar));
    const grammar::Vocabulary &vocab = matcher.grammar().vocabulary();
    std::vector<uint32_t> mask(vocab.mask_words());
    std::vector<int32_t> allowed;
    for (char c : choices.substr(0, 64)) {
      const auto choice = static_cast<uint8_t>(c);
      if (choice == 0xFF) {
        if (matcher.accepted() > 0)
          matcher.rollback(1);
        continue;
      }
      const size_t count = matcher.fill_next_token_mask(mask.data());
      allowed.clear();
      for (int32_t id = 0; static_cast<size_t>(id) < vocab.size(); ++id)
        if (mask[id / 32] >> (id % 32) & 1)
          allowed.push_back(id);
      if (allowed.size() != count) {
        std::fprintf(stderr, "mask has %zu tokens, fill_next_token_mask says %zu\n",
                     allowed.size(), count);
        std::abort();
      }
      if (allowed.empty())
        return;
      const int32_t token = allowed[choice % allowed.size()];
      if (!matcher.accept_token(token)) {
        std::fprintf(stderr, "token %d is in the mask but not accepted\n", token);
        std::abort();
      }
      if (matcher.is_finished())
        return;
    }
  } catch (const grammar::GrammarError &) {
  }
}

} // namespace llmserve::fuzz

#endif
