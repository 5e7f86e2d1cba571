//===- GraphBuilder.h - The step function's shared pieces ------*- C++ -*-===//
//
// Builds the `step` function (and `logits` when asked) of a Model: its
// signature (the step contract and one K and one V cache per layer), the
// sampling that ends it, and the pieces every family's graph is made of.
// Residual adds are fused into the norms: a norm takes the previous
// sublayer's output plus the residual stream and returns the new stream.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_IMPORT_GRAPHBUILDER_H
#define LLMSERVE_IMPORT_GRAPHBUILDER_H

#include "compiler/Import/HfImporter.h"
#include "compiler/Import/Model.h"
#include "llmserve/abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::llmserve {

class GraphBuilder {
public:
  /// `names` are the checkpoint's tensors; empty means the weights are not
  /// there, and names are not checked. With `quantized`, the checkpoint's
  /// decoder-layer linears are stored so.
  GraphBuilder(MLIRContext *context, const ModelShape &shape,
               const ImportOptions &options, const llvm::StringSet<> &names,
               std::optional<StoredQuantization> quantized = {});

  /// The module of `model`'s entry points; an error names the first tensor
  /// the checkpoint lacks.
  llvm::Expected<OwningOpRef<ModuleOp>> build(const Model &model);

  OpBuilder &builder() { return b; }
  Location location() const { return loc; }
  /// f32 activations [T, width].
  RankedTensorType tokens(int64_t width);
  /// The step-contract argument `name` (step_arguments.def).
  Value contract(llvm::StringRef name);

  /// A checkpoint tensor, optionally transposed and restricted to rows
  /// [rowBegin, rowBegin + shape[0]) of the (transposed) tensor. The weight
  /// of a linear the checkpoint stores quantized is its int4 values, which
  /// `linear` reads with their scales and zero points.
  Value weight(const std::string &name, ArrayRef<int64_t> shape,
               bool transposed = false, std::optional<int64_t> rowBegin = {});
  /// Rows of `table` for the contract array `indices` (token ids,
  /// positions), times `scale` if given.
  Value embedding(Value table, llvm::StringRef indices,
                  std::optional<double> scale = {});
  /// The tensors `pattern` names with its "{}" replaced by 0 .. count - 1,
  /// each of `shape`, stacked into [count, shape...].
  Value stackedWeight(const std::string &pattern, int64_t count,
                      ArrayRef<int64_t> shape);
  Value linear(Value x, Value w, Value bias = {});
  /// Each token's top_k experts from the router's logits: {weights [T, k],
  /// experts [T, k]}.
  std::pair<Value, Value> moeRouter(Value logits, int64_t topK,
                                    MoeScoring scoring, bool normalized);
  /// x·Wₑᵀ for each (token, slot) pair's expert: [T * k, N]; the input has
  /// a row per token, or with `perSlot` a row per pair.
  Value expertLinear(Value x, Value w, Value experts, bool perSlot);
  /// Each token's sum of its pairs' rows times their weights.
  Value moeCombine(Value x, Value weights);
  Value rope(Value x, const RopeParams &params);
  /// Attention of layer `layer` over the paged cache: K and V written
  /// first, then read. Scores are scaled by `scale`, 1/sqrt(head_dim) by
  /// default, and soft-capped by `softcap` if given.
  Value attention(int64_t layer, Value q, Value k, Value v,
                  std::optional<int64_t> slidingWindow = {},
                  std::optional<double> scale = {},
                  std::optional<double> softcap = {});
  /// rms_norm of `x` (+ `residual`) with weight `w` (+ `weightOffset`):
  /// {normalized, new residual stream}.
  std::pair<Value, Value> rmsNorm(Value x, Value residual, Value w, double epsilon,
                                  double weightOffset = 0);
  std::pair<Value, Value> layerNorm(Value x, Value residual, Value w, Value bias,
                                    double epsilon);
  Value siluMul(Value gate, Value up);
  Value gelu(Value x, GeluApproximation approximation);
  Value geluMul(Value gate, Value up, GeluApproximation approximation);
  /// cap * tanh(x / cap).
  Value softcap(Value x, double cap);
  /// The logits of the last row of every sequence.
  Value logits(Value hidden, Value head);

private:
  void buildEntry(const Model &model, StringRef name, bool returnLogits);
  Type f32();
  RankedTensorType cacheType();
  RankedTensorType contractType(const ::llmserve::abi::ContractArray &c);
  func::FuncOp createStepFunction(StringRef name, bool returnLogits);
  Value cache(int64_t layer, int role);
  /// The step's results: tokens sampled from the penalised logits, and
  /// log-probs of the model's own distribution.
  SmallVector<Value> sample(Value logits);

  /// The layout in which the checkpoint stores the linear `module` in 4
  /// bits, if it does.
  std::optional<QuantizedCheckpoint> fourBitLayout(llvm::StringRef module) const;
  /// `from <layout>` where the checkpoint stores the tensor `name` quantized
  /// in a layout that is dequantized at load (FP8 with block scales,
  /// compressed-tensors' FP8 and int8), else null.
  QuantizedCheckpointAttr dequantizedOrigin(llvm::StringRef name) const;
  /// `name` as a weight op of `type`, read as stored (dequantized when in
  /// FP8), noting a missing tensor.
  Value storedWeight(llvm::StringRef name, RankedTensorType type,
                     IntegerAttr stacked, bool transposed, DenseI64ArrayAttr rows);
  /// The int4 values of the linear `module` stored in 4 bits in `layout`,
  /// whose scales and zero points `linear` finds in `quantizedParts`; for
  /// an act-order checkpoint, its float weight, dequantized at load.
  Value quantizedWeight(const std::string &module, QuantizedCheckpoint layout,
                        ArrayRef<int64_t> shape, bool transposed,
                        DenseI64ArrayAttr rows);

  OpBuilder b;
  Location loc;
  const ModelShape &m;
  const ImportOptions &options;
  const llvm::StringSet<> &names;
  std::optional<StoredQuantization> quantized;
  /// The scales and zero points of each quantized linear's values.
  llvm::DenseMap<Value, std::pair<Value, Value>> quantizedParts;
  ValueRange args;
  std::vector<std::string> missing;
  /// Linears the checkpoint stores in a form llmserve cannot read.
  std::vector<std::string> unreadable;
};

} // namespace mlir::llmserve

#endif // LLMSERVE_IMPORT_GRAPHBUILDER_H
