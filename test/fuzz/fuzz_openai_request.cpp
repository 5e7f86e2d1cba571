// Bytes as the body of a /v1/completions and a /v1/chat/completions request,
// parsed as the server parses them: every field, structured output
// (response_format, structured_outputs) compiled against a small vocabulary,
// tools, logit_bias, the chat template. What a client sends may be refused
// with an ApiError (or std::invalid_argument, which the server also answers
// with 400), never anything else.
#include "server/openai_protocol.h"
#include "test_tokenizers.h"

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

using namespace llmserve;

namespace {

struct Model {
  Tokenizer tokenizer = Tokenizer::from_json(testing::sentencepiece_json().dump());
  // The shipped model's template: it renders tools and tool calls.
  ChatTemplate chat_template{shipped_template(), "<s>", "</s>"};
  std::shared_ptr<const grammar::Vocabulary> vocabulary = grammar::Vocabulary::from_tokenizer(tokenizer);

  static std::string shipped_template() {
    std::ifstream in(LLMSERVE_SOURCE_DIR "/examples/kjv-devil-tiny/tokenizer_config.json");
    std::stringstream text;
    text << in.rdbuf();
    return nlohmann::json::parse(text.str()).at("chat_template").get<std::string>();
  }
};

const Model &model() {
  static const Model m;
  return m;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string body(reinterpret_cast<const char *>(data), size);
  // A fresh cache, so that an input's outcome does not depend on the ones
  // before it.
  GrammarCache grammars(model().vocabulary, 4);
  ModelInfo info{"tiny", 64, &model().tokenizer, &model().chat_template, 16, &grammars};
  // Each tool-call format and thinking, picked by the length so that the
  // body stays a plain request.
  info.tool_call_format = static_cast<ToolCallFormat>(size % 3);
  info.thinks = size % 2;
  nlohmann::json parsed;
  try {
    parsed = parse_json_object(body);
  } catch (const ApiError &) {
    return 0;
  }
  for (Endpoint endpoint : {Endpoint::kCompletions, Endpoint::kChatCompletions}) {
    try {
      const GenerateRequest r = endpoint == Endpoint::kCompletions
                                    ? parse_completion_request(parsed, info, body)
                                    : parse_chat_request(parsed, info, body);
      r.submissions(info.max_model_len);
    } catch (const ApiError &) {
    } catch (const std::invalid_argument &) {
    }
  }
  return 0;
}
