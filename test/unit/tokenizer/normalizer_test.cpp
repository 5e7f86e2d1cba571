#include "tokenizer/normalizer.h"

#include <gtest/gtest.h>

namespace llmserve {
namespace {

using nlohmann::json;

std::string normalize(const json &config, std::string_view text) {
  return Normalizer::from_json(config).normalize(text);
}

TEST(Normalizer, UnicodeForms) {
  EXPECT_EQ(normalize({{"type", "NFC"}}, "e\u0301 \ufb01"), "\u00e9 \ufb01");
  EXPECT_EQ(normalize({{"type", "NFD"}}, "\u00e9"), "e\u0301");
  EXPECT_EQ(normalize({{"type", "NFKC"}}, "\ufb01 \u2460"), "fi 1");
  EXPECT_EQ(normalize({{"type", "NFKD"}}, "\u00e9\u2460"), "e\u03011");
}

TEST(Normalizer, CaseStripAndAccents) {
  EXPECT_EQ(normalize({{"type", "Lowercase"}}, "\u0130STANBUL \u03a3"), "i\u0307stanbul \u03c3");
  EXPECT_EQ(normalize({{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}},
                      " \u3000a b \n"),
            "a b \n");
  EXPECT_EQ(normalize({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, "\t a \u2028"),
            "a");
  // Hugging Face's example: NFKD, then drop the marks.
  json sequence = {{"type", "Sequence"},
                   {"normalizers", {{{"type", "NFKD"}}, {{"type", "StripAccents"}}, {{"type", "Lowercase"}}}}};
  EXPECT_EQ(normalize(sequence, "C\u1ee5 th\u1ec3 \u0111i\u1ec1u \u1eadn\u2026"),
            "cu the \u0111ieu an...");
}

TEST(Normalizer, ReplaceAndPrepend) {
  json replace = {{"type", "Replace"}, {"pattern", {{"String", "''"}}}, {"content", "\""}};
  EXPECT_EQ(normalize(replace, "a ''test''"), "a \"test\"");
  replace["pattern"] = {{"Regex", "\\s+"}};
  replace["content"] = " ";
  EXPECT_EQ(normalize(replace, "This     is \n a"), "This is a");
  // Empty matches insert the content, as Hugging Face's replace does.
  replace["pattern"] = {{"Regex", "(?=B)"}};
  replace["content"] = "x";
  EXPECT_EQ(normalize(replace, "ABB"), "AxBxB");
  replace["pattern"] = {{"String", ""}};
  EXPECT_EQ(normalize(replace, "AB"), "xAxBx");
  EXPECT_EQ(normalize(replace, ""), "");
  EXPECT_EQ(normalize({{"type", "Prepend"}, {"prepend", "\u2581"}}, "a"), "\u2581a");
  EXPECT_EQ(normalize({{"type", "Prepend"}, {"prepend", "\u2581"}}, ""), "");
}

} // namespace
} // namespace llmserve
