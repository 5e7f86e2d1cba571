// Small tokenizer.json documents built in code, for tests whose expected ids
// follow from the merges by hand.
#ifndef LLMSERVE_TEST_UNIT_TOKENIZER_TEST_TOKENIZERS_H
#define LLMSERVE_TEST_UNIT_TOKENIZER_TEST_TOKENIZERS_H

#include "tokenizer/bpe.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace llmserve::testing {

// SentencePiece-style (Llama 2 / Mistral layout): <unk> <s> </s>, the 256
// byte tokens <0x00>..<0xFF> (ids 3..258), then ▁ a b ▁a ab ▁ab.
inline nlohmann::json sentencepiece_json() {
  nlohmann::json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = 3 + b;
  }
  vocab["\u2581"] = 259;
  vocab["a"] = 260;
  vocab["b"] = 261;
  vocab["\u2581a"] = 262;
  vocab["ab"] = 263;
  vocab["\u2581ab"] = 264;
  return {
      {"added_tokens",
       {{{"id", 0}, {"content", "<unk>"}, {"special", true}, {"normalized", false}},
        {{"id", 1}, {"content", "<s>"}, {"special", true}, {"normalized", false}},
        {{"id", 2}, {"content", "</s>"}, {"special", true}, {"normalized", false}}}},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "\u2581"}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                    {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model",
       {{"type", "BPE"}, {"unk_token", "<unk>"}, {"fuse_unk", true}, {"byte_fallback", true},
        {"vocab", vocab},
        {"merges", {"\u2581 a", "a b", "\u2581a b"}}}},
  };
}

// Byte-level (GPT-2 layout): the 256 byte tokens (id = byte), then
// he ll hell hello Ġw (256..260), and <|endoftext|> (261).
inline nlohmann::json byte_level_json() {
  nlohmann::json vocab;
  for (int b = 0; b < 256; ++b)
    vocab[byte_level_char(static_cast<uint8_t>(b))] = b;
  vocab["he"] = 256;
  vocab["ll"] = 257;
  vocab["hell"] = 258;
  vocab["hello"] = 259;
  vocab["\u0120w"] = 260;
  nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false},
                               {"use_regex", true}};
  return {
      {"added_tokens",
       {{{"id", 261}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", byte_level},
      {"post_processor", byte_level},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"h e", "l l", "he ll", "hell o", "\u0120 w"}}}},
  };
}

} // namespace llmserve::testing

#endif
