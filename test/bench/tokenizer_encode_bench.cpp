// Encode throughput of llmserve::Tokenizer on one thread: the timing half of
// tokenizer_bench.js, which runs Hugging Face's tokenizer on the same corpus.
// usage: tokenizer_encode_bench <tokenizer.json> <corpus.jsonl> [passes]
// Prints one JSON object: bytes, tokens, best and first-pass seconds.
#include "cli/command_line.h"
#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  CLI::App app{"Encode throughput of llmserve::Tokenizer on one thread.",
               "tokenizer_encode_bench"};
  std::string tokenizer_path, corpus_path;
  int passes = 5;
  app.add_option("tokenizer", tokenizer_path, "tokenizer.json")->type_name("FILE")->required();
  app.add_option("corpus", corpus_path, "one JSON string per line")
      ->type_name("FILE")
      ->required();
  llmserve::cli::integer_in(
      app.add_option("passes", passes, "times to encode the corpus")->capture_default_str(),
      1, 1 << 20);
  if (std::optional<int> status = llmserve::cli::parse(app, argc, argv))
    return *status;
  try {
    auto tokenizer = llmserve::Tokenizer::from_file(tokenizer_path);
    std::ifstream in(corpus_path);
    if (!in)
      throw std::runtime_error("cannot open " + corpus_path);
    std::vector<std::string> docs;
    size_t bytes = 0;
    for (std::string line; std::getline(in, line);) {
      docs.push_back(nlohmann::json::parse(line).get<std::string>());
      bytes += docs.back().size();
    }
    double best = 1e30, first = 0;
    size_t tokens = 0;
    for (int pass = 0; pass < passes; ++pass) {
      auto start = std::chrono::steady_clock::now();
      tokens = 0;
      for (const auto &doc : docs)
        tokens += tokenizer.encode(doc, true).size();
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (pass == 0)
        first = seconds;
      best = std::min(best, seconds);
    }
    std::printf("{\"bytes\": %zu, \"tokens\": %zu, \"best_s\": %.6f, \"first_s\": %.6f}\n",
                bytes, tokens, best, first);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tokenizer_encode_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
