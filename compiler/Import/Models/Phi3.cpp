//===- Phi3.cpp - Phi-3 and Phi-4-mini (model_type phi3) -------------------===//
//
// Llama's layer with both projections fused: self_attn.qkv_proj holds q, k
// and v as row blocks and mlp.gate_up_proj holds gate then up, each part read
// as a row range of the one tensor. RoPE rotates the first
// partial_rotary_factor of each head; rope_scaling longrope chooses short or
// long factors per sequence (docs/models.md). A sliding_window, when set,
// applies to every layer, as transformers' mask does. transformers' Phi-3 has
// no biases whatever attention_bias, mlp_bias or lm_head_bias say, and its
// dropouts are for training, so those fields are not read.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/GraphBuilder.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallString.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;

namespace {

class Phi3 : public Model {
public:
  static llvm::Expected<std::unique_ptr<Model>> read(const Config &config);
  Value buildLogits(GraphBuilder &g) const override;

private:
  llvm::Error readRotary(const Config &config);

  int64_t intermediate = 0;
  double epsilon = 1e-5;
  bool tiedEmbeddings = false;
  std::optional<int64_t> slidingWindow;
  RopeParams rope;
};

/// The shortest decimal that reads back as `value` ("0.75").
std::string decimal(double value) {
  llvm::SmallString<16> text;
  llvm::APFloat(value).toString(text);
  return text.str().str();
}

/// rope_theta, partial_rotary_factor and rope_scaling, as transformers'
/// Phi3Config and _compute_longrope_parameters read them.
llvm::Error Phi3::readRotary(const Config &config) {
  const ModelShape &m = shape_;
  LLMSERVE_TRY_ASSIGN(rope.theta, config.number("rope_theta", 10000));
  double partial;
  LLMSERVE_TRY_ASSIGN(partial, config.number("partial_rotary_factor", 1));
  if (!(partial > 0 && partial <= 1))
    return config.error("partial_rotary_factor must be in (0, 1], got " +
                        decimal(partial));
  // transformers truncates: int(head_dim * partial_rotary_factor).
  rope.rotaryDim = static_cast<int64_t>(m.headDim * partial);
  if (rope.rotaryDim < 2 || rope.rotaryDim % 2 != 0)
    return config.error("partial_rotary_factor " + decimal(partial) + " rotates " +
                        llvm::Twine(rope.rotaryDim) + " of the " + llvm::Twine(m.headDim) +
                        " channels of a head; it must rotate a positive even number");

  const llvm::json::Object *scaling = config.nested("rope_scaling");
  if (!scaling)
    return llvm::Error::success();
  std::string type = scaling->getString("rope_type")
                         .value_or(scaling->getString("type").value_or(""))
                         .str();
  if (type == "default")
    return llvm::Error::success();
  // Phi3Config reads the earlier names su and yarn as longrope.
  if (type != "longrope" && type != "su" && type != "yarn")
    return config.error("unsupported rope_scaling type '" + type +
                        "' (supported: default, longrope and its earlier names su and yarn)");
  Config s(*scaling, config.file() + ": rope_scaling");
  rope.scaling = RopeScaling::longrope;
  LLMSERVE_TRY_ASSIGN(rope.originalMaxPosition,
                      config.integer("original_max_position_embeddings", 4096));
  if (rope.originalMaxPosition < 1)
    return config.error("original_max_position_embeddings must be positive");
  // transformers versions disagree on which of these applies when they
  // differ from the top-level fields, so they may only repeat them.
  int64_t nestedOriginal;
  LLMSERVE_TRY_ASSIGN(nestedOriginal, s.integer("original_max_position_embeddings",
                                                rope.originalMaxPosition));
  if (nestedOriginal != rope.originalMaxPosition)
    return s.error("original_max_position_embeddings (" + llvm::Twine(nestedOriginal) +
                   ") differs from the top-level one (" +
                   llvm::Twine(rope.originalMaxPosition) + ")");
  double ratio = static_cast<double>(m.maxPositions) / rope.originalMaxPosition;
  double factor;
  LLMSERVE_TRY_ASSIGN(factor, s.number("factor", ratio));
  if (factor != ratio)
    return s.error("factor (" + decimal(factor) +
                   ") differs from max_position_embeddings / "
                   "original_max_position_embeddings (" + decimal(ratio) + ")");

  for (auto [name, factors] : {std::pair("short_factor", &rope.shortFactor),
                               std::pair("long_factor", &rope.longFactor)}) {
    SmallVector<double> values;
    LLMSERVE_TRY_ASSIGN(values, s.numbers(name));
    if (static_cast<int64_t>(values.size()) != rope.rotaryDim / 2)
      return s.error(llvm::Twine(name) + " has " + llvm::Twine(values.size()) +
                     " entries for " + llvm::Twine(rope.rotaryDim / 2) +
                     " rotated pairs");
    for (double v : values) {
      if (!(v > 0 && std::isfinite(v)))
        return s.error(llvm::Twine(name) + " entries must be positive");
      factors->push_back(static_cast<float>(v));
    }
  }
  // The LongRoPE paper's default: sqrt(1 + ln(s) / ln(original)) for the
  // extension s = max_position_embeddings / original_max_position_embeddings.
  double fallback =
      ratio <= 1 ? 1
                 : std::sqrt(1 + std::log(ratio) /
                                     std::log(static_cast<double>(rope.originalMaxPosition)));
  LLMSERVE_TRY_ASSIGN(rope.attentionFactor, s.number("attention_factor", fallback));
  if (!(rope.attentionFactor > 0 && std::isfinite(rope.attentionFactor)))
    return s.error("attention_factor must be positive");
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Model>> Phi3::read(const Config &config) {
  auto model = std::make_unique<Phi3>();
  ModelShape &m = model->shape_;
  m.architecture = "phi3";
  if (llvm::Error error = readDecoderShape(config, m))
    return std::move(error);
  LLMSERVE_TRY_ASSIGN(model->intermediate, config.integer("intermediate_size"));
  LLMSERVE_TRY_ASSIGN(m.headDim, config.integer("head_dim", m.hidden / m.heads));
  LLMSERVE_TRY_ASSIGN(m.maxPositions, config.integer("max_position_embeddings", 4096));
  LLMSERVE_TRY_ASSIGN(model->epsilon, config.number("rms_norm_eps", 1e-5));
  model->tiedEmbeddings = config.boolean("tie_word_embeddings", false);
  std::string act = config.string("hidden_act", "silu");
  if (act != "silu")
    return config.error("unsupported hidden_act '" + act + "' (supported: silu)");
  if (config.has("sliding_window")) {
    LLMSERVE_TRY_ASSIGN(model->slidingWindow, config.integer("sliding_window"));
    if (*model->slidingWindow < 1)
      return config.error("sliding_window must be positive or null");
  }
  if (llvm::Error error = model->readRotary(config))
    return std::move(error);
  return model;
}

Value Phi3::buildLogits(GraphBuilder &g) const {
  const ModelShape &m = shape_;
  Value table = g.weight("model.embed_tokens.weight", {m.vocab, m.hidden});
  Value x = g.embedding(table, "token_ids");
  Value residual;
  int64_t qWidth = m.heads * m.headDim, kvWidth = m.kvHeads * m.headDim;
  for (int64_t l = 0; l < m.layers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    Value normed;
    std::tie(normed, residual) = g.rmsNorm(
        x, residual, g.weight(p + "input_layernorm.weight", {m.hidden}), epsilon);
    // Rows [begin, begin + width) of a fused projection.
    auto part = [&](const std::string &name, int64_t begin, int64_t width) {
      return g.linear(normed, g.weight(p + name, {width, m.hidden}, false, begin));
    };
    std::string qkv = "self_attn.qkv_proj.weight";
    Value q = g.rope(part(qkv, 0, qWidth), rope);
    Value k = g.rope(part(qkv, qWidth, kvWidth), rope);
    Value v = part(qkv, qWidth + kvWidth, kvWidth);
    Value attn = g.attention(l, q, k, v, slidingWindow);
    Value o = g.linear(attn, g.weight(p + "self_attn.o_proj.weight", {m.hidden, qWidth}));
    std::tie(normed, residual) = g.rmsNorm(
        o, residual, g.weight(p + "post_attention_layernorm.weight", {m.hidden}), epsilon);
    Value gate = part("mlp.gate_up_proj.weight", 0, intermediate);
    Value up = part("mlp.gate_up_proj.weight", intermediate, intermediate);
    x = g.linear(g.siluMul(gate, up),
                 g.weight(p + "mlp.down_proj.weight", {m.hidden, intermediate}));
  }
  Value final =
      g.rmsNorm(x, residual, g.weight("model.norm.weight", {m.hidden}), epsilon).first;
  Value head = tiedEmbeddings ? table : g.weight("lm_head.weight", {m.vocab, m.hidden});
  return g.logits(final, head);
}

} // namespace

llvm::Expected<std::unique_ptr<Model>>
mlir::llmserve::readPhi3(const Config &config, llvm::StringRef) {
  return Phi3::read(config);
}
