//===- GraphBuilder.cpp - The step function's shared pieces ---------------===//

#include "compiler/Import/GraphBuilder.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;
namespace abi = ::llmserve::abi;

GraphBuilder::GraphBuilder(MLIRContext *context, const ModelShape &shape,
                           const ImportOptions &options,
                           const llvm::StringSet<> &names,
                           std::optional<StoredQuantization> quantized)
    : b(context), loc(b.getUnknownLoc()), m(shape), options(options),
      names(names), quantized(quantized) {}

llvm::Expected<OwningOpRef<ModuleOp>> GraphBuilder::build(const Model &model) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  buildEntry(model, "step", /*returnLogits=*/false);
  if (options.logitsEntry)
    buildEntry(model, "logits", /*returnLogits=*/true);
  if (!unreadable.empty())
    return makeError(unreadable.front());
  if (!missing.empty())
    return makeError("the checkpoint has no tensor '" + missing.front() + "'" +
                     (missing.size() > 1
                          ? " (and " + llvm::Twine(missing.size() - 1) + " more)"
                          : ""));
  return module;
}

void GraphBuilder::buildEntry(const Model &model, StringRef name,
                              bool returnLogits) {
  OpBuilder::InsertionGuard guard(b);
  func::FuncOp func = createStepFunction(name, returnLogits);
  b.setInsertionPointToStart(func.addEntryBlock());
  args = func.getArguments();
  Value logits = model.buildLogits(*this);
  if (returnLogits)
    func::ReturnOp::create(b, loc, logits);
  else
    func::ReturnOp::create(b, loc, sample(logits));
}

Type GraphBuilder::f32() { return b.getF32Type(); }

RankedTensorType GraphBuilder::tokens(int64_t width) {
  return RankedTensorType::get({ShapedType::kDynamic, width}, f32());
}

RankedTensorType GraphBuilder::cacheType() {
  return RankedTensorType::get(
      {ShapedType::kDynamic, options.blockSize, m.kvHeads, m.headDim}, f32());
}

/// Integer dimensions are static, symbolic ones dynamic.
RankedTensorType GraphBuilder::contractType(const abi::ContractArray &c) {
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

func::FuncOp GraphBuilder::createStepFunction(StringRef name, bool returnLogits) {
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
      SmallVector<NamedAttribute> cache = {
          b.getNamedAttr("layer", b.getI64IntegerAttr(layer)),
          b.getNamedAttr("role", b.getStringAttr(role))};
      // The checkpoint's FP8 scales, for llmserve-quantize-kv-cache.
      if (quantized && !quantized->kvCacheScales.empty()) {
        const auto &scales = quantized->kvCacheScales[layer];
        cache.push_back(b.getNamedAttr(
            "scale", b.getDenseF32ArrayAttr(*role == 'k' ? scales.key : scales.value)));
      }
      argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          LlmserveDialect::kKvCacheAttrName, b.getDictionaryAttr(cache))));
    }
  }
  SmallVector<Type> results;
  if (returnLogits)
    results.push_back(RankedTensorType::get({ShapedType::kDynamic, m.vocab}, f32()));
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

Value GraphBuilder::contract(llvm::StringRef name) {
  for (int i = 0; i < abi::kNumStepArguments; ++i)
    if (name == abi::kStepArguments[i].name)
      return args[i];
  llvm_unreachable("unknown step-contract array");
}

Value GraphBuilder::cache(int64_t layer, int role) {
  return args[abi::kNumStepArguments + 2 * layer + role];
}

/// Quantized checkpoints quantize the linears of the decoder layers; without
/// the tensors at hand, those are the ones taken to be quantized.
static bool inDecoderLayer(llvm::StringRef name) {
  return name.contains(".layers.") || name.starts_with("h.") ||
         name.contains(".h.");
}

/// A decoder layer's projection or expert, which quantized checkpoints
/// quantize (norms, embeddings and routers stay as they are).
static bool decoderProjection(llvm::StringRef name) {
  return inDecoderLayer(name) &&
         (name.ends_with("_proj.weight") || name.contains(".experts."));
}

std::optional<QuantizedCheckpoint>
GraphBuilder::fourBitLayout(llvm::StringRef module) const {
  if (!quantized)
    return std::nullopt;
  QuantizedCheckpoint layout = quantized->layout;
  const char *packed = ".qweight";
  if (layout == QuantizedCheckpoint::compressed_tensors) {
    if (!quantized->packedInt4)
      return std::nullopt;
    layout = QuantizedCheckpoint::compressed_tensors_int4;
    packed = ".weight_packed";
  } else if (!isFourBit(layout)) {
    return std::nullopt;
  }
  bool stored = names.empty() ? inDecoderLayer(module)
                              : names.contains((module + packed).str());
  return stored ? std::optional(layout) : std::nullopt;
}

