//===- HfImporter.cpp - Hugging Face checkpoint to the llmserve dialect ---===//
//
// Supported: the Llama family (model_type llama, mistral, qwen2) and GPT-2.
// The step function takes the step contract (abi::kStepArguments) and one K
// and one V cache per layer, and returns the sampled token of each sequence.
// Residual adds are fused into the norms: every norm takes the previous
// sublayer's output plus the residual stream and returns the new stream.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/HfImporter.h"

#include "llmserve/IR/LlmserveOps.h"
#include "llmserve/abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;
namespace json = llvm::json;
namespace abi = ::llmserve::abi;

namespace {

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<json::Value> readJson(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError(path + ": " + buffer.getError().message());
  auto value = json::parse((*buffer)->getBuffer());
  if (!value)
    return makeError(path + ": invalid JSON: " +
                     llvm::toString(value.takeError()));
  return value;
}

/// The tensor names of a checkpoint directory, from the safetensors headers
/// or the shard index; empty when the directory holds no weights.
llvm::Expected<llvm::StringSet<>> readTensorNames(llvm::StringRef dir) {
  llvm::StringSet<> names;
  llvm::SmallString<256> index(dir), single(dir);
  llvm::sys::path::append(index, "model.safetensors.index.json");
  llvm::sys::path::append(single, "model.safetensors");
  if (llvm::sys::fs::exists(index)) {
    auto value = readJson(index);
    if (!value)
      return value.takeError();
    const json::Object *map =
        value->getAsObject() ? value->getAsObject()->getObject("weight_map")
                             : nullptr;
    if (!map)
      return makeError(index + ": no \"weight_map\" object");
    for (const auto &entry : *map)
      names.insert(entry.first.str());
    return names;
  }
  if (!llvm::sys::fs::exists(single))
    return names;
  auto buffer = llvm::MemoryBuffer::getFile(single);
  if (!buffer)
    return makeError(single + ": " + buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() < 8)
    return makeError(single + ": truncated (no header length)");
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i)
    length = length << 8 | static_cast<uint8_t>(bytes[i]);
  if (length > bytes.size() - 8)
    return makeError(single + ": header length " + llvm::Twine(length) +
                     " exceeds the file");
  auto header = json::parse(bytes.substr(8, length));
  if (!header || !header->getAsObject())
    return makeError(single + ": invalid header JSON");
  for (const auto &entry : *header->getAsObject())
    if (entry.first != "__metadata__")
      names.insert(entry.first.str());
  return names;
}

/// Typed access to config.json with errors that name the field.
class Config {
public:
  Config(const json::Object &object, std::string path)
      : object(object), path(std::move(path)) {}

  llvm::Expected<int64_t> integer(llvm::StringRef key) const {
    if (std::optional<int64_t> v = object.getInteger(key))
      return *v;
    return makeError(path + ": missing or non-integer \"" + key + "\"");
  }
  llvm::Expected<int64_t> integer(llvm::StringRef key, int64_t fallback) const {
    const json::Value *v = object.get(key);
    if (!v || v->kind() == json::Value::Null)
      return fallback;
    return integer(key);
  }
  llvm::Expected<double> number(llvm::StringRef key, double fallback) const {
    const json::Value *v = object.get(key);
    if (!v || v->kind() == json::Value::Null)
      return fallback;
    if (std::optional<double> d = v->getAsNumber())
      return *d;
    return makeError(path + ": \"" + key + "\" must be a number");
  }
  bool boolean(llvm::StringRef key, bool fallback) const {
    return object.getBoolean(key).value_or(fallback);
  }
  std::string string(llvm::StringRef key, llvm::StringRef fallback) const {
    return object.getString(key).value_or(fallback).str();
  }
  const json::Object *nested(llvm::StringRef key) const {
    return object.getObject(key);
  }
  /// `eos_token_id` is an integer or a list of them.
  SmallVector<int64_t> integers(llvm::StringRef key) const {
    SmallVector<int64_t> values;
    if (std::optional<int64_t> v = object.getInteger(key))
      values.push_back(*v);
    else if (const json::Array *a = object.getArray(key))
      for (const json::Value &e : *a)
        if (std::optional<int64_t> v = e.getAsInteger())
          values.push_back(*v);
    return values;
  }
  const std::string &file() const { return path; }

private:
  const json::Object &object;
  std::string path;
};

