//===- Gemma.cpp - Gemma 2 and Gemma 3 (text) ------------------------------===//
//
// Embeddings times sqrt(hidden_size) (rounded to the checkpoint's dtype, as
// transformers computes it); per layer four RMSNorms of (1 + weight):
// input_layernorm → q/k/v linear → (Gemma 3) per-head q_norm and k_norm →
// rope → paged attention scaled by query_pre_attn_scalar^-0.5 and
// soft-capped by attn_logit_softcapping → o linear →
// post_attention_layernorm, added to the residual stream →
// pre_feedforward_layernorm → GeGLU MLP (gelu_pytorch_tanh) →
// post_feedforward_layernorm, added to the stream; the final norm, the LM
// head (tied by default) and final_logit_softcapping. Layers alternate
// sliding-window and global attention: Gemma 2 every other layer, Gemma 3
// all but every sliding_window_pattern-th (or as layer_types says). Gemma
// 3's sliding layers take the RoPE of rope_local_base_freq, its global ones
// rope_theta and rope_scaling.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/GraphBuilder.h"

#include "llvm/ADT/APFloat.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;

namespace {

class Gemma : public Model {
public:
  static llvm::Expected<std::unique_ptr<Model>> read(const Config &config,
                                                     llvm::StringRef modelType);
  Value buildLogits(GraphBuilder &g) const override;

private:
  llvm::Error readLayerTypes(const Config &config, int64_t defaultPattern);

