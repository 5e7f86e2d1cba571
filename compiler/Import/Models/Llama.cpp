//===- Llama.cpp - The Llama family: llama, mistral, qwen2 -----------------===//
//
// Per layer: rms_norm → q/k/v linear (+bias for Qwen2 or attention_bias) →
// rope → paged attention (GQA; Mistral's sliding window) → o linear →
// rms_norm → gate/up linear → silu_mul → down linear; then the final
// rms_norm and the LM head, tied to the embedding with tie_word_embeddings.
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
  int64_t intermediate = 0;
  double epsilon = 1e-6;
  bool tiedEmbeddings = false, qkvBias = false, outputBias = false;
  std::optional<int64_t> slidingWindow;
  RopeParams rope;
};

llvm::Expected<std::unique_ptr<Model>> Llama::read(const Config &config,
                                                   llvm::StringRef modelType) {
  auto model = std::make_unique<Llama>();
  ModelShape &m = model->shape_;
  m.architecture = "llama";
  LLMSERVE_TRY_ASSIGN(m.vocab, config.integer("vocab_size"));
  LLMSERVE_TRY_ASSIGN(m.hidden, config.integer("hidden_size"));
  LLMSERVE_TRY_ASSIGN(model->intermediate, config.integer("intermediate_size"));
  LLMSERVE_TRY_ASSIGN(m.layers, config.integer("num_hidden_layers"));
  LLMSERVE_TRY_ASSIGN(m.heads, config.integer("num_attention_heads"));
  LLMSERVE_TRY_ASSIGN(m.kvHeads, config.integer("num_key_value_heads", m.heads));
  if (m.heads <= 0 || m.kvHeads <= 0 || m.heads % m.kvHeads != 0)
    return config.error("num_attention_heads (" + llvm::Twine(m.heads) +
                        ") must be a positive multiple of num_key_value_heads (" +
                        llvm::Twine(m.kvHeads) + ")");
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
  // Mistral sets sliding_window; Qwen2 only uses it with use_sliding_window.
  bool window = modelType == "mistral" ||
                (modelType == "qwen2" && config.boolean("use_sliding_window", false));
  if (window) {
    int64_t w;
    LLMSERVE_TRY_ASSIGN(w, config.integer("sliding_window", 0));
    if (w > 0)
      model->slidingWindow = w;
  }
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
    Value q = g.rope(proj("q_proj", qWidth, qkvBias), rope);
    Value k = g.rope(proj("k_proj", kvWidth, qkvBias), rope);
    Value v = proj("v_proj", kvWidth, qkvBias);
    Value attn = g.attention(l, q, k, v, slidingWindow);
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
