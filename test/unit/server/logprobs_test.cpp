#include "server/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>

namespace llmserve {
namespace {

using nlohmann::json;

const std::vector<TokenLogprob> kTokens = {
    {"He", -0.25f, 0, {{"He", -0.25f}, {"She", -1.5f}}},
    {"llo", -INFINITY, 2, {{"y", -0.5f}}},
    {"\xC3\xA9", -2.0f, 5, {}},
};

TEST(Logprobs, CompletionsShape) {
  json got = completion_logprobs(kTokens);
  EXPECT_EQ(got["tokens"], json({"He", "llo", "\xC3\xA9"}));
  EXPECT_EQ(got["token_logprobs"], json({-0.25, -9999.0, -2.0})) << "no infinity in JSON";
  EXPECT_EQ(got["text_offset"], json({0, 2, 5}));
  // The top tokens and the sampled one, keyed by text.
  EXPECT_EQ(got["top_logprobs"][0], json({{"He", -0.25}, {"She", -1.5}}));
  EXPECT_EQ(got["top_logprobs"][1], json({{"y", -0.5}, {"llo", -9999.0}}));
  EXPECT_EQ(got["top_logprobs"][2], json({{"\xC3\xA9", -2.0}}));
}

TEST(Logprobs, ChatShape) {
  json got = chat_logprobs(kTokens);
  ASSERT_EQ(got["content"].size(), 3u);
  EXPECT_EQ(got["content"][0],
            json({{"token", "He"},
                  {"logprob", -0.25},
                  {"bytes", {72, 101}},
                  {"top_logprobs",
                   {{{"token", "He"}, {"logprob", -0.25}, {"bytes", {72, 101}}},
                    {{"token", "She"}, {"logprob", -1.5}, {"bytes", {83, 104, 101}}}}}}));
  EXPECT_EQ(got["content"][2]["bytes"], json({0xC3, 0xA9}));
  EXPECT_EQ(got["content"][2]["top_logprobs"], json::array());
}

TEST(Logprobs, CountsCharactersLikePython) {
  EXPECT_EQ(num_characters(""), 0);
  EXPECT_EQ(num_characters("abc"), 3);
  EXPECT_EQ(num_characters("\xC3\xA9t\xE2\x82\xAC\xF0\x9F\x98\x80"), 4); // é t € 😀
}

} // namespace
} // namespace llmserve
