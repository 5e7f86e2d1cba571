// Compiled grammars by their GBNF text, so that requests with the same
// response format share one (compiling walks the whole vocabulary). A
// bounded LRU, safe to use from every HTTP thread.
#ifndef LLMSERVE_SERVER_GRAMMAR_CACHE_H
#define LLMSERVE_SERVER_GRAMMAR_CACHE_H

#include "grammar/compiled_grammar.h"
#include "grammar/vocabulary.h"

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace llmserve {

class GrammarCache {
public:
  GrammarCache(std::shared_ptr<const grammar::Vocabulary> vocabulary, size_t capacity);

  // The grammar compiled against the vocabulary. Throws
  // grammar::GrammarError for a malformed or too complex grammar.
  std::shared_ptr<const grammar::CompiledGrammar> get(const std::string &gbnf);

  const grammar::Vocabulary &vocabulary() const { return *vocabulary_; }

private:
  using Entry = std::pair<std::string, std::shared_ptr<const grammar::CompiledGrammar>>;

  std::shared_ptr<const grammar::Vocabulary> vocabulary_;
  size_t capacity_;
  std::mutex mutex_;
  std::list<Entry> recent_; // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_GRAMMAR_CACHE_H