struct RopeParams {
  double theta = 10000;
  RopeScaling scaling = RopeScaling::none;
  double factor = 1, lowFreqFactor = 1, highFreqFactor = 4;
  int64_t originalMaxPosition = 0;
};

/// The shapes of a decoder-only model.
struct ModelShape {
  std::string architecture; // "llama" or "gpt2"
  int64_t vocab = 0, hidden = 0, intermediate = 0, layers = 0, heads = 0,
          kvHeads = 0, headDim = 0, maxPositions = 0;
  double epsilon = 1e-5;
  bool tiedEmbeddings = false, qkvBias = false, outputBias = false;
  std::optional<int64_t> slidingWindow;
  RopeParams rope;
  GeluApproximation gelu = GeluApproximation::tanh;
  std::string prefix; // GPT-2 checkpoints may prefix names with "transformer."
};

llvm::Expected<RopeParams> readRope(const Config &config) {
  RopeParams rope;
  auto theta = config.number("rope_theta", 10000);
  if (!theta)
    return theta.takeError();
  rope.theta = *theta;
  const json::Object *scaling = config.nested("rope_scaling");
  if (!scaling)
    return rope;
  std::string type = scaling->getString("rope_type")
                         .value_or(scaling->getString("type").value_or(""))
                         .str();
  Config s(*scaling, config.file() + ": rope_scaling");
  auto factor = s.number("factor", 1);
  if (!factor)
    return factor.takeError();
  rope.factor = *factor;
  if (type == "default")
    return rope;
  if (type == "linear") {
    rope.scaling = RopeScaling::linear;
    return rope;
  }
  if (type == "llama3") {
    rope.scaling = RopeScaling::llama3;
    auto low = s.number("low_freq_factor", 1);
    auto high = s.number("high_freq_factor", 4);
    auto original = s.integer("original_max_position_embeddings");
    if (!low)
      return low.takeError();
    if (!high)
      return high.takeError();
    if (!original)
      return original.takeError();
    rope.lowFreqFactor = *low;
    rope.highFreqFactor = *high;
    rope.originalMaxPosition = *original;
    return rope;
  }
  return makeError(config.file() + ": unsupported rope_scaling type '" + type +
                   "' (supported: default, linear, llama3)");
}

#define TRY_ASSIGN(lhs, expr)                                                  \
  do {                                                                         \
    auto value = (expr);                                                       \
    if (!value)                                                                \
      return value.takeError();                                                \
    lhs = *value;                                                              \
  } while (false)

