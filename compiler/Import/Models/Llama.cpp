//===- Llama.cpp - The Llama family: llama, mistral, qwen2, qwen3 ---------===//
//
// Per layer: rms_norm → q/k/v linear (+bias for Qwen2 or attention_bias) →
// Qwen3's per-head rms_norm of q and k → rope → paged attention (GQA; a
// sliding window on the layers that have one) → o linear → rms_norm →
// gate/up linear → silu_mul → down linear; then the final rms_norm and the
// LM head, tied to the embedding with tie_word_embeddings.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/GraphBuilder.h"

using namespace mlir;
using namespace mlir::llmserve;

namespace {

class Llama : public Model {
public:
  static llvm::Expected<std::unique_ptr<Model>> read(const Config &config,
                                                     llvm::StringRef modelType);
  Value buildLogits(GraphBuilder &g) const override;

private:
  llvm::Error readSlidingWindow(const Config &config, llvm::StringRef modelType);

  int64_t intermediate = 0;
  double epsilon = 1e-6;
  bool tiedEmbeddings = false, qkvBias = false, outputBias = false, qkNorm = false;
  /// Per layer: the sliding window, if the layer has one.
  std::vector<std::optional<int64_t>> slidingWindow;
  RopeParams rope;
};

/// Mistral slides every layer's window; Qwen2 and Qwen3 only with
/// use_sliding_window, and only from layer max_window_layers on, unless
/// layer_types names each layer's attention.
llvm::Error Llama::readSlidingWindow(const Config &config,
                                     llvm::StringRef modelType) {
  const int64_t layers = shape_.layers;
  slidingWindow.assign(layers, std::nullopt);
  bool qwen = modelType == "qwen2" || modelType == "qwen3";
  if (modelType != "mistral" && !(qwen && config.boolean("use_sliding_window", false)))
    return llvm::Error::success();
  int64_t window;
  LLMSERVE_TRY_ASSIGN(window, config.integer("sliding_window", 0));
  if (window <= 0)
    return llvm::Error::success();
  int64_t firstSliding = 0;
  if (qwen)
    LLMSERVE_TRY_ASSIGN(firstSliding, config.integer("max_window_layers", layers));
  SmallVector<std::string> types = config.strings("layer_types");
  if (!types.empty() && static_cast<int64_t>(types.size()) != layers)
    return config.error("layer_types has " + llvm::Twine(types.size()) +
                        " entries for " + llvm::Twine(layers) + " layers");
  for (int64_t l = 0; l < layers; ++l) {
    bool sliding = l >= firstSliding;
    if (!types.empty()) {
      if (types[l] != "sliding_attention" && types[l] != "full_attention")
        return config.error("unsupported layer_types entry '" + types[l] +
                            "' (supported: full_attention, sliding_attention)");
      sliding = types[l] == "sliding_attention";
    }
    if (sliding)
      slidingWindow[l] = window;
  }
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Model>> Llama::read(const Config &config,
                                                   llvm::StringRef modelType) {
  auto model = std::make_unique<Llama>();
  ModelShape &m = model->shape_;
  m.architecture = "llama";
  if (llvm::Error error = readDecoderShape(config, m))
    return std::move(error);
  LLMSERVE_TRY_ASSIGN(model->intermediate, config.integer("intermediate_size"));
  LLMSERVE_TRY_ASSIGN(m.headDim, config.integer("head_dim", m.hidden / m.heads));
  LLMSERVE_TRY_ASSIGN(m.maxPositions, config.integer("max_position_embeddings", 2048));
  LLMSERVE_TRY_ASSIGN(model->epsilon, config.number("rms_norm_eps", 1e-6));
  LLMSERVE_TRY_ASSIGN(model->rope, readRope(config));
  model->tiedEmbeddings = config.boolean("tie_word_embeddings", false);
  std::string act = config.string("hidden_act", "silu");
  if (act != "silu")
    return config.error("unsupported hidden_act '" + act + "' (supported: silu)");
  if (config.boolean("mlp_bias", false))
    return config.error("mlp_bias is not supported");
  bool attentionBias = config.boolean("attention_bias", false);
  model->qkvBias = modelType == "qwen2" || attentionBias;
  model->outputBias = attentionBias;
  model->qkNorm = modelType == "qwen3";
  if (llvm::Error error = model->readSlidingWindow(config, modelType))
    return std::move(error);
  return model;
}

Value Llama::buildLogits(GraphBuilder &g) const {
  const ModelShape &m = shape_;
  Value x = g.embedding(g.weight("model.embed_tokens.weight", {m.vocab, m.hidden}),
                        "token_ids");
  Value residual;
  int64_t qWidth = m.heads * m.headDim, kvWidth = m.kvHeads * m.headDim;
  for (int64_t l = 0; l < m.layers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    Value normed;
    std::tie(normed, residual) = g.rmsNorm(
        x, residual, g.weight(p + "input_layernorm.weight", {m.hidden}), epsilon);
    auto proj = [&](const char *name, int64_t width, bool bias) {
      std::string base = p + "self_attn." + name;
      return g.linear(normed, g.weight(base + ".weight", {width, m.hidden}),
                      bias ? g.weight(base + ".bias", {width}) : Value());
    };
    // Qwen3 normalizes each head of q and k before the rotation.
    auto headNorm = [&](Value x, const char *name) {
      if (!qkNorm)
        return x;
      return g.rmsNorm(x, {}, g.weight(p + "self_attn." + name + ".weight", {m.headDim}),
                       epsilon)
          .first;
    };
    Value q = g.rope(headNorm(proj("q_proj", qWidth, qkvBias), "q_norm"), rope);
    Value k = g.rope(headNorm(proj("k_proj", kvWidth, qkvBias), "k_norm"), rope);
    Value v = proj("v_proj", kvWidth, qkvBias);
    Value attn = g.attention(l, q, k, v, slidingWindow[l]);
    Value o = g.linear(attn, g.weight(p + "self_attn.o_proj.weight", {m.hidden, qWidth}),
                       outputBias ? g.weight(p + "self_attn.o_proj.bias", {m.hidden})
                                  : Value());
    std::tie(normed, residual) = g.rmsNorm(
        o, residual, g.weight(p + "post_attention_layernorm.weight", {m.hidden}),
        epsilon);
    Value gate =
        g.linear(normed, g.weight(p + "mlp.gate_proj.weight", {intermediate, m.hidden}));
    Value up =
        g.linear(normed, g.weight(p + "mlp.up_proj.weight", {intermediate, m.hidden}));
    x = g.linear(g.siluMul(gate, up),
                 g.weight(p + "mlp.down_proj.weight", {m.hidden, intermediate}));
  }
  Value final =
      g.rmsNorm(x, residual, g.weight("model.norm.weight", {m.hidden}), epsilon).first;
  Value head = g.weight(tiedEmbeddings ? "model.embed_tokens.weight" : "lm_head.weight",
                        {m.vocab, m.hidden});
  return g.logits(final, head);
}

} // namespace

llvm::Expected<std::unique_ptr<Model>>
mlir::llmserve::readLlama(const Config &config, llvm::StringRef modelType) {
  return Llama::read(config, modelType);
}
