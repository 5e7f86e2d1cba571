//===- Llama.cpp - The Llama family and its mixtures of experts -----------===//
//
// llama, mistral, qwen2, qwen3, and the mixture-of-experts models built on
// them: mixtral (Mistral's attention) and qwen3_moe (Qwen3's).
//
// Per layer: rms_norm → q/k/v linear (+bias for Qwen2 or attention_bias) →
// Qwen3's per-head rms_norm of q and k → rope → paged attention (GQA; a
// sliding window on the layers that have one) → o linear → rms_norm → the
// MLP; then the final rms_norm and the LM head, tied to the embedding with
// tie_word_embeddings. The MLP is gate/up linear → silu_mul → down linear,
// or on a sparse layer the same per expert: router linear → moe_router
// (softmax, top k) → gate/up expert_linear → silu_mul → down expert_linear
// → moe_combine.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/GraphBuilder.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;

namespace {

class Llama : public Model {
public:
  static llvm::Expected<std::unique_ptr<Model>> read(const Config &config,
                                                     llvm::StringRef modelType);
  Value buildLogits(GraphBuilder &g) const override;

private:
  /// A sparse layer's experts and their tensors (the names of one expert's
  /// have "{}" where its index goes).
  struct Experts {
    int64_t count = 0, topK = 0, intermediate = 0;
    bool normalized = false;
    std::string router, gate, up, down;
  };

  llvm::Error readSlidingWindow(const Config &config, llvm::StringRef modelType);
  llvm::Error readExperts(const Config &config, llvm::StringRef modelType);
  Value denseMlp(GraphBuilder &g, const std::string &prefix, Value x) const;
  Value sparseMlp(GraphBuilder &g, const std::string &prefix, Value x) const;

