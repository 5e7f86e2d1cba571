#include "server/grammar_cache.h"

#include "grammar/grammar.h"

namespace llmserve {

GrammarCache::GrammarCache(std::shared_ptr<const grammar::Vocabulary> vocabulary,
                           size_t capacity)
    : vocabulary_(std::move(vocabulary)), capacity_(capacity) {}

std::shared_ptr<const grammar::CompiledGrammar> GrammarCache::get(const std::string &gbnf) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = index_.find(gbnf); it != index_.end()) {
      recent_.splice(recent_.begin(), recent_, it->second);
      return it->second->second;
    }
  }
  // Compiled outside the lock: a slow grammar delays only its own request.
  auto compiled = grammar::compile(grammar::Grammar::parse(gbnf), vocabulary_);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = index_.find(gbnf); it != index_.end())
    return it->second->second; // another thread compiled it meanwhile
  recent_.emplace_front(gbnf, compiled);
  index_.emplace(gbnf, recent_.begin());
  if (recent_.size() > capacity_) {
    index_.erase(recent_.back().first);
    recent_.pop_back();
  }
  return compiled;
}

} // namespace llmserve