QuantizedCheckpointAttr
GraphBuilder::dequantizedOrigin(llvm::StringRef name) const {
  if (!quantized)
    return {};
  bool stored = false;
  llvm::StringRef module = name;
  switch (quantized->layout) {
  case QuantizedCheckpoint::fp8_block128:
    stored = names.empty() ? decoderProjection(name)
                           : names.contains((name + "_scale_inv").str());
    break;
  case QuantizedCheckpoint::compressed_tensors:
    stored = module.consume_back(".weight") &&
             (names.empty() ? quantized->eightBit && decoderProjection(name)
                            : names.contains((module + ".weight_scale").str()));
    break;
  default:
    break;
  }
  return stored ? QuantizedCheckpointAttr::get(b.getContext(), quantized->layout)
                : QuantizedCheckpointAttr();
}

Value GraphBuilder::storedWeight(llvm::StringRef name, RankedTensorType type,
                                 IntegerAttr stacked, bool transposed,
                                 DenseI64ArrayAttr rows) {
  if (!names.empty() && !names.contains(name))
    missing.push_back(name.str());
  return WeightOp::create(b, loc, type, name, stacked, transposed, rows,
                          /*quantization=*/nullptr, /*part=*/nullptr,
                          dequantizedOrigin(name));
}

Value GraphBuilder::quantizedWeight(const std::string &module,
                                    QuantizedCheckpoint layout,
                                    ArrayRef<int64_t> shape, bool transposed,
                                    DenseI64ArrayAttr rows) {
  auto tensors = layout == QuantizedCheckpoint::compressed_tensors_int4
                     ? std::array{".weight_packed", ".weight_scale", ".weight_shape"}
                     : std::array{".qweight", ".qzeros", ".scales"};
  for (const char *tensor : tensors)
    if (!names.empty() && !names.contains(module + tensor))
      missing.push_back(module + tensor);
  if (transposed || shape[1] % kInt4GroupColumns != 0 ||
      shape[0] % LlmserveDialect::kRowBlockRows != 0) {
    unreadable.push_back(
        (stringifyQuantizedCheckpoint(layout) + " linear '" + module + "' is " +
         (transposed ? "a transposed (Conv1D) one" : "[" + std::to_string(shape[0]) +
                                                         ", " + std::to_string(shape[1]) + "]") +
         ": llmserve reads 4-bit linears [N, K] with N a multiple of 8 and K of 128")
            .str());
    return WeightOp::create(b, loc, RankedTensorType::get(shape, f32()), module,
                            /*stacked=*/nullptr, transposed, rows,
                            /*quantization=*/nullptr, /*part=*/nullptr,
                            /*checkpoint=*/nullptr);
  }
  MLIRContext *ctx = b.getContext();
  auto from = QuantizedCheckpointAttr::get(ctx, layout);
  if (quantized->actOrder)
    return WeightOp::create(b, loc, RankedTensorType::get(shape, f32()), module,
                            /*stacked=*/nullptr, transposed, rows,
                            /*quantization=*/nullptr, /*part=*/nullptr, from);
  auto part = [&](QuantizedPart which, Type type) {
    return WeightOp::create(
        b, loc, type, module, /*stacked=*/nullptr, transposed, rows,
        WeightQuantizationAttr::get(ctx, WeightQuantization::int4_group128),
        QuantizedPartAttr::get(ctx, which), from);
  };
  auto valuesType = RankedTensorType::get(shape, b.getIntegerType(4));
  Value values = part(QuantizedPart::values, valuesType);
  quantizedParts[values] = {part(QuantizedPart::scales, quantizedScalesType(valuesType)),
                            part(QuantizedPart::zeros, quantizedZerosType(valuesType))};
  return values;
}

Value GraphBuilder::weight(const std::string &name, ArrayRef<int64_t> shape,
                           bool transposed, std::optional<int64_t> rowBegin) {
  DenseI64ArrayAttr rows;
  if (rowBegin)
    rows = b.getDenseI64ArrayAttr({*rowBegin, *rowBegin + shape[0]});
  llvm::StringRef module = llvm::StringRef(name);
  if (shape.size() == 2 && module.consume_back(".weight"))
    if (std::optional<QuantizedCheckpoint> layout = fourBitLayout(module))
      return quantizedWeight(module.str(), *layout, shape, transposed, rows);
  return storedWeight(name, RankedTensorType::get(shape, f32()),
                      /*stacked=*/nullptr, transposed, rows);
}

