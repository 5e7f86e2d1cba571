#include "random_walk.h"

#include "grammar/matcher.h"

#include <stdexcept>
#include <vector>

namespace llmserve::grammar::sampling {

namespace {

const char *const kMultiByteTokens[] = {
    "{\"", "\"}", "\":", "\": ", "\", \"", "\",", ", ", "},", "],", "[{", "}]", "true", "false", "null",
    "\n  ", "\n\t", "  ", "\\\"", "\\\\", "\\n", "\\u00e9", "\\u20ac", "\u00e9", "\u00fc\u00df", "\u65e5\u672c",
    "\U0001F600", "ab", "the", "name", "\"id\"", "\"type\"", "0.", "12", "-1", "e-", "E+", "://", "http", ".com",
    "@", "2024-", "T12:", "00Z", "ff", "A1",
};

// Closers, made likely once a text grows, so walks end.
bool closes(const std::string &bytes) { return bytes == "\"" || bytes == "}" || bytes == "]"; }

} // namespace

std::shared_ptr<const Vocabulary> walk_vocabulary() {
  static const auto vocabulary = [] {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b)
      tokens.push_back(std::string(1, static_cast<char>(b)));
    for (const char *t : kMultiByteTokens)
      tokens.push_back(t);
    tokens.push_back(""); // stop
    int32_t stop = static_cast<int32_t>(tokens.size() - 1);
    return std::make_shared<const Vocabulary>(std::move(tokens), std::vector<int32_t>{stop});
  }();
  return vocabulary;
}

RandomWalk::RandomWalk(std::shared_ptr<const CompiledGrammar> grammar, uint64_t seed)
    : grammar_(std::move(grammar)), random_(seed) {}

std::optional<std::string> RandomWalk::next(size_t max_bytes) {
  const Vocabulary &vocabulary = grammar_->vocabulary();
  Matcher matcher(grammar_);
  std::vector<uint32_t> mask(vocabulary.mask_words());
  std::vector<int32_t> allowed, closers;
  std::string text;
  std::uniform_real_distribution<double> coin(0, 1);
  for (;;) {
    if (matcher.fill_next_token_mask(mask.data()) == 0)
      throw std::logic_error("the grammar allows nothing after " + text);
    allowed.clear();
    closers.clear();
    int32_t stop = -1;
    for (int32_t id = 0; static_cast<size_t>(id) < vocabulary.size(); ++id) {
      if (!(mask[id / 32] >> (id % 32) & 1))
        continue;
      if (vocabulary.is_stop(id))
        stop = id;
      else
        allowed.push_back(id);
      if (closes(vocabulary.token_bytes(id)))
        closers.push_back(id);
    }
    bool long_text = text.size() > max_bytes / 2;
    if (stop >= 0 && (allowed.empty() || coin(random_) < (long_text ? 0.9 : 0.3))) {
      matcher.accept_token(stop);
      return text;
    }
    if (allowed.empty())
      throw std::logic_error("only a stop token is allowed, yet the grammar cannot end, after " + text);
    // Closers are also favoured a little early on, or strings would run to
    // hundreds of random characters.
    const std::vector<int32_t> &pool =
        !closers.empty() && coin(random_) < (long_text ? 0.8 : 0.05) ? closers : allowed;
    int32_t id = pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(random_)];
    if (!matcher.accept_token(id))
      throw std::logic_error("the matcher refused a token its mask allowed, after " + text);
    text += vocabulary.token_bytes(id);
    if (text.size() > max_bytes)
      return std::nullopt;
  }
}

} // namespace llmserve::grammar::sampling
