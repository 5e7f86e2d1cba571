//===- KernelEmitter.h - What the CPU and GPU kernel emitters share -------===//
//
// A kernel of either target binds its dispatch's buffers in binding order
// and receives each dynamic size of them in a push constant, in the same
// order (docs/bundle.md). KernelEmitter knows that layout: a binding's sizes
// as values in the kernel body or as grid expressions (where push constant k
// is `$k`), and views of the bound buffers. Each target's emitter says how a
// buffer and a push constant reach its kernels.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_CONVERSION_COMMON_KERNELEMITTER_H
#define LLMSERVE_CONVERSION_COMMON_KERNELEMITTER_H

#include "compiler/Conversion/Common/KernelMath.h"
#include "compiler/Conversion/Common/LoopEmitter.h"

#include "mlir/IR/BuiltinTypes.h"

#include <string>

namespace mlir::llmserve {

class KernelEmitter : public LoopEmitter {
public:
  /// `bindingTypes` are the shapes of the bound buffers.
  KernelEmitter(Location loc, MLIRContext *ctx,
                ArrayRef<RankedTensorType> bindingTypes);
  virtual ~KernelEmitter() = default;

  Arith &arith() { return a; }

  int numBindings() const { return bindingTypes.size(); }
  RankedTensorType bindingType(int binding) const {
    return bindingTypes[binding];
  }
  Type elementType(int binding) const {
    return bindingTypes[binding].getElementType();
  }
  /// The element type a kernel's view of a buffer of `element`s has: the
  /// same, but i8 for an 8-bit float, whose codes kernels convert with
  /// encodeE4M3 and decodeE4M3, and for int4 values, stored two a byte.
  static Type storageType(Type element);
  /// The push constants: one per dynamic size of the bindings.
  int numPushConstants() const { return pushConstantCount; }

  /// Size `dim` of binding `binding`: a constant, or its push constant.
  Value dimSize(int binding, int dim);
  /// The same size as written in a grid expression: the integer, or `$k`.
  std::string dimExpr(int binding, int dim) const;
  /// The number of elements of binding `binding`, as a value and as a grid
  /// expression.
  Value numElements(int binding);
  std::string numElementsExpr(int binding) const;

  /// Binding `i` as a dense row-major memref of its own shape (int4: of
  /// half the last dimension, in bytes), or of `shape` (a reshape of the
  /// same bytes).
  Value binding(int i);
  virtual Value binding(int i, ArrayRef<Value> shape) = 0;
  /// Binding `i`, a KV cache [NB, BS, Hkv, D], as [NB * BS, Hkv * D] rows of
  /// slots.
  Value cacheSlots(int i);
  /// The sequence that token row `row` of a step belongs to: the last s
  /// below `numSeqs` with queryStart[s] <= row (0 when there is none).
  Value sequenceOf(Value queryStart, Value numSeqs, Value row);

protected:
  /// Push constant `k` as an index.
  virtual Value pushConstant(int k) = 0;

  Arith a;

private:
  SmallVector<RankedTensorType> bindingTypes;
  SmallVector<int> firstConstant; // per binding: its first push constant
  int pushConstantCount = 0;
};

} // namespace mlir::llmserve

#endif // LLMSERVE_CONVERSION_COMMON_KERNELEMITTER_H