llvm::Expected<ModelShape> readLlama(const Config &config,
                                     llvm::StringRef modelType) {
  ModelShape m;
  m.architecture = "llama";
  TRY_ASSIGN(m.vocab, config.integer("vocab_size"));
  TRY_ASSIGN(m.hidden, config.integer("hidden_size"));
  TRY_ASSIGN(m.intermediate, config.integer("intermediate_size"));
  TRY_ASSIGN(m.layers, config.integer("num_hidden_layers"));
  TRY_ASSIGN(m.heads, config.integer("num_attention_heads"));
  TRY_ASSIGN(m.kvHeads, config.integer("num_key_value_heads", m.heads));
  if (m.heads <= 0 || m.kvHeads <= 0 || m.heads % m.kvHeads != 0)
    return makeError(config.file() + ": num_attention_heads (" +
                     llvm::Twine(m.heads) +
                     ") must be a positive multiple of num_key_value_heads (" +
                     llvm::Twine(m.kvHeads) + ")");
  TRY_ASSIGN(m.headDim, config.integer("head_dim", m.hidden / m.heads));
  TRY_ASSIGN(m.maxPositions, config.integer("max_position_embeddings", 2048));
  TRY_ASSIGN(m.epsilon, config.number("rms_norm_eps", 1e-6));
  TRY_ASSIGN(m.rope, readRope(config));
  m.tiedEmbeddings = config.boolean("tie_word_embeddings", false);
  std::string act = config.string("hidden_act", "silu");
  if (act != "silu")
    return makeError(config.file() + ": unsupported hidden_act '" + act +
                     "' (supported: silu)");
  if (config.boolean("mlp_bias", false))
    return makeError(config.file() + ": mlp_bias is not supported");
  bool attentionBias = config.boolean("attention_bias", false);
  m.qkvBias = modelType == "qwen2" || attentionBias;
  m.outputBias = attentionBias;
  // Mistral sets sliding_window; Qwen2 only uses it with use_sliding_window.
  bool window = modelType == "mistral" ||
                (modelType == "qwen2" &&
                 config.boolean("use_sliding_window", false));
  if (window) {
    int64_t w;
    TRY_ASSIGN(w, config.integer("sliding_window", 0));
    if (w > 0)
      m.slidingWindow = w;
  }
  return m;
}

llvm::Expected<ModelShape> readGpt2(const Config &config) {
  ModelShape m;
  m.architecture = "gpt2";
  TRY_ASSIGN(m.vocab, config.integer("vocab_size"));
  TRY_ASSIGN(m.hidden, config.integer("n_embd"));
  TRY_ASSIGN(m.layers, config.integer("n_layer"));
  TRY_ASSIGN(m.heads, config.integer("n_head"));
  TRY_ASSIGN(m.maxPositions, config.integer("n_positions"));
  TRY_ASSIGN(m.intermediate, config.integer("n_inner", 4 * m.hidden));
  TRY_ASSIGN(m.epsilon, config.number("layer_norm_epsilon", 1e-5));
  if (m.heads <= 0 || m.hidden % m.heads != 0)
    return makeError(config.file() + ": n_embd must be a multiple of n_head");
  m.kvHeads = m.heads;
  m.headDim = m.hidden / m.heads;
  m.tiedEmbeddings = true;
  m.qkvBias = m.outputBias = true;
  std::string act = config.string("activation_function", "gelu_new");
  if (act == "gelu_new" || act == "gelu_pytorch_tanh")
    m.gelu = GeluApproximation::tanh;
  else if (act == "gelu")
    m.gelu = GeluApproximation::none;
  else
    return makeError(config.file() + ": unsupported activation_function '" +
                     act + "' (supported: gelu_new, gelu_pytorch_tanh, gelu)");
  if (config.boolean("scale_attn_by_inverse_layer_idx", false) ||
      config.boolean("reorder_and_upcast_attn", false))
    return makeError(config.file() +
                     ": scale_attn_by_inverse_layer_idx and "
                     "reorder_and_upcast_attn are not supported");
  return m;
}

class GraphBuilder {
public:
  GraphBuilder(MLIRContext *context, const ModelShape &m,
               const ImportOptions &options, const llvm::StringSet<> &names)
      : b(context), loc(b.getUnknownLoc()), m(m), options(options),
        names(names) {}

  llvm::Expected<OwningOpRef<ModuleOp>> build() {
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    b.setInsertionPointToEnd(module->getBody());
    buildEntry("step", /*returnLogits=*/false);
    if (options.logitsEntry)
      buildEntry("logits", /*returnLogits=*/true);
    if (!missing.empty())
      return makeError("the checkpoint has no tensor '" + missing.front() +
                       "'" +
                       (missing.size() > 1
                            ? " (and " + llvm::Twine(missing.size() - 1) +
                                  " more)"
                            : ""));
    return module;
  }

private:
  void buildEntry(StringRef name, bool returnLogits) {
    OpBuilder::InsertionGuard guard(b);
    func::FuncOp func = createStepFunction(name, returnLogits);
    b.setInsertionPointToStart(func.addEntryBlock());
    args = func.getArguments();
    Value logits = m.architecture == "gpt2" ? buildGpt2() : buildLlama();
    if (returnLogits)
      func::ReturnOp::create(b, loc, logits);
    else
      func::ReturnOp::create(b, loc, sample(logits));
  }

