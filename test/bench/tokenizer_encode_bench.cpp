// Encode throughput of llmserve::Tokenizer on one thread: the timing half of
// tokenizer_bench.js, which runs Hugging Face's tokenizer on the same corpus.
// usage: tokenizer_encode_bench <tokenizer.json> <corpus.jsonl> [passes]
// Prints one JSON object: bytes, tokens, best and first-pass seconds.
#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <tokenizer.json> <corpus.jsonl> [passes]\n", argv[0]);
    return 2;
  }
  int passes = argc > 3 ? std::atoi(argv[3]) : 5;
  try {
    auto tokenizer = llmserve::Tokenizer::from_file(argv[1]);
    std::ifstream in(argv[2]);
    if (!in)
      throw std::runtime_error(std::string("cannot open ") + argv[2]);
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
