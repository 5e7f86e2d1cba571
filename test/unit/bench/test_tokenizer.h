// A small SentencePiece-style BPE tokenizer for the benchmark tests: letters,
// '▁' for spaces, a few merges (so decoding random ids and encoding the text
// back can change the token count), the two byte-fallback tokens of 'é'
// (neither is text alone), and <s> added in front of every prompt.
#ifndef LLMSERVE_TEST_UNIT_BENCH_TEST_TOKENIZER_H
#define LLMSERVE_TEST_UNIT_BENCH_TEST_TOKENIZER_H

#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <string>

namespace llmserve::bench::testing {

inline Tokenizer make_test_tokenizer() {
  nlohmann::json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}, {"\u2581", 3}};
  for (char c = 'a'; c <= 'z'; ++c)
    vocab[std::string(1, c)] = static_cast<int>(vocab.size());
  vocab["<0xC3>"] = static_cast<int>(vocab.size());
  vocab["<0xA9>"] = static_cast<int>(vocab.size());
  const char *merges[] = {"\u2581 a", "\u2581 t", "t h", "a n", "e r"};
  nlohmann::json merge_list = nlohmann::json::array();
  for (const char *m : merges) {
    merge_list.push_back(m);
    const std::string merge = m;
    vocab[merge.substr(0, merge.find(' ')) + merge.substr(merge.find(' ') + 1)] =
        static_cast<int>(vocab.size());
  }
  nlohmann::json added = nlohmann::json::array();
  for (auto [id, text] : {std::pair{0, "<unk>"}, {1, "<s>"}, {2, "</s>"}})
    added.push_back({{"id", id}, {"content", text}, {"single_word", false},
                     {"lstrip", false}, {"rstrip", false}, {"normalized", false},
                     {"special", true}});
  const nlohmann::json tokenizer = {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                    {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                  {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                  {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}}}}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", "<unk>"},
        {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
        {"fuse_unk", false}, {"byte_fallback", true}, {"vocab", vocab},
        {"merges", merge_list}}}};
  return Tokenizer::from_json(tokenizer.dump());
}

} // namespace llmserve::bench::testing

#endif
