// Proves the hand-written matchers of the known split regexes equal to
// Oniguruma: splits every document of a corpus with both and requires the
// same pieces. Run by test/tokenizer/parity.js on its corpus.
// usage: fast_path_parity <corpus.jsonl>   (one JSON string per line)
#include "tokenizer/known_patterns.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  using namespace llmserve;
  if (argc != 2) {
    std::fprintf(stderr, "usage: fast_path_parity <corpus.jsonl>\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  std::vector<std::string> docs;
  for (std::string line; std::getline(in, line);)
    docs.push_back(nlohmann::json::parse(line).get<std::string>());
  if (docs.empty()) {
    std::fprintf(stderr, "fast_path_parity: no documents in %s\n", argv[1]);
    return 2;
  }
  const char *names[] = {"GPT-2", "Llama 3 (cl100k)", "Qwen2", "GPT-4o (o200k)"};
  int failures = 0;
  for (KnownPattern pattern : kKnownPatterns) {
    Regex regex(known_pattern_regex(pattern));
    size_t pieces = 0, mismatches = 0;
    for (size_t i = 0; i < docs.size(); ++i) {
      std::vector<Span> fast, oniguruma;
      match_known(pattern, docs[i], fast);
      regex.find_all(docs[i], oniguruma);
      pieces += fast.size();
      size_t n = std::min(fast.size(), oniguruma.size()), at = 0;
      while (at < n && fast[at].start == oniguruma[at].start && fast[at].end == oniguruma[at].end)
        ++at;
      if (at == n && fast.size() == oniguruma.size())
        continue;
      if (++mismatches <= 5)
        std::printf("MISMATCH %s doc %zu piece %zu: fast [%zu, %zu), Oniguruma [%zu, %zu)\n",
                    names[static_cast<int>(pattern)], i, at, at < fast.size() ? fast[at].start : 0,
                    at < fast.size() ? fast[at].end : 0,
                    at < oniguruma.size() ? oniguruma[at].start : 0,
                    at < oniguruma.size() ? oniguruma[at].end : 0);
    }
    std::printf("%s pattern: %zu documents, %zu pieces, %s\n", names[static_cast<int>(pattern)],
                docs.size(), pieces, mismatches ? "MISMATCHES" : "fast path = Oniguruma");
    failures += mismatches != 0;
  }
  return failures ? 1 : 0;
}