  Type f32() { return b.getF32Type(); }
  RankedTensorType tokens(int64_t width) {
    return RankedTensorType::get({ShapedType::kDynamic, width}, f32());
  }
  RankedTensorType cacheType() {
    return RankedTensorType::get(
        {ShapedType::kDynamic, options.blockSize, m.kvHeads, m.headDim}, f32());
  }

  /// A step-contract array's tensor type: integer dimensions are static,
  /// symbolic ones dynamic.
  RankedTensorType contractType(const abi::ContractArray &c) {
    llvm::StringRef dtype = c.dtype;
    Type element = dtype == "f32"   ? f32()
                   : dtype == "i64" ? Type(b.getI64Type())
                                    : Type(b.getI32Type());
    SmallVector<int64_t> shape;
    for (llvm::StringRef dim : llvm::split(llvm::StringRef(c.shape), ',')) {
      int64_t size;
      shape.push_back(dim.getAsInteger(10, size) ? ShapedType::kDynamic : size);
    }
    return RankedTensorType::get(shape, element);
  }

  func::FuncOp createStepFunction(StringRef name, bool returnLogits) {
    SmallVector<Type> inputs;
    for (const abi::ContractArray &c : abi::kStepArguments)
      inputs.push_back(contractType(c));
    SmallVector<DictionaryAttr> argAttrs;
    for (const abi::ContractArray &c : abi::kStepArguments)
      argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          LlmserveDialect::kContractAttrName, b.getStringAttr(c.name))));
    for (int64_t layer = 0; layer < m.layers; ++layer) {
      for (const char *role : {"k", "v"}) {
        inputs.push_back(cacheType());
        argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
            LlmserveDialect::kKvCacheAttrName,
            b.getDictionaryAttr(
                {b.getNamedAttr("layer", b.getI64IntegerAttr(layer)),
                 b.getNamedAttr("role", b.getStringAttr(role))}))));
      }
    }
    SmallVector<Type> results;
    if (returnLogits)
      results.push_back(
          RankedTensorType::get({ShapedType::kDynamic, m.vocab}, f32()));
    else
      for (const abi::ContractArray &c : abi::kStepResults)
        results.push_back(contractType(c));
    auto type = b.getFunctionType(inputs, results);
    auto func = func::FuncOp::create(b, loc, name, type, {}, argAttrs);
    if (!returnLogits)
      for (auto [i, c] : llvm::enumerate(abi::kStepResults))
        func.setResultAttr(i, LlmserveDialect::kContractAttrName,
                           b.getStringAttr(c.name));
    return func;
  }

  Value contract(llvm::StringRef name) {
    for (int i = 0; i < abi::kNumStepArguments; ++i)
      if (name == abi::kStepArguments[i].name)
        return args[i];
    llvm_unreachable("unknown step-contract array");
  }
  Value cache(int64_t layer, int role) {
    return args[abi::kNumStepArguments + 2 * layer + role];
  }

  /// A checkpoint tensor, optionally transposed and restricted to rows
  /// [rowBegin, rowBegin + shape[0]) of the (transposed) tensor.
  Value weight(const std::string &name, ArrayRef<int64_t> shape,
               bool transposed = false, std::optional<int64_t> rowBegin = {}) {
    std::string full = m.prefix + name;
    if (!names.empty() && !names.contains(full))
      missing.push_back(full);
    DenseI64ArrayAttr rows;
    if (rowBegin)
      rows = b.getDenseI64ArrayAttr({*rowBegin, *rowBegin + shape[0]});
    return WeightOp::create(b, loc, RankedTensorType::get(shape, f32()), full,
                            transposed, rows);
  }

  Value linear(Value x, Value w, Value bias = {}) {
    int64_t n = cast<RankedTensorType>(w.getType()).getDimSize(0);
    return LinearOp::create(b, loc, tokens(n), x, w, bias);
  }

  /// Attention over the paged cache: K and V written first, then read.
  Value attention(int64_t layer, Value q, Value k, Value v) {
    Value slots = contract("slot_mapping");
    Value kc = KvWriteOp::create(b, loc, cacheType(), k, cache(layer, 0), slots);
    Value vc = KvWriteOp::create(b, loc, cacheType(), v, cache(layer, 1), slots);
    auto lseType = RankedTensorType::get({ShapedType::kDynamic, m.heads}, f32());
    auto op = PagedAttentionOp::create(
        b, loc, tokens(m.heads * m.headDim), lseType, q, kc, vc,
        contract("block_table"), contract("context_len"),
        contract("query_start"), b.getI64IntegerAttr(m.heads),
        b.getF32FloatAttr(1.0 / std::sqrt(static_cast<double>(m.headDim))),
        m.slidingWindow ? b.getI64IntegerAttr(*m.slidingWindow)
                        : IntegerAttr());
    return op.getResult();
  }

  Value rope(Value x) {
    auto op = RopeOp::create(
        b, loc, x.getType(), x, contract("positions"),
        b.getI64IntegerAttr(m.headDim), b.getI64IntegerAttr(m.headDim),
        b.getF64FloatAttr(m.rope.theta),
        RopeStyleAttr::get(b.getContext(), RopeStyle::neox),
        RopeScalingAttr::get(b.getContext(), m.rope.scaling), FloatAttr(),
        FloatAttr(), FloatAttr(), IntegerAttr());
    if (m.rope.scaling != RopeScaling::none)
      op.setScalingFactorAttr(b.getF64FloatAttr(m.rope.factor));
    if (m.rope.scaling == RopeScaling::llama3) {
      op.setLowFreqFactorAttr(b.getF64FloatAttr(m.rope.lowFreqFactor));
      op.setHighFreqFactorAttr(b.getF64FloatAttr(m.rope.highFreqFactor));
      op.setOriginalMaxPositionAttr(
          b.getI64IntegerAttr(m.rope.originalMaxPosition));
    }
    return op;
  }

  /// rms_norm of `x` (+ `residual`); returns {normalized, new residual}.
  std::pair<Value, Value> rmsNorm(Value x, Value residual, Value w) {
    auto op = RmsNormOp::create(b, loc, x, w, residual,
                                b.getF32FloatAttr(m.epsilon));
    return {op.getResult(), residual ? op.getResidualOut() : x};
  }
  std::pair<Value, Value> layerNorm(Value x, Value residual,
                                    const std::string &name) {
    auto op = LayerNormOp::create(
        b, loc, x, weight(name + ".weight", {m.hidden}),
        weight(name + ".bias", {m.hidden}), residual,
        b.getF32FloatAttr(m.epsilon));
    return {op.getResult(), residual ? op.getResidualOut() : x};
  }

  /// The logits of the last row of every sequence.
  Value logits(Value hidden, Value head) {
    Value rows = GatherRowsOp::create(b, loc, tokens(m.hidden), hidden,
                                      contract("logits_rows"));
    return linear(rows, head);
  }

  /// The step's results (abi::kStepResults): tokens sampled from the
  /// penalised logits, and log-probs of the model's own distribution.
  SmallVector<Value> sample(Value logits) {
    Value penalised = ApplyPenaltiesOp::create(
        b, loc, logits.getType(), logits, contract("penalty_start"),
        contract("penalty_tokens"), contract("penalty_counts"),
        contract("presence_penalty"), contract("frequency_penalty"),
        contract("repetition_penalty"));
    Value tokens = SampleOp::create(
        b, loc, contractType(abi::kStepResults[0]), penalised,
        contract("temperature"), contract("top_p"), contract("top_k"),
        contract("min_p"), contract("seed"), contract("context_len"));
    auto logprobs = LogprobsOp::create(
        b, loc, contractType(abi::kStepResults[1]),
        contractType(abi::kStepResults[2]), contractType(abi::kStepResults[3]),
        logits, tokens, contract("num_logprobs"));
    return {tokens, logprobs.getTokenLogprob(), logprobs.getTopTokens(),
            logprobs.getTopLogprobs()};
  }

  Value buildLlama() {
    Value table = weight("model.embed_tokens.weight", {m.vocab, m.hidden});
    Value x = EmbeddingOp::create(b, loc, tokens(m.hidden), table,
                                  contract("token_ids"));
    Value residual;
    int64_t qWidth = m.heads * m.headDim, kvWidth = m.kvHeads * m.headDim;
    for (int64_t l = 0; l < m.layers; ++l) {
      std::string p = "model.layers." + std::to_string(l) + ".";
      Value normed;
      std::tie(normed, residual) = rmsNorm(
          x, residual, weight(p + "input_layernorm.weight", {m.hidden}));
      auto proj = [&](const char *name, int64_t width, bool bias) {
        std::string base = p + "self_attn." + name;
        return linear(normed, weight(base + ".weight", {width, m.hidden}),
                      bias ? weight(base + ".bias", {width}) : Value());
      };
      Value q = rope(proj("q_proj", qWidth, m.qkvBias));
      Value k = rope(proj("k_proj", kvWidth, m.qkvBias));
      Value v = proj("v_proj", kvWidth, m.qkvBias);
      Value attn = attention(l, q, k, v);
      Value o = linear(
          attn, weight(p + "self_attn.o_proj.weight", {m.hidden, qWidth}),
          m.outputBias ? weight(p + "self_attn.o_proj.bias", {m.hidden})
                       : Value());
      std::tie(normed, residual) = rmsNorm(
          o, residual,
          weight(p + "post_attention_layernorm.weight", {m.hidden}));
      Value gate = linear(normed, weight(p + "mlp.gate_proj.weight",
                                         {m.intermediate, m.hidden}));
      Value up = linear(normed, weight(p + "mlp.up_proj.weight",
                                       {m.intermediate, m.hidden}));
      Value act = SiluMulOp::create(b, loc, gate.getType(), gate, up);
      x = linear(act, weight(p + "mlp.down_proj.weight",
                             {m.hidden, m.intermediate}));
    }
    Value final = rmsNorm(x, residual, weight("model.norm.weight", {m.hidden}))
                      .first;
    Value head = weight(m.tiedEmbeddings ? "model.embed_tokens.weight"
                                         : "lm_head.weight",
                        {m.vocab, m.hidden});
    return logits(final, head);
  }

  Value buildGpt2() {
    Value wte = weight("wte.weight", {m.vocab, m.hidden});
    Value wpe = weight("wpe.weight", {m.maxPositions, m.hidden});
    Value x = EmbeddingOp::create(b, loc, tokens(m.hidden), wte,
                                  contract("token_ids"));
    Value residual = EmbeddingOp::create(b, loc, tokens(m.hidden), wpe,
                                         contract("positions"));
    for (int64_t l = 0; l < m.layers; ++l) {
      std::string p = "h." + std::to_string(l) + ".";
      Value normed;
      std::tie(normed, residual) = layerNorm(x, residual, p + "ln_1");
      // c_attn is one Conv1D [hidden, 3 * hidden]: q, k and v are its row
      // blocks once transposed to the nn.Linear layout.
      auto part = [&](int64_t i) {
        std::string base = p + "attn.c_attn.";
        return linear(normed,
                      weight(base + "weight", {m.hidden, m.hidden}, true,
                             i * m.hidden),
                      weight(base + "bias", {m.hidden}, false, i * m.hidden));
      };
      Value attn = attention(l, part(0), part(1), part(2));
      Value o = linear(attn,
                       weight(p + "attn.c_proj.weight", {m.hidden, m.hidden},
                              true),
                       weight(p + "attn.c_proj.bias", {m.hidden}));
      std::tie(normed, residual) = layerNorm(o, residual, p + "ln_2");
      Value fc = linear(normed,
                        weight(p + "mlp.c_fc.weight", {m.intermediate, m.hidden},
                               true),
                        weight(p + "mlp.c_fc.bias", {m.intermediate}));
      Value act = GeluOp::create(b, loc, fc.getType(), fc, m.gelu);
      x = linear(act,
                 weight(p + "mlp.c_proj.weight", {m.hidden, m.intermediate},
                        true),
                 weight(p + "mlp.c_proj.bias", {m.hidden}));
    }
    Value final = layerNorm(x, residual, "ln_f").first;
    return logits(final, wte);
  }

  OpBuilder b;
  Location loc;
  const ModelShape &m;
  const ImportOptions &options;
  const llvm::StringSet<> &names;
  ValueRange args;
  std::vector<std::string> missing;
};

