//===- Gpt2.cpp - GPT-2 --------------------------------------------------===//
//
// Token and position embeddings (the position embedding enters as the first
// layer_norm's residual); per layer layer_norm → c_attn (one Conv1D whose
// transposed row blocks are q, k and v) → attention → c_proj → layer_norm →
// c_fc → gelu → c_proj; the final layer_norm and the LM head tied to wte.
// Both the hub's unprefixed tensor names and save_pretrained's
// "transformer." prefix.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/GraphBuilder.h"

using namespace mlir;
using namespace mlir::llmserve;

namespace {

class Gpt2 : public Model {
public:
  static llvm::Expected<std::unique_ptr<Model>> read(const Config &config);
  void useTensorNames(const llvm::StringSet<> &names) override {
    if (names.contains("transformer.wte.weight"))
      prefix = "transformer.";
  }
  Value buildLogits(GraphBuilder &g) const override;

private:
  int64_t intermediate = 0;
  double epsilon = 1e-5;
  GeluApproximation gelu = GeluApproximation::tanh;
  std::string prefix;
};

llvm::Expected<std::unique_ptr<Model>> Gpt2::read(const Config &config) {
  auto model = std::make_unique<Gpt2>();
  ModelShape &m = model->shape_;
  m.architecture = "gpt2";
  LLMSERVE_TRY_ASSIGN(m.vocab, config.integer("vocab_size"));
  LLMSERVE_TRY_ASSIGN(m.hidden, config.integer("n_embd"));
  LLMSERVE_TRY_ASSIGN(m.layers, config.integer("n_layer"));
  LLMSERVE_TRY_ASSIGN(m.heads, config.integer("n_head"));
  LLMSERVE_TRY_ASSIGN(m.maxPositions, config.integer("n_positions"));
  LLMSERVE_TRY_ASSIGN(model->intermediate, config.integer("n_inner", 4 * m.hidden));
  LLMSERVE_TRY_ASSIGN(model->epsilon, config.number("layer_norm_epsilon", 1e-5));
  if (m.heads <= 0 || m.hidden % m.heads != 0)
    return config.error("n_embd must be a multiple of n_head");
  m.kvHeads = m.heads;
  m.headDim = m.hidden / m.heads;
  std::string act = config.string("activation_function", "gelu_new");
  if (act == "gelu_new" || act == "gelu_pytorch_tanh")
    model->gelu = GeluApproximation::tanh;
  else if (act == "gelu")
    model->gelu = GeluApproximation::none;
  else
    return config.error("unsupported activation_function '" + act +
                        "' (supported: gelu_new, gelu_pytorch_tanh, gelu)");
  if (config.boolean("scale_attn_by_inverse_layer_idx", false) ||
      config.boolean("reorder_and_upcast_attn", false))
    return config.error("scale_attn_by_inverse_layer_idx and "
                        "reorder_and_upcast_attn are not supported");
  return model;
}

Value Gpt2::buildLogits(GraphBuilder &g) const {
  const ModelShape &m = shape_;
  auto weight = [&](const std::string &name, ArrayRef<int64_t> shape,
                    bool transposed = false, std::optional<int64_t> rowBegin = {}) {
    return g.weight(prefix + name, shape, transposed, rowBegin);
  };
  auto layerNorm = [&](Value x, Value residual, const std::string &name) {
    return g.layerNorm(x, residual, weight(name + ".weight", {m.hidden}),
                       weight(name + ".bias", {m.hidden}), epsilon);
  };
  Value wte = weight("wte.weight", {m.vocab, m.hidden});
  Value wpe = weight("wpe.weight", {m.maxPositions, m.hidden});
  Value x = g.embedding(wte, "token_ids");
  Value residual = g.embedding(wpe, "positions");
  for (int64_t l = 0; l < m.layers; ++l) {
    std::string p = "h." + std::to_string(l) + ".";
    Value normed;
    std::tie(normed, residual) = layerNorm(x, residual, p + "ln_1");
    // c_attn is one Conv1D [hidden, 3 * hidden]: q, k and v are its row
    // blocks once transposed to the nn.Linear layout.
    auto part = [&](int64_t i) {
      std::string base = p + "attn.c_attn.";
      return g.linear(normed,
                      weight(base + "weight", {m.hidden, m.hidden}, true, i * m.hidden),
                      weight(base + "bias", {m.hidden}, false, i * m.hidden));
    };
    Value attn = g.attention(l, part(0), part(1), part(2));
    Value o = g.linear(attn, weight(p + "attn.c_proj.weight", {m.hidden, m.hidden}, true),
                       weight(p + "attn.c_proj.bias", {m.hidden}));
    std::tie(normed, residual) = layerNorm(o, residual, p + "ln_2");
    Value fc = g.linear(normed,
                        weight(p + "mlp.c_fc.weight", {intermediate, m.hidden}, true),
                        weight(p + "mlp.c_fc.bias", {intermediate}));
    x = g.linear(g.gelu(fc, gelu),
                 weight(p + "mlp.c_proj.weight", {m.hidden, intermediate}, true),
                 weight(p + "mlp.c_proj.bias", {m.hidden}));
  }
  Value final = layerNorm(x, residual, "ln_f").first;
  return g.logits(final, wte);
}

} // namespace

llvm::Expected<std::unique_ptr<Model>>
mlir::llmserve::readGpt2(const Config &config, llvm::StringRef) {
  return Gpt2::read(config);
}
