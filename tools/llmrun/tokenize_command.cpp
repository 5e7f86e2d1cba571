// llmrun tokenize: one JSON string per input line to one JSON array of ids per
// output line (or the reverse with --decode), for debugging prompts and for
// checking parity with other tokenizer implementations.
#include "commands.h"

#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

namespace llmrun {
namespace {

const char kUsage[] =
    "usage: llmrun tokenize --tokenizer <tokenizer.json | directory> [--decode]\n"
    "                       [--no-special-tokens] [--skip-special-tokens]\n"
    "  Reads one JSON string per line from stdin and writes one JSON array of\n"
    "  token ids per line; with --decode, the reverse.\n"
    "  --no-special-tokens    encode without the BOS/EOS the tokenizer adds\n"
    "  --skip-special-tokens  decode without special tokens\n";

std::vector<int32_t> parse_ids(const nlohmann::json &line) {
  if (!line.is_array())
    throw std::invalid_argument("expected a JSON array of token ids");
  std::vector<int32_t> ids;
  for (const auto &id : line) {
    if (!id.is_number_integer() || id.get<int64_t>() < INT32_MIN ||
        id.get<int64_t>() > INT32_MAX)
      throw std::invalid_argument("expected a token id, got " + id.dump());
    ids.push_back(id.get<int32_t>());
  }
  return ids;
}

} // namespace

int tokenize_command(int argc, char **argv) {
  std::string path;
  bool decode = false, add_special = true, skip_special = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--tokenizer") && i + 1 < argc) {
      path = argv[++i];
    } else if (!std::strcmp(argv[i], "--decode")) {
      decode = true;
    } else if (!std::strcmp(argv[i], "--no-special-tokens")) {
      add_special = false;
    } else if (!std::strcmp(argv[i], "--skip-special-tokens")) {
      skip_special = true;
    } else if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "llmrun tokenize: unknown argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "llmrun tokenize: --tokenizer is required\n%s", kUsage);
    return 2;
  }
  auto tokenizer = llmserve::Tokenizer::from_file(path);
  std::string line;
  for (size_t number = 1; std::getline(std::cin, line); ++number) {
    try {
      auto input = nlohmann::json::parse(line);
      nlohmann::json output;
      if (decode) {
        output = tokenizer.decode(parse_ids(input), skip_special);
      } else {
        if (!input.is_string())
          throw std::invalid_argument("expected a JSON string");
        output = tokenizer.encode(input.get<std::string>(), add_special);
      }
      std::string text = output.dump() + "\n";
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    } catch (const std::exception &e) {
      throw std::runtime_error("stdin line " + std::to_string(number) + ": " + e.what());
    }
  }
  return 0;
}

} // namespace llmrun