  int64_t intermediate = 0;
  double epsilon = 1e-6, attentionScale = 0, embeddingScale = 1;
  bool tiedEmbeddings = true, qkNorm = true;
  std::optional<double> attentionSoftcap, finalSoftcap;
  GeluApproximation gelu = GeluApproximation::tanh;
  int64_t slidingWindow = 0;
  /// Per layer: whether it slides a window (and takes the local RoPE).
  std::vector<bool> sliding;
  RopeParams globalRope, localRope;
};

/// sqrt(hidden) as transformers multiplies by it: a tensor of the
/// embedding's dtype.
double embeddingScaleFor(int64_t hidden, llvm::StringRef dtype) {
  double scale = std::sqrt(static_cast<double>(hidden));
  const llvm::fltSemantics *semantics = dtype == "bfloat16" ? &llvm::APFloat::BFloat()
                                        : dtype == "float16" ? &llvm::APFloat::IEEEhalf()
                                                             : &llvm::APFloat::IEEEsingle();
  llvm::APFloat rounded(scale);
  bool lost;
  rounded.convert(*semantics, llvm::APFloat::rmNearestTiesToEven, &lost);
  return rounded.convertToDouble();
}

/// A soft-capping value of config.json: absent, null or 0 for none.
llvm::Expected<std::optional<double>> readSoftcap(const Config &config,
                                                  llvm::StringRef key) {
  double cap;
  LLMSERVE_TRY_ASSIGN(cap, config.number(key, 0));
  if (cap < 0 || !std::isfinite(cap))
    return config.error(key + " must be positive");
  return cap == 0 ? std::nullopt : std::optional<double>(cap);
}

llvm::Error Gemma::readLayerTypes(const Config &config, int64_t defaultPattern) {
  const int64_t layers = shape_.layers;
  SmallVector<std::string> types = config.strings("layer_types");
  if (!types.empty()) {
    if (static_cast<int64_t>(types.size()) != layers)
      return config.error("layer_types has " + llvm::Twine(types.size()) +
                          " entries for " + llvm::Twine(layers) + " layers");
    for (const std::string &type : types) {
      if (type != "sliding_attention" && type != "full_attention")
        return config.error("unsupported layer_types entry '" + type +
                            "' (supported: full_attention, sliding_attention)");
      sliding.push_back(type == "sliding_attention");
    }
    return llvm::Error::success();
  }
  // Every pattern-th layer is global, the others slide.
  int64_t pattern;
  LLMSERVE_TRY_ASSIGN(pattern, config.integer("sliding_window_pattern", defaultPattern));
  if (pattern < 1)
    return config.error("sliding_window_pattern must be positive, got " +
                        llvm::Twine(pattern));
  for (int64_t l = 0; l < layers; ++l)
    sliding.push_back((l + 1) % pattern != 0);
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Model>> Gemma::read(const Config &config,
                                                   llvm::StringRef modelType) {
  auto model = std::make_unique<Gemma>();
  const bool gemma3 = modelType == "gemma3_text";
  ModelShape &m = model->shape_;
  m.architecture = modelType.str();
  model->qkNorm = gemma3;
  if (llvm::Error error = readDecoderShape(config, m))
    return std::move(error);
  LLMSERVE_TRY_ASSIGN(model->intermediate, config.integer("intermediate_size"));
  LLMSERVE_TRY_ASSIGN(m.headDim, config.integer("head_dim", 256));
  LLMSERVE_TRY_ASSIGN(m.maxPositions,
                      config.integer("max_position_embeddings", gemma3 ? 131072 : 8192));
  LLMSERVE_TRY_ASSIGN(model->epsilon, config.number("rms_norm_eps", 1e-6));
  double queryScalar;
  LLMSERVE_TRY_ASSIGN(queryScalar, config.number("query_pre_attn_scalar", 256));
  if (!(queryScalar > 0))
    return config.error("query_pre_attn_scalar must be positive");
  model->attentionScale = 1.0 / std::sqrt(queryScalar);
  model->tiedEmbeddings = config.boolean("tie_word_embeddings", true);
  model->embeddingScale =
      embeddingScaleFor(m.hidden, config.string("torch_dtype", "float32"));

  std::string act = config.string("hidden_activation", "gelu_pytorch_tanh");
  if (act == "gelu_pytorch_tanh" || act == "gelu_new")
    model->gelu = GeluApproximation::tanh;
  else if (act == "gelu")
    model->gelu = GeluApproximation::none;
  else
    return config.error("unsupported hidden_activation '" + act +
                        "' (supported: gelu_pytorch_tanh, gelu_new, gelu)");
  if (config.boolean("attention_bias", false))
    return config.error("attention_bias is not supported");
  if (config.boolean("use_bidirectional_attention", false))
    return config.error("use_bidirectional_attention is not supported");
  LLMSERVE_TRY_ASSIGN(model->attentionSoftcap, readSoftcap(config, "attn_logit_softcapping"));
  LLMSERVE_TRY_ASSIGN(model->finalSoftcap, readSoftcap(config, "final_logit_softcapping"));

  LLMSERVE_TRY_ASSIGN(model->slidingWindow, config.integer("sliding_window", 4096));
  if (model->slidingWindow < 1)
    return config.error("sliding_window must be positive");
  if (llvm::Error error = model->readLayerTypes(config, gemma3 ? 6 : 2))
    return std::move(error);
  // Global layers: rope_theta and rope_scaling; Gemma 3's sliding ones the
  // local base frequency without scaling, Gemma 2's the same as global.
  LLMSERVE_TRY_ASSIGN(model->globalRope, readRope(config));
  model->localRope = model->globalRope;
  if (gemma3) {
    model->localRope = RopeParams();
    LLMSERVE_TRY_ASSIGN(model->localRope.theta, config.number("rope_local_base_freq", 10000));
  }
  return model;
}

Value Gemma::buildLogits(GraphBuilder &g) const {
  const ModelShape &m = shape_;
  constexpr double kUnitOffset = 1; // Gemma's norms multiply by 1 + weight
  auto norm = [&](Value x, Value residual, const std::string &name, int64_t width) {
    return g.rmsNorm(x, residual, g.weight(name, {width}), epsilon, kUnitOffset);
  };
  Value table = g.weight("model.embed_tokens.weight", {m.vocab, m.hidden});
  Value x = g.embedding(table, "token_ids", embeddingScale);
  Value residual;
  int64_t qWidth = m.heads * m.headDim, kvWidth = m.kvHeads * m.headDim;
  for (int64_t l = 0; l < m.layers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    Value normed;
    std::tie(normed, residual) = norm(x, residual, p + "input_layernorm.weight", m.hidden);
    const RopeParams &rope = sliding[l] ? localRope : globalRope;
    auto projection = [&](const char *name, const char *normName, int64_t width) {
      Value y = g.linear(normed, g.weight(p + "self_attn." + name + ".weight", {width, m.hidden}));
      if (qkNorm)
        y = norm(y, {}, p + "self_attn." + normName + ".weight", m.headDim).first;
      return g.rope(y, rope);
    };
    Value q = projection("q_proj", "q_norm", qWidth);
    Value k = projection("k_proj", "k_norm", kvWidth);
    Value v = g.linear(normed, g.weight(p + "self_attn.v_proj.weight", {kvWidth, m.hidden}));
    std::optional<int64_t> window;
    if (sliding[l])
      window = slidingWindow;
    Value attn = g.attention(l, q, k, v, window, attentionScale, attentionSoftcap);
    Value o = g.linear(attn, g.weight(p + "self_attn.o_proj.weight", {m.hidden, qWidth}));
    o = norm(o, {}, p + "post_attention_layernorm.weight", m.hidden).first;
    std::tie(normed, residual) =
        norm(o, residual, p + "pre_feedforward_layernorm.weight", m.hidden);
    Value gate =
        g.linear(normed, g.weight(p + "mlp.gate_proj.weight", {intermediate, m.hidden}));
    Value up = g.linear(normed, g.weight(p + "mlp.up_proj.weight", {intermediate, m.hidden}));
    Value mlp = g.linear(g.geluMul(gate, up, gelu),
                         g.weight(p + "mlp.down_proj.weight", {m.hidden, intermediate}));
    x = norm(mlp, {}, p + "post_feedforward_layernorm.weight", m.hidden).first;
  }
  Value final = norm(x, residual, "model.norm.weight", m.hidden).first;
  Value head = tiedEmbeddings ? table : g.weight("lm_head.weight", {m.vocab, m.hidden});
  Value logits = g.logits(final, head);
  return finalSoftcap ? g.softcap(logits, *finalSoftcap) : logits;
}

} // namespace

llvm::Expected<std::unique_ptr<Model>>
mlir::llmserve::readGemma(const Config &config, llvm::StringRef modelType) {
  return Gemma::read(config, modelType);
}
