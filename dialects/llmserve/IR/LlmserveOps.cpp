//===- LlmserveOps.cpp - llmserve op verifiers and type inference ---------===//

#include "llmserve/IR/LlmserveOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"

#include <cmath>
#include <tuple>

using namespace mlir;
using namespace mlir::llmserve;

#define GET_OP_CLASSES
#include "llmserve/IR/LlmserveOps.cpp.inc"

void LlmserveDialect::registerOps() {
  addOperations<
#define GET_OP_LIST
#include "llmserve/IR/LlmserveOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Verification helpers. Dynamic dims match anything: only relations between
// static sizes are checked. Each helper names the operands in its message.
//===----------------------------------------------------------------------===//

static bool isStatic(int64_t size) { return !ShapedType::isDynamic(size); }

// `aName` dim `aDim` must equal `bName` dim `bDim`.
static LogicalResult verifyDimsMatch(Operation *op, StringRef aName,
                                     Value a, unsigned aDim, StringRef bName,
                                     Value b, unsigned bDim) {
  int64_t aSize = cast<ShapedType>(a.getType()).getDimSize(aDim);
  int64_t bSize = cast<ShapedType>(b.getType()).getDimSize(bDim);
  if (!isStatic(aSize) || !isStatic(bSize) || aSize == bSize)
    return success();
  return op->emitOpError() << aName << " dim " << aDim << " (" << aSize
                           << ") must equal " << bName << " dim " << bDim
                           << " (" << bSize << ")";
}

// Whether size == a * b, for sizes whose product may overflow.
static bool isProduct(int64_t size, int64_t a, int64_t b) {
  if (b == 0)
    return size == 0;
  return size % b == 0 && size / b == a;
}

// `name` dim `dim` must equal `expected`, which the message calls `what`.
static LogicalResult verifyDimIs(Operation *op, StringRef name, Value value,
                                 unsigned dim, int64_t expected,
                                 StringRef what) {
  int64_t size = cast<ShapedType>(value.getType()).getDimSize(dim);
  if (!isStatic(size) || size == expected)
    return success();
  return op->emitOpError() << name << " dim " << dim << " (" << size
                           << ") must equal " << what << " (" << expected
                           << ")";
}

static LogicalResult verifySameElementType(Operation *op, StringRef aName,
                                           Value a, StringRef bName,
                                           Value b) {
  Type aType = cast<ShapedType>(a.getType()).getElementType();
  Type bType = cast<ShapedType>(b.getType()).getElementType();
  if (aType == bType)
    return success();
  return op->emitOpError() << aName << " element type " << aType
                           << " must equal " << bName << " element type "
                           << bType;
}

// The shortest decimal that round-trips, as a user would write it ("0.5").
static std::string formatFloat(FloatAttr attr) {
  SmallString<16> text;
  attr.getValue().toString(text);
  return text.str().str();
}

static LogicalResult verifyPositive(Operation *op, StringRef name,
                                    IntegerAttr attr) {
  if (!attr || attr.getInt() > 0)
    return success();
  return op->emitOpError() << name << " must be positive, got "
                           << attr.getInt();
}

static LogicalResult verifyPositive(Operation *op, StringRef name,
                                    FloatAttr attr) {
  // Written so that NaN fails too.
  if (!attr || attr.getValueAsDouble() > 0)
    return success();
  return op->emitOpError() << name << " must be positive, got "
                           << formatFloat(attr);
}

static LogicalResult verifyPositiveFinite(Operation *op, StringRef name,
                                          FloatAttr attr) {
  if (!attr || (attr.getValueAsDouble() > 0 && attr.getValue().isFinite()))
    return success();
  return op->emitOpError() << name << " must be positive and finite, got "
                           << formatFloat(attr);
}

// query_start [S + 1] has one entry more than `perSequence` [S] (named
// `name`).
static LogicalResult verifyOneMoreStart(Operation *op, Value queryStart,
                                        StringRef name, Value perSequence) {
  int64_t starts = cast<ShapedType>(queryStart.getType()).getDimSize(0);
  int64_t sequences = cast<ShapedType>(perSequence.getType()).getDimSize(0);
  if (!isStatic(starts) || !isStatic(sequences) || starts - 1 == sequences)
    return success();
  return op->emitOpError() << "query_start dim 0 (" << starts << ") must equal "
                           << name << " dim 0 (" << sequences << ") + 1";
}

//===----------------------------------------------------------------------===//
// WeightOp
//===----------------------------------------------------------------------===//

Type mlir::llmserve::expertScalesType(Type weight) {
  auto type = cast<ShapedType>(weight);
  return RankedTensorType::get({type.getDimSize(0), type.getDimSize(1)},
                               Float32Type::get(weight.getContext()));
}

Type mlir::llmserve::quantizedZerosType(Type weight) {
  auto type = cast<ShapedType>(weight);
  return RankedTensorType::get(
      {type.getDimSize(0), type.getDimSize(1) / kInt4GroupColumns},
      IntegerType::get(weight.getContext(), 8));
}

Type mlir::llmserve::activationScalesType(Type input) {
  auto type = cast<ShapedType>(input);
  return RankedTensorType::get(
      {type.getDimSize(0),
       llvm::divideCeilSigned(type.getDimSize(1), kFp8BlockSize)},
      Float32Type::get(input.getContext()));
}

Type mlir::llmserve::quantizedScalesType(Type weight) {
  auto type = cast<ShapedType>(weight);
  Type f32 = Float32Type::get(weight.getContext());
  if (isa<Float8E4M3FNType>(type.getElementType()))
    return RankedTensorType::get(
        {llvm::divideCeilSigned(type.getDimSize(0), kFp8BlockSize),
         llvm::divideCeilSigned(type.getDimSize(1), kFp8BlockSize)},
        f32);
  if (type.getElementType().isInteger(4))
    return RankedTensorType::get(
        {type.getDimSize(0), type.getDimSize(1) / kInt4GroupColumns}, f32);
  return RankedTensorType::get({type.getDimSize(0)}, f32);
}

LogicalResult WeightOp::verify() {
  if (getTensorName().empty())
    return emitOpError("tensor_name must not be empty");
  auto type = cast<RankedTensorType>(getType());
  if (!type.hasStaticShape())
    return emitOpError() << "result must be statically shaped, got " << type;
  // A stacked weight's dimension 0 counts its tensors, each of the rest.
  std::optional<int64_t> stacked = getStacked();
  int64_t tensorDim = stacked ? 1 : 0;
  if (stacked) {
    if (*stacked <= 0)
      return emitOpError() << "stacked must be positive, got " << *stacked;
    StringRef name = getTensorName();
    size_t at = name.find("{}");
    if (at == StringRef::npos || name.find("{}", at + 2) != StringRef::npos)
      return emitOpError() << "the tensor_name of a stacked weight must hold "
                              "'{}' once, where the index goes, got '"
                           << name << "'";
    if (type.getRank() < 2 || type.getDimSize(0) != *stacked)
      return emitOpError() << "a weight of " << *stacked
                           << " stacked tensors has a result of rank 2 or "
                              "more whose dim 0 is "
                           << *stacked << ", got " << type;
    if (getQuantization() &&
        *getQuantization() != WeightQuantization::int8_channel)
      return emitOpError("a stacked weight is quantized by int8_channel only");
  }
  // A quantized weight's scales are 1-D, whatever the stored tensor.
  if (getTransposed() && type.getRank() != 2 + tensorDim &&
      getPart() != QuantizedPart::scales)
    return emitOpError() << "a transposed weight must be "
                         << (stacked ? "3-D (stacked 2-D tensors)" : "2-D")
                         << ", got rank " << type.getRank();
  if (std::optional<ArrayRef<int64_t>> rows = getRows()) {
    if (type.getRank() <= tensorDim)
      return emitOpError("rows needs a result of rank 1 or more");
    if (rows->size() != 2 || (*rows)[0] < 0 || (*rows)[0] >= (*rows)[1])
      return emitOpError("rows must be [begin, end] with 0 <= begin < end");
    // FP8 block scales have a row per block of 128 rows (checked below).
    bool blockScales = getQuantization() == WeightQuantization::fp8_block128 &&
                       getPart() == QuantizedPart::scales;
    if (!blockScales && (*rows)[1] - (*rows)[0] != type.getDimSize(tensorDim))
      return emitOpError() << "rows [" << (*rows)[0] << ", " << (*rows)[1]
                           << "] select " << (*rows)[1] - (*rows)[0]
                           << " rows but the result has "
                           << type.getDimSize(tensorDim);
  }
  std::optional<WeightQuantization> quantization = getQuantization();
  std::optional<QuantizedPart> part = getPart();
  if (quantization.has_value() != part.has_value())
    return emitOpError("quantization and part go together");
  // A checkpoint quantized in 4 bits (GPTQ, AWQ, compressed-tensors'
  // pack-quantized): int4 with zero points, read from the module's tensors as
  // they are. Other layouts' weights are dequantized first, then read as any
  // float tensor is.
  bool fourBit = isFourBit(getCheckpoint());
  if (fourBit && (stacked || getTransposed()))
    return emitOpError("a weight from a 4-bit checkpoint is an untransposed, "
                       "unstacked linear");
  if (!fourBit && part == QuantizedPart::zeros)
    return emitOpError("zeros come from a 4-bit checkpoint ('from gptq', "
                       "'from gptq_v2', 'from awq' or "
                       "'from compressed_tensors_int4')");
  if (part == QuantizedPart::zeros) {
    if (type.getRank() != 2 || !type.getElementType().isInteger(8))
      return emitOpError() << "the zeros of an int4_group128 weight are a 2-D "
                              "i8 tensor (one per row and group of 128 "
                              "columns), got "
                           << type;
    return success();
  }
  if (!quantization) {
    if (!isa<FloatType>(type.getElementType()))
      return emitOpError() << "an unquantized weight must be a float tensor, "
                              "got "
                           << type;
    return success();
  }
  if (*quantization == WeightQuantization::fp8_block128)
    return verifyFp8Block128();
  // Stacked (int8_channel) arrays have the experts' dimension in front.
  bool int4 = *quantization == WeightQuantization::int4_group128;
  if (*part == QuantizedPart::values &&
      (type.getRank() != 2 + tensorDim ||
       !type.getElementType().isInteger(int4 ? 4 : 8) ||
       (int4 && type.getDimSize(1) % kInt4GroupColumns != 0)))
    return emitOpError() << "the values of an "
                         << stringifyWeightQuantization(*quantization)
                         << (stacked ? " stacked weight are a 3-D "
                                     : " weight are a 2-D ")
                         << (int4 ? "i4 tensor of a multiple of 128 columns"
                                  : "i8 tensor")
                         << ", got " << type;
  if (*part == QuantizedPart::scales &&
      (type.getRank() != (int4 ? 2 : 1) + tensorDim ||
       !type.getElementType().isF32()))
    return emitOpError() << "the scales of an "
                         << stringifyWeightQuantization(*quantization)
                         << " weight are a "
                         << (stacked ? "2-D f32 tensor (one per expert and row)"
                             : int4  ? "2-D f32 tensor (one per row and group "
                                       "of 128 columns)"
                                     : "1-D f32 tensor (one per row)")
                         << ", got " << type;
  return success();
}

/// An FP8 checkpoint's codes and block scales, as stored: a 2-D weight of
/// whole blocks of 128 rows (rows may start only where a block does).
LogicalResult WeightOp::verifyFp8Block128() {
  auto type = cast<RankedTensorType>(getType());
  if (getCheckpoint() != QuantizedCheckpoint::fp8_block128 || getStacked() ||
      getTransposed())
    return emitOpError("fp8_block128 arrays are an FP8 checkpoint's (from "
                       "fp8_block128), untransposed and unstacked");
  std::optional<ArrayRef<int64_t>> rows = getRows();
  if (rows && (*rows)[0] % kFp8BlockSize != 0)
    return emitOpError() << "the rows of fp8_block128 arrays start at a "
                            "block of "
                         << kFp8BlockSize << " rows, got " << (*rows)[0];
  if (getPart() == QuantizedPart::values) {
    if (type.getRank() != 2 || !isa<Float8E4M3FNType>(type.getElementType()))
      return emitOpError() << "the values of an fp8_block128 weight are a "
                              "2-D f8E4M3FN tensor, got "
                           << type;
    return success();
  }
  if (type.getRank() != 2 || !type.getElementType().isF32())
    return emitOpError() << "the scales of an fp8_block128 weight are a 2-D "
                            "f32 tensor (one per block of 128 x 128), got "
                         << type;
  if (rows) {
    int64_t blocks = llvm::divideCeilSigned((*rows)[1], kFp8BlockSize) -
                     (*rows)[0] / kFp8BlockSize;
    if (type.getDimSize(0) != blocks)
      return emitOpError() << "rows [" << (*rows)[0] << ", " << (*rows)[1]
                           << "] span " << blocks
                           << " blocks of 128 rows, but the scales have "
                           << type.getDimSize(0);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  Operation *op = getOperation();
  if (failed(verifySameElementType(op, "result", getResult(), "table",
                                   getTable())) ||
      failed(verifyDimsMatch(op, "result", getResult(), 0, "ids", getIds(),
                             0)) ||
      failed(verifyDimsMatch(op, "result", getResult(), 1, "table",
                             getTable(), 1)))
    return failure();
  if (std::optional<APFloat> scale = getScale(); scale && !scale->isFinite())
    return emitOpError() << "scale must be finite";
  return success();
}

//===----------------------------------------------------------------------===//
// RmsNormOp and LayerNormOp
//===----------------------------------------------------------------------===//

// `bias` is null for rms_norm, `residual` null when there is none. The
// weight's size is the group each row is normalized in: all of it, or
// equal parts of it (per-head norms).
static LogicalResult verifyNorm(Operation *op, Value input, Value weight,
                                Value bias, Value residual,
                                FloatAttr epsilon) {
  if (failed(verifySameElementType(op, "weight", weight, "input", input)))
    return failure();
  int64_t group = cast<ShapedType>(weight.getType()).getDimSize(0);
  int64_t width = cast<ShapedType>(input.getType()).getDimSize(1);
  if (isStatic(width) && isStatic(group) && (group == 0 || width % group != 0))
    return op->emitOpError() << "weight dim 0 (" << group
                             << ") must divide input dim 1 (" << width << ")";
  if (bias &&
      (failed(verifySameElementType(op, "bias", bias, "input", input)) ||
       failed(verifyDimsMatch(op, "bias", bias, 0, "weight", weight, 0))))
    return failure();
  if (residual && residual.getType() != input.getType())
    return op->emitOpError() << "residual type " << residual.getType()
                             << " must equal input type " << input.getType();
  // Not positive-only: epsilon 0 is a valid (if fragile) choice.
  if (!(epsilon.getValueAsDouble() >= 0))
    return op->emitOpError() << "epsilon must be non-negative, got "
                             << formatFloat(epsilon);
  return success();
}

// Both results take the input's type; residual_out exists iff residual does.
template <typename Adaptor>
static void inferNormResultTypes(Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  if (adaptor.getResidual())
    inferred.push_back(adaptor.getInput().getType());
}

LogicalResult RmsNormOp::verify() {
  if (!getWeightOffset().isFinite())
    return emitOpError() << "weight_offset must be finite";
  return verifyNorm(getOperation(), getInput(), getWeight(), /*bias=*/{},
                    getResidual(), getEpsilonAttr());
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  inferNormResultTypes(adaptor, inferred);
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(getOperation(), getInput(), getWeight(), getBias(),
                    getResidual(), getEpsilonAttr());
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  inferNormResultTypes(adaptor, inferred);
  return success();
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  Operation *op = getOperation();
  Value input = getInput(), weight = getWeight(), bias = getBias();
  Value result = getResult();
  Type weightElement = cast<ShapedType>(weight.getType()).getElementType();
  bool quantized = weightElement.isInteger(8) || weightElement.isInteger(4) ||
                   isa<Float8E4M3FNType>(weightElement);
  if (quantized != bool(getScales()))
    return emitOpError(quantized
                           ? "an i8, i4 or f8E4M3FN weight needs scales"
                           : "scales go with an i8, i4 or f8E4M3FN weight only");
  if (getZeros() && !weightElement.isInteger(4))
    return emitOpError("zeros go with an i4 weight only");
  if (weightElement.isInteger(4) &&
      cast<ShapedType>(weight.getType()).getDimSize(1) % kInt4GroupColumns != 0)
    return emitOpError() << "an i4 weight has scales per group of "
                         << kInt4GroupColumns
                         << " columns, so K must be a multiple of it, got "
                         << weight.getType();
  Type resultElement = cast<ShapedType>(result.getType()).getElementType();
  Type inputElement = cast<ShapedType>(input.getType()).getElementType();
  bool fp8Input = isa<Float8E4M3FNType>(inputElement);
  if (fp8Input != bool(getInputScales()))
    return emitOpError(fp8Input
                           ? "an f8E4M3FN input needs input_scales"
                           : "input_scales go with an f8E4M3FN input only");
  // W8A8: the codes of x and of W, summed into the result's type, which the
  // bias has too.
  if (fp8Input && !isa<Float8E4M3FNType>(weightElement))
    return emitOpError() << "an f8E4M3FN input needs an f8E4M3FN weight, got "
                         << weight.getType();
  // A narrow (f16/bf16) linear may produce f32: the logits that sample reads;
  // and an f32 linear may read a narrow weight (the CPU's widened weights).
  bool widenedWeight = inputElement.isF32() && !quantized &&
                       isa<FloatType>(weightElement);
  if ((!fp8Input && !quantized && !widenedWeight &&
       failed(verifySameElementType(op, "weight", weight, "input", input))) ||
      (!fp8Input && !resultElement.isF32() &&
       failed(verifySameElementType(op, "result", result, "input", input))) ||
      failed(verifyDimsMatch(op, "input", input, 1, "weight", weight, 1)) ||
      failed(verifyDimsMatch(op, "result", result, 0, "input", input, 0)) ||
      failed(verifyDimsMatch(op, "result", result, 1, "weight", weight, 0)))
    return failure();
  if (bias &&
      (failed(verifySameElementType(op, "bias", bias,
                                    fp8Input ? "result" : "input",
                                    fp8Input ? result : input)) ||
       failed(verifyDimsMatch(op, "bias", bias, 0, "weight", weight, 0))))
    return failure();
  return success();
}

LogicalResult QuantizeFp8Op::verify() {
  Operation *op = getOperation();
  Value codes = getCodes(), input = getInput();
  return success(
      succeeded(verifyDimsMatch(op, "codes", codes, 0, "input", input, 0)) &&
      succeeded(verifyDimsMatch(op, "codes", codes, 1, "input", input, 1)));
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult MoeRouterOp::verify() {
  Operation *op = getOperation();
  int64_t topK = getTopK();
  int64_t numExperts = getLogits().getType().getDimSize(1);
  if (isStatic(numExperts) && topK > numExperts)
    return emitOpError() << "top_k (" << topK << ") must not exceed the "
                         << numExperts << " experts of logits dim 1";
  if (failed(verifyDimIs(op, "weights", getWeights(), 1, topK, "top_k")) ||
      failed(verifyDimIs(op, "experts", getExperts(), 1, topK, "top_k")) ||
      failed(verifyDimsMatch(op, "weights", getWeights(), 0, "logits",
                             getLogits(), 0)) ||
      failed(verifyDimsMatch(op, "experts", getExperts(), 0, "logits",
                             getLogits(), 0)))
    return failure();
  return success();
}

// `name` dim 0 must be T * k for `experts` (or `weights`) [T, k].
static LogicalResult verifySlotRows(Operation *op, StringRef name, Value slots,
                                    StringRef perToken, Value tokens) {
  auto tokenType = cast<ShapedType>(tokens.getType());
  if (!isStatic(tokenType.getDimSize(1)))
    return op->emitOpError() << perToken
                             << " must have a static dim 1 (the slots of a "
                                "token), got "
                             << tokenType;
  int64_t rows = cast<ShapedType>(slots.getType()).getDimSize(0);
  int64_t t = tokenType.getDimSize(0), k = tokenType.getDimSize(1);
  if (!isStatic(rows) || !isStatic(t) || !isStatic(k) || isProduct(rows, t, k))
    return success();
  return op->emitOpError() << name << " dim 0 (" << rows << ") must equal "
                           << perToken << " dim 0 times dim 1 (" << t << " x "
                           << k << ")";
}

LogicalResult ExpertLinearOp::verify() {
  Operation *op = getOperation();
  Value input = getInput(), weight = getWeight(), experts = getExperts();
  Value result = getResult();
  bool quantized =
      cast<ShapedType>(weight.getType()).getElementType().isInteger(8);
  if (quantized != bool(getScales()))
    return emitOpError(quantized ? "an i8 weight needs scales"
                                 : "scales go with an i8 weight only");
  // An f32 input may read narrow experts (the CPU's widened weights).
  bool widenedWeight =
      cast<ShapedType>(input.getType()).getElementType().isF32() &&
      isa<FloatType>(cast<ShapedType>(weight.getType()).getElementType());
  if ((!quantized && !widenedWeight &&
       failed(verifySameElementType(op, "weight", weight, "input", input))) ||
      failed(verifySameElementType(op, "result", result, "input", input)) ||
      failed(verifyDimsMatch(op, "input", input, 1, "weight", weight, 2)) ||
      failed(verifyDimsMatch(op, "result", result, 1, "weight", weight, 1)) ||
      failed(verifySlotRows(op, "result", result, "experts", experts)))
    return failure();
  if (getPerSlot())
    return verifySlotRows(op, "input (per_slot)", input, "experts", experts);
  return verifyDimsMatch(op, "input", input, 0, "experts", experts, 0);
}

LogicalResult MoeCombineOp::verify() {
  Operation *op = getOperation();
  if (failed(verifySameElementType(op, "result", getResult(), "input",
                                   getInput())) ||
      failed(verifyDimsMatch(op, "result", getResult(), 1, "input",
                             getInput(), 1)) ||
      failed(verifyDimsMatch(op, "result", getResult(), 0, "weights",
                             getWeights(), 0)))
    return failure();
  return verifySlotRows(op, "input", getInput(), "weights", getWeights());
}

//===----------------------------------------------------------------------===//
// RopeOp
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::verify() {
  Operation *op = getOperation();
  int64_t headDim = getHeadDimAttr().getInt();
  int64_t rotaryDim = getRotaryDimAttr().getInt();
  if (failed(verifyPositive(op, "head_dim", getHeadDimAttr())) ||
      failed(verifyPositive(op, "rotary_dim", getRotaryDimAttr())) ||
      failed(verifyPositive(op, "theta", getThetaAttr())))
    return failure();
  if (rotaryDim % 2 != 0)
    return emitOpError() << "rotary_dim must be even, got " << rotaryDim;
  if (rotaryDim > headDim)
    return emitOpError() << "rotary_dim (" << rotaryDim
                         << ") must not exceed head_dim (" << headDim << ")";
  int64_t width = getInput().getType().getDimSize(1);
  if (isStatic(width) && width % headDim != 0)
    return emitOpError() << "input dim 1 (" << width
                         << ") must be a multiple of head_dim (" << headDim
                         << ")";
  if (failed(verifyDimsMatch(op, "positions", getPositions(), 0, "input",
                             getInput(), 0)))
    return failure();

  // What each scaling kind takes, all of it needed.
  RopeScaling scaling = getScaling();
  bool linear = scaling == RopeScaling::linear;
  bool llama3 = scaling == RopeScaling::llama3;
  bool longrope = scaling == RopeScaling::longrope;
  const std::tuple<StringRef, bool, bool> taken[] = {
      {"scaling_factor", bool(getScalingFactorAttr()), linear || llama3},
      {"low_freq_factor", bool(getLowFreqFactorAttr()), llama3},
      {"high_freq_factor", bool(getHighFreqFactorAttr()), llama3},
      {"original_max_position", bool(getOriginalMaxPositionAttr()),
       llama3 || longrope},
      {"short_factor", bool(getShortFactorAttr()), longrope},
      {"long_factor", bool(getLongFactorAttr()), longrope},
      {"attention_factor", bool(getAttentionFactorAttr()), longrope},
      {"context_len", bool(getContextLen()), longrope},
      {"query_start", bool(getQueryStart()), longrope}};
  StringRef scalingName = stringifyRopeScaling(scaling);
  for (auto [name, present, needed] : taken) {
    if (needed && !present)
      return emitOpError() << "scaling " << scalingName << " needs " << name;
    if (!needed && present)
      return emitOpError() << "scaling " << scalingName << " takes no " << name;
  }
  if (failed(verifyPositive(op, "scaling_factor", getScalingFactorAttr())) ||
      failed(verifyPositive(op, "low_freq_factor", getLowFreqFactorAttr())) ||
      failed(verifyPositive(op, "original_max_position",
                            getOriginalMaxPositionAttr())) ||
      failed(verifyPositiveFinite(op, "attention_factor",
                                  getAttentionFactorAttr())))
    return failure();
  if (longrope) {
    // One factor per rotated pair; each divides a frequency.
    for (auto [name, factors] :
         {std::pair(StringRef("short_factor"), getShortFactorAttr()),
          std::pair(StringRef("long_factor"), getLongFactorAttr())}) {
      ShapedType type = factors.getType();
      if (type.getRank() != 1 || type.getDimSize(0) != rotaryDim / 2)
        return emitOpError()
               << name << " must hold rotary_dim / 2 = " << rotaryDim / 2
               << " factors, got " << type;
      if (!llvm::all_of(factors.getValues<float>(),
                        [](float f) { return f > 0 && std::isfinite(f); }))
        return emitOpError() << name << " entries must be positive and finite";
    }
    if (failed(verifyOneMoreStart(op, getQueryStart(), "context_len",
                                  getContextLen())))
      return failure();
  }
  // llama3 interpolates between the two wavelength thresholds.
  if (llama3 && !(getHighFreqFactorAttr().getValueAsDouble() >
                  getLowFreqFactorAttr().getValueAsDouble()))
    return emitOpError() << "high_freq_factor ("
                         << formatFloat(getHighFreqFactorAttr())
                         << ") must exceed low_freq_factor ("
                         << formatFloat(getLowFreqFactorAttr()) << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// KvWriteOp
//===----------------------------------------------------------------------===//

/// A KV cache of the activations' own type has no scales; an 8-bit one
/// needs them: one for the cache or one per KV head, each positive and
/// finite.
static LogicalResult verifyCacheScales(Operation *op, StringRef valueName,
                                       Value value, Value cache,
                                       ArrayRef<std::pair<StringRef, DenseF32ArrayAttr>>
                                           scales) {
  auto cacheType = cast<ShapedType>(cache.getType());
  bool quantized = isa<Float8E4M3FNType>(cacheType.getElementType());
  int64_t kvHeads = cacheType.getDimSize(2);
  for (auto [name, scale] : scales) {
    if (quantized && !scale)
      return op->emitOpError() << "an f8E4M3FN cache needs its " << name;
    if (!quantized && scale)
      return op->emitOpError()
             << name << " applies to an f8E4M3FN cache only";
    if (!scale)
      continue;
    int64_t count = scale.size();
    if (count != 1 && !isStatic(kvHeads))
      return op->emitOpError() << name << " holds one scale per KV head, and the "
                                          "cache's number of KV heads is dynamic";
    if (count != 1 && count != kvHeads)
      return op->emitOpError() << name << " holds one scale or one per KV head ("
                               << kvHeads << "), got " << count;
    if (!llvm::all_of(scale.asArrayRef(),
                      [](float f) { return f > 0 && std::isfinite(f); }))
      return op->emitOpError() << name << " entries must be positive and finite";
  }
  if (quantized)
    return success();
  return verifySameElementType(op, valueName, value, "cache", cache);
}

LogicalResult KvWriteOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyCacheScales(op, "input", getInput(), getCache(),
                               {{"scale", getScaleAttr()}})) ||
      failed(verifyDimsMatch(op, "slot_mapping", getSlotMapping(), 0, "input",
                             getInput(), 0)))
    return failure();
  RankedTensorType cache = getCache().getType();
  int64_t width = getInput().getType().getDimSize(1);
  int64_t kvHeads = cache.getDimSize(2), headDim = cache.getDimSize(3);
  if (isStatic(width) && isStatic(kvHeads) && isStatic(headDim) &&
      !isProduct(width, kvHeads, headDim))
    return emitOpError() << "input dim 1 (" << width
                         << ") must equal cache kv_heads x head_dim ("
                         << kvHeads << " x " << headDim << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// PagedAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult PagedAttentionOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyPositive(op, "num_heads", getNumHeadsAttr())) ||
      failed(verifyPositive(op, "scale", getScaleAttr())) ||
      failed(verifyPositive(op, "sliding_window", getSlidingWindowAttr())) ||
      failed(verifyPositiveFinite(op, "softcap", getSoftcapAttr())) ||
      failed(verifyCacheScales(op, "query", getQuery(), getKeyCache(),
                               {{"key_scale", getKeyScaleAttr()},
                                {"value_scale", getValueScaleAttr()}})))
    return failure();

  int64_t numHeads = getNumHeadsAttr().getInt();
  RankedTensorType cache = getKeyCache().getType();
  int64_t kvHeads = cache.getDimSize(2), headDim = cache.getDimSize(3);
  if (isStatic(kvHeads) && (kvHeads == 0 || numHeads % kvHeads != 0))
    return emitOpError() << "num_heads (" << numHeads
                         << ") must be a multiple of the cache's kv_heads ("
                         << kvHeads << ")";
  int64_t width = getQuery().getType().getDimSize(1);
  if (isStatic(width) && isStatic(headDim) &&
      !isProduct(width, numHeads, headDim))
    return emitOpError() << "query dim 1 (" << width
                         << ") must equal num_heads x cache head_dim ("
                         << numHeads << " x " << headDim << ")";

  if (failed(verifyDimsMatch(op, "block_table", getBlockTable(), 0,
                             "context_len", getContextLen(), 0)) ||
      failed(verifyOneMoreStart(op, getQueryStart(), "context_len",
                                getContextLen())) ||
      failed(verifyOneMoreStart(op, getQueryStart(), "block_table",
                                getBlockTable())) ||
      failed(verifyDimsMatch(op, "lse", getLse(), 0, "query", getQuery(), 0)) ||
      failed(verifyDimIs(op, "lse", getLse(), 1, numHeads, "num_heads")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// GatherRowsOp
//===----------------------------------------------------------------------===//

LogicalResult GatherRowsOp::verify() {
  Operation *op = getOperation();
  if (failed(verifySameElementType(op, "result", getResult(), "input",
                                   getInput())) ||
      failed(verifyDimsMatch(op, "result", getResult(), 0, "rows", getRows(),
                             0)) ||
      failed(verifyDimsMatch(op, "result", getResult(), 1, "input",
                             getInput(), 1)))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// SampleOp
//===----------------------------------------------------------------------===//

LogicalResult SampleOp::verify() {
  Operation *op = getOperation();
  // Every per-sequence operand, and the result, has one entry per logits row.
  const std::pair<StringRef, Value> perSequence[] = {
      {"temperature", getTemperature()}, {"top_p", getTopP()},
      {"top_k", getTopK()},              {"min_p", getMinP()},
      {"seed", getSeed()},               {"rng_offset", getRngOffset()},
      {"result", getResult()}};
  for (const auto &[name, value] : perSequence)
    if (failed(verifyDimsMatch(op, name, value, 0, "logits", getLogits(), 0)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// AdjustLogitsOp
//===----------------------------------------------------------------------===//

LogicalResult AdjustLogitsOp::verify() {
  Operation *op = getOperation();
  if (failed(verifySameElementType(op, "result", getResult(), "logits",
                                   getLogits())) ||
      failed(verifyDimsMatch(op, "result", getResult(), 1, "logits",
                             getLogits(), 1)))
    return failure();
  const std::pair<StringRef, Value> perSequence[] = {
      {"result", getResult()},
      {"presence_penalty", getPresencePenalty()},
      {"frequency_penalty", getFrequencyPenalty()},
      {"repetition_penalty", getRepetitionPenalty()},
      {"mask_index", getMaskIndex()}};
  for (const auto &[name, value] : perSequence)
    if (failed(verifyDimsMatch(op, name, value, 0, "logits", getLogits(), 0)))
      return failure();
  const std::pair<StringRef, Value> perEntry[] = {{"counts", getCounts()},
                                                  {"bias", getBias()}};
  for (const auto &[name, value] : perEntry)
    if (failed(verifyDimsMatch(op, name, value, 0, "tokens", getTokens(), 0)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// LogprobsOp
//===----------------------------------------------------------------------===//

LogicalResult LogprobsOp::verify() {
  Operation *op = getOperation();
  const std::pair<StringRef, Value> perSequence[] = {
      {"tokens", getTokens()},
      {"num_logprobs", getNumLogprobs()},
      {"token_logprob", getTokenLogprob()},
      {"top_tokens", getTopTokens()},
      {"top_logprobs", getTopLogprobs()}};
  for (const auto &[name, value] : perSequence)
    if (failed(verifyDimsMatch(op, name, value, 0, "logits", getLogits(), 0)))
      return failure();
  if (failed(verifyDimsMatch(op, "top_logprobs", getTopLogprobs(), 1,
                             "top_tokens", getTopTokens(), 1)))
    return failure();
  if (getTopTokens().getType().isDynamicDim(1) ||
      getTopLogprobs().getType().isDynamicDim(1))
    return emitOpError("the number of top log-probs (dimension 1 of "
                       "top_tokens and top_logprobs) must be static");
  return success();
}

//===----------------------------------------------------------------------===//
// DispatchRegionOp
//===----------------------------------------------------------------------===//

LogicalResult DispatchRegionOp::verify() {
  Block &body = getBody().front();
  if (getNumResults() == 0)
    return emitOpError("yields no value");
  if (body.getArgumentTypes() != getInputs().getTypes())
    return emitOpError("has entry block arguments of types (")
           << body.getArgumentTypes() << ") for inputs of types ("
           << getInputs().getTypes() << ")";
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields values of types (")
           << yield.getValues().getTypes() << ") for results of types ("
           << getResultTypes() << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// SoftcapOp
//===----------------------------------------------------------------------===//

LogicalResult SoftcapOp::verify() {
  return verifyPositiveFinite(getOperation(), "cap", getCapAttr());
}
