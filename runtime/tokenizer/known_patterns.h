// The split regexes of the known model families (GPT-2, Llama 3 / cl100k,
// Qwen2, GPT-4o / o200k), matched by hand-written code that finds exactly
// Oniguruma's matches (leftmost-first alternation, backtracking, Unicode
// classes) several times faster. A tokenizer.json regex takes this path when
// its text is one of these patterns character for character.
#ifndef LLMSERVE_TOKENIZER_KNOWN_PATTERNS_H
#define LLMSERVE_TOKENIZER_KNOWN_PATTERNS_H

#include "tokenizer/regex.h"

#include <optional>
#include <string_view>
#include <vector>

namespace llmserve {

enum class KnownPattern {
  Gpt2,   // GPT-2's pattern (also ByteLevel's with use_regex)
  Cl100k, // Llama 3 (cl100k-style: \p{N}{1,3})
  Qwen2,  // Qwen2/Qwen3 (cl100k-style with single digits)
  O200k,  // GPT-4o (o200k: letter case decides word boundaries)
};
constexpr KnownPattern kKnownPatterns[] = {KnownPattern::Gpt2, KnownPattern::Cl100k,
                                           KnownPattern::Qwen2, KnownPattern::O200k};

std::optional<KnownPattern> known_pattern(std::string_view regex);
const char *known_pattern_regex(KnownPattern pattern);

// Appends the pattern's matches in valid UTF-8 text, as Regex::find_all
// would; these patterns match every character, so the matches tile the text.
void match_known(KnownPattern pattern, std::string_view text, std::vector<Span> &out);

} // namespace llmserve

#endif
