// Random texts of the converters' grammars, as JSON lines for
// test/grammar/validate.py to check against the schemas and patterns:
//
//   grammar_sample schema [--count N] [--seed S] FILE...  a JSON schema per file
//   grammar_sample regex [--count N] [--seed S] FILE      a JSON array of patterns
//
// Each line is {"source": ..., "text": ...} for a text, {"source": ...,
// "error": ...} when the converter refuses the source or a walk fails, and
// {"source": ..., "texts": n, "abandoned": k} after a source's texts (walks
// abandoned at the length bound are counted, not failures).
#include "grammar/json_schema.h"
#include "grammar/regex_to_gbnf.h"
#include "random_walk.h"
#include "tokenizer/unicode.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace llmserve::grammar;
using Json = nlohmann::ordered_json;

constexpr size_t kMaxBytes = 4096;

void print(const Json &line) { std::cout << line.dump() << "\n"; }

void sample(const std::string &source, const std::string &gbnf, size_t count, uint64_t seed) {
  sampling::RandomWalk walk(compile(Grammar::parse(gbnf), sampling::walk_vocabulary()), seed);
  size_t texts = 0, abandoned = 0;
  for (size_t attempt = 0; texts < count && attempt < 4 * count; ++attempt) {
    std::optional<std::string> text = walk.next(kMaxBytes);
    if (!text) {
      ++abandoned;
      continue;
    }
    if (llmserve::unicode::valid_utf8_prefix(*text) != text->size())
      print({{"source", source}, {"error", "a text is not valid UTF-8"}});
    else
      print({{"source", source}, {"text", *text}});
    ++texts;
  }
  print({{"source", source}, {"texts", texts}, {"abandoned", abandoned}});
}

void sample_safely(const std::string &source, const std::function<std::string()> &gbnf, size_t count,
                   uint64_t seed) {
  try {
    sample(source, gbnf(), count, seed);
  } catch (const std::exception &e) {
    print({{"source", source}, {"error", e.what()}});
  }
}

std::string read(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || (args[0] != "schema" && args[0] != "regex")) {
    std::cerr << "usage: grammar_sample schema|regex [--count N] [--seed S] FILE...\n";
    return 2;
  }
  size_t count = 20;
  uint64_t seed = 1;
  std::vector<std::string> files;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--count" && i + 1 < args.size())
      count = std::stoul(args[++i]);
    else if (args[i] == "--seed" && i + 1 < args.size())
      seed = std::stoull(args[++i]);
    else
      files.push_back(args[i]);
  }
  for (size_t f = 0; f < files.size(); ++f) {
    if (args[0] == "schema") {
      sample_safely(files[f], [&] { return json_schema_to_gbnf(Json::parse(read(files[f]))); }, count, seed + f);
      continue;
    }
    Json patterns = Json::parse(read(files[f]));
    for (size_t p = 0; p < patterns.size(); ++p) {
      std::string pattern = patterns[p].get<std::string>();
      sample_safely(pattern, [&] { return regex_to_gbnf(pattern); }, count, seed + p);
    }
  }
  return 0;
}