Value GraphBuilder::stackedWeight(const std::string &pattern, int64_t count,
                                  ArrayRef<int64_t> shape) {
  size_t at = pattern.find("{}");
  auto expert = [&](int64_t i) {
    std::string name = pattern;
    return name.replace(at, 2, std::to_string(i));
  };
  // Experts are stored alike: all quantized (and dequantized at load), or
  // none.
  QuantizedCheckpointAttr from = dequantizedOrigin(expert(0));
  for (int64_t i = 0; i < count && !names.empty(); ++i) {
    std::string name = expert(i);
    llvm::StringRef module = name;
    if (module.consume_back(".weight"))
      if (std::optional<QuantizedCheckpoint> layout = fourBitLayout(module)) {
        unreadable.push_back((stringifyQuantizedCheckpoint(*layout) + " expert '" + module +
                              "': llmserve reads the experts of a mixture "
                              "unquantized (llmc compile --quantize int8 quantizes them)")
                                 .str());
        break;
      }
    if (dequantizedOrigin(name) != from) {
      unreadable.push_back("expert '" + name + "' is stored " +
                           (from ? "unquantized" : "quantized") + ", unlike expert 0");
      break;
    }
    if (!names.contains(name))
      missing.push_back(name);
  }
  SmallVector<int64_t> stackedShape = {count};
  llvm::append_range(stackedShape, shape);
  return WeightOp::create(b, loc, RankedTensorType::get(stackedShape, f32()),
                          pattern, b.getI64IntegerAttr(count),
                          /*transposed=*/false, /*rows=*/nullptr,
                          /*quantization=*/nullptr, /*part=*/nullptr, from);
}

Value GraphBuilder::embedding(Value table, llvm::StringRef indices,
                              std::optional<double> scale) {
  int64_t width = cast<RankedTensorType>(table.getType()).getDimSize(1);
  return EmbeddingOp::create(b, loc, tokens(width), table, contract(indices),
                             scale ? b.getF32FloatAttr(*scale) : FloatAttr());
}

Value GraphBuilder::linear(Value x, Value w, Value bias) {
  int64_t n = cast<RankedTensorType>(w.getType()).getDimSize(0);
  auto parts = quantizedParts.find(w);
  if (parts == quantizedParts.end())
    return LinearOp::create(b, loc, tokens(n), x, w, bias);
  return LinearOp::create(b, loc, tokens(n), x, w, parts->second.first,
                          parts->second.second, bias, /*input_scales=*/Value());
}

std::pair<Value, Value> GraphBuilder::moeRouter(Value logits, int64_t topK,
                                                MoeScoring scoring,
                                                bool normalized) {
  SmallVector<int64_t> shape = {ShapedType::kDynamic, topK};
  auto router = MoeRouterOp::create(
      b, loc, RankedTensorType::get(shape, f32()),
      RankedTensorType::get(shape, b.getI32Type()), logits, topK, scoring,
      normalized);
  return {router.getWeights(), router.getExperts()};
}

Value GraphBuilder::expertLinear(Value x, Value w, Value experts, bool perSlot) {
  int64_t n = cast<RankedTensorType>(w.getType()).getDimSize(1);
  return ExpertLinearOp::create(b, loc, tokens(n), x, w, experts, perSlot);
}

Value GraphBuilder::moeCombine(Value x, Value weights) {
  int64_t n = cast<RankedTensorType>(x.getType()).getDimSize(1);
  return MoeCombineOp::create(b, loc, tokens(n), x, weights);
}

Value GraphBuilder::rope(Value x, const RopeParams &params) {
  bool llama3 = params.scaling == RopeScaling::llama3;
  bool longrope = params.scaling == RopeScaling::longrope;
  // LongRoPE chooses its factors by the context of each token's sequence.
  Value contextLen = longrope ? contract("context_len") : Value();
  Value queryStart = longrope ? contract("query_start") : Value();
  auto op = RopeOp::create(
      b, loc, x.getType(), x, contract("positions"), contextLen, queryStart,
      b.getI64IntegerAttr(m.headDim),
      b.getI64IntegerAttr(params.rotaryDim ? params.rotaryDim : m.headDim),
      b.getF64FloatAttr(params.theta),
      RopeStyleAttr::get(b.getContext(), RopeStyle::neox),
      RopeScalingAttr::get(b.getContext(), params.scaling), FloatAttr(),
      FloatAttr(), FloatAttr(), IntegerAttr(), DenseElementsAttr(),
      DenseElementsAttr(), FloatAttr());
  if (params.scaling == RopeScaling::linear || llama3)
    op.setScalingFactorAttr(b.getF64FloatAttr(params.factor));
  if (llama3) {
    op.setLowFreqFactorAttr(b.getF64FloatAttr(params.lowFreqFactor));
    op.setHighFreqFactorAttr(b.getF64FloatAttr(params.highFreqFactor));
  }
  if (llama3 || longrope)
    op.setOriginalMaxPositionAttr(b.getI64IntegerAttr(params.originalMaxPosition));
  if (longrope) {
    auto factors = [&](ArrayRef<float> values) {
      auto type = RankedTensorType::get({static_cast<int64_t>(values.size())}, f32());
      return DenseElementsAttr::get(type, values);
    };
    op.setShortFactorAttr(factors(params.shortFactor));
    op.setLongFactorAttr(factors(params.longFactor));
    op.setAttentionFactorAttr(b.getF64FloatAttr(params.attentionFactor));
  }
  return op;
}