DictionaryAttr modelAttr(Builder &b, const ModelShape &m, const Config &c) {
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("architecture", b.getStringAttr(m.architecture)),
      b.getNamedAttr("vocab_size", b.getI64IntegerAttr(m.vocab)),
      b.getNamedAttr("hidden_size", b.getI64IntegerAttr(m.hidden)),
      b.getNamedAttr("num_layers", b.getI64IntegerAttr(m.layers)),
      b.getNamedAttr("num_heads", b.getI64IntegerAttr(m.heads)),
      b.getNamedAttr("num_kv_heads", b.getI64IntegerAttr(m.kvHeads)),
      b.getNamedAttr("head_dim", b.getI64IntegerAttr(m.headDim)),
      b.getNamedAttr("max_position_embeddings",
                     b.getI64IntegerAttr(m.maxPositions)),
  };
  SmallVector<int64_t> eos = c.integers("eos_token_id");
  attrs.push_back(b.getNamedAttr(
      "eos_token_ids",
      b.getArrayAttr(llvm::map_to_vector(eos, [&](int64_t id) -> Attribute {
        return b.getI64IntegerAttr(id);
      }))));
  if (SmallVector<int64_t> bos = c.integers("bos_token_id"); !bos.empty())
    attrs.push_back(
        b.getNamedAttr("bos_token_id", b.getI64IntegerAttr(bos.front())));
  return b.getDictionaryAttr(attrs);
}

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::llmserve::importHuggingFace(MLIRContext *context, llvm::StringRef dir,
                                  const ImportOptions &options) {
  context->loadDialect<LlmserveDialect, func::FuncDialect>();
  llvm::SmallString<256> configPath(dir);
  llvm::sys::path::append(configPath, "config.json");
  auto configJson = readJson(configPath);
  if (!configJson)
    return configJson.takeError();
  const json::Object *object = configJson->getAsObject();
  if (!object)
    return makeError(configPath + ": not a JSON object");
  Config config(*object, configPath.str().str());

  std::string modelType = config.string("model_type", "");
  llvm::Expected<ModelShape> shape =
      modelType == "gpt2" ? readGpt2(config)
      : (modelType == "llama" || modelType == "mistral" || modelType == "qwen2")
          ? readLlama(config, modelType)
          : llvm::Expected<ModelShape>(makeError(
                configPath + ": unsupported model_type '" + modelType +
                "' (supported: llama, mistral, qwen2, gpt2)"));
  if (!shape)
    return shape.takeError();

  auto names = readTensorNames(dir);
  if (!names)
    return names.takeError();
  if (shape->architecture == "gpt2" && names->contains("transformer.wte.weight"))
    shape->prefix = "transformer.";

  auto module = GraphBuilder(context, *shape, options, *names).build();
  if (!module)
    return module.takeError();
  Builder b(context);
  llvm::SmallString<256> absolute(dir);
  llvm::sys::fs::make_absolute(absolute);
  (**module)->setAttr(LlmserveDialect::kModelAttrName,
                      modelAttr(b, *shape, config));
  (**module)->setAttr(LlmserveDialect::kCheckpointAttrName,
                      b.getStringAttr(absolute));
  return module;
}