  int64_t intermediate = 0;
  Experts experts;
  /// Per layer: whether its MLP is the experts'.
  std::vector<bool> sparse;
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
  bool qwen = modelType == "qwen2" || modelType == "qwen3" || modelType == "qwen3_moe";
  bool mistral = modelType == "mistral" || modelType == "mixtral";
  if (!mistral && !(qwen && config.boolean("use_sliding_window", false)))
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

/// Mixtral: every layer sparse, block_sparse_moe's experts w1 (gate), w3
/// (up) and w2 (down), weights renormalized over the top k. Qwen3-MoE: the
/// layers past every decoder_sparse_step-th, except mlp_only_layers, with
/// mlp's experts and norm_topk_prob. Both score with a softmax.
llvm::Error Llama::readExperts(const Config &config, llvm::StringRef modelType) {
  const int64_t layers = shape_.layers;
  sparse.assign(layers, false);
  bool mixtral = modelType == "mixtral";
  if (!mixtral && modelType != "qwen3_moe")
    return llvm::Error::success();
  Experts &x = experts;
  const char *countKey = mixtral ? "num_local_experts" : "num_experts";
  LLMSERVE_TRY_ASSIGN(x.count, config.integer(countKey));
  LLMSERVE_TRY_ASSIGN(x.topK, config.integer("num_experts_per_tok"));
  if (mixtral) {
    x.intermediate = intermediate;
    x.normalized = true;
    x.router = "block_sparse_moe.gate.weight";
    x.gate = "block_sparse_moe.experts.{}.w1.weight";
    x.up = "block_sparse_moe.experts.{}.w3.weight";
    x.down = "block_sparse_moe.experts.{}.w2.weight";
  } else {
    LLMSERVE_TRY_ASSIGN(x.intermediate, config.integer("moe_intermediate_size"));
    x.normalized = config.boolean("norm_topk_prob", false);
    x.router = "mlp.gate.weight";
    x.gate = "mlp.experts.{}.gate_proj.weight";
    x.up = "mlp.experts.{}.up_proj.weight";
    x.down = "mlp.experts.{}.down_proj.weight";
  }
  std::string scoring = config.string("scoring_func", "softmax");
  if (scoring != "softmax")
    return config.error("unsupported scoring_func '" + scoring + "' (supported: softmax)");
  if (mixtral && x.count <= 0)
    return config.error(llvm::Twine(countKey) + " must be positive, got " +
                        llvm::Twine(x.count));
  if (x.count < 0)
    return config.error(llvm::Twine(countKey) + " must not be negative, got " +
                        llvm::Twine(x.count));
  if (x.count == 0) // Qwen3-MoE without experts: every layer dense.
    return llvm::Error::success();
  if (x.topK <= 0 || x.topK > x.count)
    return config.error("num_experts_per_tok (" + llvm::Twine(x.topK) +
                        ") must be between 1 and the " + llvm::Twine(x.count) +
                        " experts of " + countKey);
  if (x.intermediate <= 0)
    return config.error("the experts' intermediate size must be positive, got " +
                        llvm::Twine(x.intermediate));
  shape_.experts = x.count;
  shape_.expertsPerToken = x.topK;
  int64_t step = 1;
  if (!mixtral)
    LLMSERVE_TRY_ASSIGN(step, config.integer("decoder_sparse_step", 1));
  if (step <= 0)
    return config.error("decoder_sparse_step must be positive, got " + llvm::Twine(step));
  for (int64_t l = 0; l < layers; ++l)
    sparse[l] = (l + 1) % step == 0;
  llvm::Expected<SmallVector<double>> dense = config.numbers("mlp_only_layers");
  if (!dense)
    return dense.takeError();
  for (double entry : *dense) {
    if (entry != std::floor(entry))
      return config.error("mlp_only_layers holds " + llvm::formatv("{0}", entry) +
                          ", which is no layer index");
    auto layer = static_cast<int64_t>(entry);
    if (layer < 0 || layer >= layers)
      return config.error("mlp_only_layers names layer " + llvm::Twine(layer) +
                          ", but the model has " + llvm::Twine(layers));
    sparse[layer] = false;
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
  model->qkNorm = modelType == "qwen3" || modelType == "qwen3_moe";
  if (llvm::Error error = model->readSlidingWindow(config, modelType))
    return std::move(error);
  if (llvm::Error error = model->readExperts(config, modelType))
    return std::move(error);
  return model;
}

Value Llama::denseMlp(GraphBuilder &g, const std::string &p, Value x) const {
  const int64_t hidden = shape_.hidden;
  Value gate = g.linear(x, g.weight(p + "mlp.gate_proj.weight", {intermediate, hidden}));
  Value up = g.linear(x, g.weight(p + "mlp.up_proj.weight", {intermediate, hidden}));
  return g.linear(g.siluMul(gate, up),
                  g.weight(p + "mlp.down_proj.weight", {hidden, intermediate}));
}

Value Llama::sparseMlp(GraphBuilder &g, const std::string &p, Value x) const {
  const int64_t hidden = shape_.hidden, width = experts.intermediate;
  Value logits = g.linear(x, g.weight(p + experts.router, {experts.count, hidden}));
  auto [weights, chosen] =
      g.moeRouter(logits, experts.topK, MoeScoring::softmax, experts.normalized);
  auto expertWeight = [&](const std::string &name, int64_t rows, int64_t cols) {
    return g.stackedWeight(p + name, experts.count, {rows, cols});
  };
  Value gate = g.expertLinear(x, expertWeight(experts.gate, width, hidden), chosen,
                              /*perSlot=*/false);
  Value up = g.expertLinear(x, expertWeight(experts.up, width, hidden), chosen,
                            /*perSlot=*/false);
  Value down = g.expertLinear(g.siluMul(gate, up),
                              expertWeight(experts.down, hidden, width), chosen,
                              /*perSlot=*/true);
  return g.moeCombine(down, weights);
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
    x = sparse[l] ? sparseMlp(g, p, normed) : denseMlp(g, p, normed);
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
