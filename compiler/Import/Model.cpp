//===- Model.cpp - The model families and what they share ------------------===//

#include "compiler/Import/Model.h"

using namespace mlir;
using namespace mlir::llmserve;

ArrayRef<ModelFamily> mlir::llmserve::modelFamilies() {
  static const ModelFamily families[] = {
      {"llama", readLlama},
      {"mistral", readLlama},
      {"qwen2", readLlama},
      {"qwen3", readLlama},
      {"qwen3_moe", readLlama},
      {"mixtral", readLlama},
      {"gemma2", readGemma},
      {"gemma3_text", readGemma},
      {"gpt2", readGpt2},
      {"phi3", readPhi3},
  };
  return families;
}

llvm::Error mlir::llmserve::readDecoderShape(const Config &config, ModelShape &m) {
  LLMSERVE_TRY_ASSIGN(m.vocab, config.integer("vocab_size"));
  LLMSERVE_TRY_ASSIGN(m.hidden, config.integer("hidden_size"));
  LLMSERVE_TRY_ASSIGN(m.layers, config.integer("num_hidden_layers"));
  LLMSERVE_TRY_ASSIGN(m.heads, config.integer("num_attention_heads"));
  LLMSERVE_TRY_ASSIGN(m.kvHeads, config.integer("num_key_value_heads", m.heads));
  if (m.heads <= 0 || m.kvHeads <= 0 || m.heads % m.kvHeads != 0)
    return config.error("num_attention_heads (" + llvm::Twine(m.heads) +
                        ") must be a positive multiple of num_key_value_heads (" +
                        llvm::Twine(m.kvHeads) + ")");
  return llvm::Error::success();
}

llvm::Expected<RopeParams> mlir::llmserve::readRope(const Config &config) {
  RopeParams rope;
  LLMSERVE_TRY_ASSIGN(rope.theta, config.number("rope_theta", 10000));
  const llvm::json::Object *scaling = config.nested("rope_scaling");
  if (!scaling)
    return rope;
  std::string type = scaling->getString("rope_type")
                         .value_or(scaling->getString("type").value_or(""))
                         .str();
  Config s(*scaling, config.file() + ": rope_scaling");
  LLMSERVE_TRY_ASSIGN(rope.factor, s.number("factor", 1));
  if (type == "default")
    return rope;
  if (type == "linear") {
    rope.scaling = RopeScaling::linear;
    return rope;
  }
  if (type == "llama3") {
    rope.scaling = RopeScaling::llama3;
    LLMSERVE_TRY_ASSIGN(rope.lowFreqFactor, s.number("low_freq_factor", 1));
    LLMSERVE_TRY_ASSIGN(rope.highFreqFactor, s.number("high_freq_factor", 4));
    LLMSERVE_TRY_ASSIGN(rope.originalMaxPosition,
                        s.integer("original_max_position_embeddings"));
    return rope;
  }
  return config.error("unsupported rope_scaling type '" + type +
                      "' (supported: default, linear, llama3)");
}
