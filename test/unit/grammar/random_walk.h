// Random texts of a grammar for the converters' property tests: a walk that
// at each step takes one of the tokens the matcher allows.
#ifndef LLMSERVE_TEST_UNIT_GRAMMAR_RANDOM_WALK_H
#define LLMSERVE_TEST_UNIT_GRAMMAR_RANDOM_WALK_H

#include "grammar/compiled_grammar.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>

namespace llmserve::grammar::sampling {

// The 256 single bytes, multi-byte tokens like a model's (`": "`, `true`,
// `\u00e9`, "日本", whitespace runs), and a stop token (the last id).
std::shared_ptr<const Vocabulary> walk_vocabulary();

class RandomWalk {
public:
  RandomWalk(std::shared_ptr<const CompiledGrammar> grammar, uint64_t seed);

  // A complete text of the grammar, or nullopt when the walk passes
  // `max_bytes` first. Past half of it, tokens that close strings, objects
  // and arrays are preferred. Throws std::logic_error when the matcher allows
  // nothing before the grammar can end (an engine or converter bug).
  std::optional<std::string> next(size_t max_bytes);

private:
  std::shared_ptr<const CompiledGrammar> grammar_;
  std::mt19937_64 random_;
};

} // namespace llmserve::grammar::sampling

#endif