Value GraphBuilder::attention(int64_t layer, Value q, Value k, Value v,
                              std::optional<int64_t> slidingWindow,
                              std::optional<double> scale,
                              std::optional<double> softcap) {
  Value slots = contract("slot_mapping");
  Value kc = KvWriteOp::create(b, loc, cacheType(), k, cache(layer, 0), slots,
                               /*scale=*/DenseF32ArrayAttr());
  Value vc = KvWriteOp::create(b, loc, cacheType(), v, cache(layer, 1), slots,
                               /*scale=*/DenseF32ArrayAttr());
  auto lseType = RankedTensorType::get({ShapedType::kDynamic, m.heads}, f32());
  auto op = PagedAttentionOp::create(
      b, loc, tokens(m.heads * m.headDim), lseType, q, kc, vc,
      contract("block_table"), contract("context_len"), contract("query_start"),
      b.getI64IntegerAttr(m.heads),
      b.getF32FloatAttr(scale ? *scale : 1.0 / std::sqrt(static_cast<double>(m.headDim))),
      slidingWindow ? b.getI64IntegerAttr(*slidingWindow) : IntegerAttr(),
      softcap ? b.getF32FloatAttr(*softcap) : FloatAttr(),
      /*key_scale=*/DenseF32ArrayAttr(), /*value_scale=*/DenseF32ArrayAttr());
  return op.getResult();
}

std::pair<Value, Value> GraphBuilder::rmsNorm(Value x, Value residual, Value w,
                                              double epsilon, double weightOffset) {
  auto op = RmsNormOp::create(b, loc, x, w, residual, b.getF32FloatAttr(epsilon),
                              weightOffset != 0 ? b.getF32FloatAttr(weightOffset)
                                                : FloatAttr());
  return {op.getResult(), residual ? op.getResidualOut() : x};
}

std::pair<Value, Value> GraphBuilder::layerNorm(Value x, Value residual, Value w,
                                                Value bias, double epsilon) {
  auto op = LayerNormOp::create(b, loc, x, w, bias, residual,
                                b.getF32FloatAttr(epsilon));
  return {op.getResult(), residual ? op.getResidualOut() : x};
}

Value GraphBuilder::siluMul(Value gate, Value up) {
  return SiluMulOp::create(b, loc, gate.getType(), gate, up);
}

Value GraphBuilder::gelu(Value x, GeluApproximation approximation) {
  return GeluOp::create(b, loc, x.getType(), x, approximation);
}

Value GraphBuilder::geluMul(Value gate, Value up, GeluApproximation approximation) {
  return GeluMulOp::create(b, loc, gate.getType(), gate, up, approximation);
}

Value GraphBuilder::softcap(Value x, double cap) {
  return SoftcapOp::create(b, loc, x.getType(), x, b.getF32FloatAttr(cap));
}

Value GraphBuilder::logits(Value hidden, Value head) {
  int64_t width = cast<RankedTensorType>(hidden.getType()).getDimSize(1);
  Value rows = GatherRowsOp::create(b, loc, tokens(width), hidden,
                                    contract("logits_rows"));
  return linear(rows, head);
}

SmallVector<Value> GraphBuilder::sample(Value logits) {
  Value adjusted = AdjustLogitsOp::create(
      b, loc, logits.getType(), logits, contract("penalty_start"),
      contract("penalty_tokens"), contract("penalty_counts"),
      contract("logit_bias"), contract("presence_penalty"),
      contract("frequency_penalty"), contract("repetition_penalty"),
      contract("mask_index"), contract("token_mask"));
  Value tokens = SampleOp::create(
      b, loc, contractType(abi::kStepResults[0]), adjusted,
      contract("temperature"), contract("top_p"), contract("top_k"),
      contract("min_p"), contract("seed"), contract("context_len"));
  auto logprobs = LogprobsOp::create(
      b, loc, contractType(abi::kStepResults[1]),
      contractType(abi::kStepResults[2]), contractType(abi::kStepResults[3]),
      logits, tokens, contract("num_logprobs"));
  return {tokens, logprobs.getTokenLogprob(), logprobs.getTopTokens(),
          logprobs.getTopLogprobs()};
}
