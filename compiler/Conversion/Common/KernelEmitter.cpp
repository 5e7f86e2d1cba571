//===- KernelEmitter.cpp - What the CPU and GPU kernel emitters share -----===//

#include "compiler/Conversion/Common/KernelEmitter.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::llmserve;

KernelEmitter::KernelEmitter(Location loc, MLIRContext *ctx,
                             ArrayRef<RankedTensorType> types)
    : LoopEmitter(loc, ctx), a(b), bindingTypes(types) {
  for (RankedTensorType type : bindingTypes) {
    firstConstant.push_back(pushConstantCount);
    pushConstantCount += type.getNumDynamicDims();
  }
}

Type KernelEmitter::storageType(Type element) {
  if ((isa<FloatType>(element) && element.getIntOrFloatBitWidth() == 8) ||
      element.isInteger(4))
    return IntegerType::get(element.getContext(), 8);
  return element;
}

Value KernelEmitter::dimSize(int binding, int dim) {
  RankedTensorType type = bindingTypes[binding];
  if (!type.isDynamicDim(dim))
    return index(type.getDimSize(dim));
  return pushConstant(firstConstant[binding] + type.getDynamicDimIndex(dim));
}

std::string KernelEmitter::dimExpr(int binding, int dim) const {
  RankedTensorType type = bindingTypes[binding];
  if (!type.isDynamicDim(dim))
    return std::to_string(type.getDimSize(dim));
  return "$" +
         std::to_string(firstConstant[binding] + type.getDynamicDimIndex(dim));
}

Value KernelEmitter::numElements(int binding) {
  Value n = index(1);
  for (int d = 0, e = bindingTypes[binding].getRank(); d < e; ++d)
    n = a.muli(n, dimSize(binding, d));
  return n;
}

std::string KernelEmitter::numElementsExpr(int binding) const {
  SmallVector<std::string> dims;
  for (int d = 0, e = bindingTypes[binding].getRank(); d < e; ++d)
    dims.push_back(dimExpr(binding, d));
  return llvm::join(dims, "*");
}

Value KernelEmitter::binding(int i) {
  SmallVector<Value> shape;
  for (int d = 0, e = bindingTypes[i].getRank(); d < e; ++d)
    shape.push_back(dimSize(i, d));
  // int4 values are stored two a byte along their last dimension.
  RankedTensorType type = bindingTypes[i];
  if (int64_t last = type.getRank() - 1; type.getElementType().isInteger(4))
    shape.back() = type.isDynamicDim(last) ? a.divui(shape.back(), index(2))
                                           : index(type.getDimSize(last) / 2);
  return binding(i, shape);
}

Value KernelEmitter::cacheSlots(int i) {
  Value slots = a.muli(dimSize(i, 0), dimSize(i, 1));
  Value width = a.muli(dimSize(i, 2), dimSize(i, 3));
  return binding(i, {slots, width});
}

Value KernelEmitter::sequenceOf(Value queryStart, Value numSeqs, Value row) {
  Value zero = index(0);
  return forLoop(zero, numSeqs, 1, {zero},
                 [&](Value s, ValueRange found) -> SmallVector<Value> {
                   Value start = a.toIndex(a.load(queryStart, s));
                   return {
                       a.select(a.cmpi(arith::CmpIPredicate::ule, start, row),
                                s, found[0])};
                 })[0];
}
