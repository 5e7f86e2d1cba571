// llmrun tokenize: one JSON string per input line to one JSON array of ids per
// output line (or the reverse with --decode), for debugging prompts and for
// checking parity with other tokenizer implementations.
#include "commands.h"

#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

namespace llmrun {
namespace {

struct Options {
  std::string tokenizer;
  bool decode = false, add_special = true, skip_special = false;
};

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

int tokenize(const Options &o) {
  auto tokenizer = llmserve::Tokenizer::from_file(o.tokenizer);
  std::string line;
  for (size_t number = 1; std::getline(std::cin, line); ++number) {
    try {
      auto input = nlohmann::json::parse(line);
      nlohmann::json output;
      if (o.decode) {
        output = tokenizer.decode(parse_ids(input), o.skip_special);
      } else {
        if (!input.is_string())
          throw std::invalid_argument("expected a JSON string");
        output = tokenizer.encode(input.get<std::string>(), o.add_special);
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

} // namespace

Command add_tokenize_command(CLI::App &llmrun) {
  auto o = std::make_shared<Options>();
  CLI::App *command = llmrun.add_subcommand(
      "tokenize", "encode JSON strings to ids (or decode) with a tokenizer");
  command->footer("Reads one JSON string per line from stdin and writes one JSON array of\n"
                  "token ids per line; with --decode, the reverse.");
  command->add_option("--tokenizer", o->tokenizer, "tokenizer.json or a directory holding it")
      ->type_name("PATH")
      ->required();
  command->add_flag("--decode", o->decode, "token ids in, text out");
  command->add_flag_callback("--no-special-tokens", [o] { o->add_special = false; },
                             "encode without the BOS/EOS the tokenizer adds");
  command->add_flag("--skip-special-tokens", o->skip_special, "decode without special tokens");
  return {command, [o] { return tokenize(*o); }};
}

} // namespace llmrun
