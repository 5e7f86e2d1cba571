// A bundle loaded for serving: the executor over it (CPU or CUDA, from the
// bundle's target and --device), its tokenizer and chat template, and what
// start-up reports about it.
#ifndef LLMSERVE_SERVER_SERVED_MODEL_H
#define LLMSERVE_SERVER_SERVED_MODEL_H

#include "grammar/vocabulary.h"
#include "server/model_executor.h"
#include "server/serve_options.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace llmserve {

struct ServedModel {
  // Loads options.bundle_dir (weights from options.weights_dir when given)
  // and the tokenizer.json / tokenizer_config.json it carries. Throws
  // naming the file at fault; a bundle without a model config is refused,
  // as is a bundle whose target does not match options.device.
  explicit ServedModel(const ServeOptions &options);

  // The engine configuration for this model: make_engine_config over the
  // executor's KV memory, with the tokenizer's EOS ids
  // (generation_config.json) added to the model's.
  EngineConfig engine_config(const ServeOptions &options) const;

  // The vocabulary structured output masks: each of the model's logits as
  // the bytes its token adds (none past the tokenizer's tokens), and
  // `config`'s EOS ids as the tokens that end the output.
  std::shared_ptr<const grammar::Vocabulary> grammar_vocabulary(const EngineConfig &config) const;

  std::string name; // --served-model-name, else the bundle directory's stem
  ModelExecutor loaded;
  Executor &executor;
  ModelConfig config;
  int64_t num_parameters; // elements of distinct weight tensors
  Tokenizer tokenizer;
  std::optional<ChatTemplate> chat_template; // absent: no chat endpoint
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_SERVED_MODEL_H
