//===- CpuKernelEmitter.cpp - Builds CPU kernels in the bundle ABI --------===//

#include "compiler/Conversion/LlmserveToCpu/CpuKernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::llmserve;

CpuKernelEmitter::CpuKernelEmitter(ModuleOp kernels, StringRef symbol,
                                   Location loc,
                                   ArrayRef<RankedTensorType> types)
    : KernelEmitter(loc, kernels.getContext(), types) {
  MLIRContext *ctx = kernels.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = b.getI64Type();
  b.setInsertionPointToEnd(kernels.getBody());
  func = func::FuncOp::create(b, symbol,
                              b.getFunctionType({ptr, ptr, i64, i64, i64}, {}));
  b.setInsertionPointToStart(func.addEntryBlock());

  // Load every push constant once, at the top of the kernel.
  for (int i = 0, e = numPushConstants(); i < e; ++i) {
    Value addr = LLVM::GEPOp::create(b, ptr, i64, func.getArgument(1),
                                     ArrayRef<LLVM::GEPArg>{i});
    Value value = LLVM::LoadOp::create(b, i64, addr);
    pushConstants.push_back(
        arith::IndexCastOp::create(b, b.getIndexType(), value));
  }
}

Value CpuKernelEmitter::workgroupId(int dim) {
  return arith::IndexCastOp::create(b, b.getIndexType(),
                                    func.getArgument(2 + dim));
}

Value CpuKernelEmitter::binding(int i, ArrayRef<Value> shape) {
  return binding(i, shape, storageType(elementType(i)));
}

Value CpuKernelEmitter::binding(int i, ArrayRef<Value> shape, Type element) {
  MLIRContext *ctx = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = b.getI64Type();
  int64_t rank = shape.size();

  // The memref type keeps every size that is a constant static.
  SmallVector<int64_t> staticShape;
  for (Value size : shape) {
    std::optional<int64_t> c = getConstantIntValue(size);
    staticShape.push_back(c ? *c : ShapedType::kDynamic);
  }
  auto memrefType = MemRefType::get(staticShape, element);

  // Assemble the memref descriptor {allocated, aligned, offset, sizes,
  // strides} from the bound base pointer; the cast to the memref type folds
  // away against the descriptor type once memrefs are lowered to LLVM.
  Value slot = LLVM::GEPOp::create(b, ptr, ptr, func.getArgument(0),
                                   ArrayRef<LLVM::GEPArg>{i});
  Value base = LLVM::LoadOp::create(b, ptr, slot);
  auto arrayType = LLVM::LLVMArrayType::get(i64, rank);
  auto descType = LLVM::LLVMStructType::getLiteral(
      ctx, {ptr, ptr, i64, arrayType, arrayType});
  Value desc = LLVM::PoisonOp::create(b, descType);
  auto insert = [&](Value v, ArrayRef<int64_t> pos) {
    desc = LLVM::InsertValueOp::create(b, desc, v, b.getDenseI64ArrayAttr(pos));
  };
  insert(base, {0});
  insert(base, {1});
  insert(LLVM::ConstantOp::create(b, i64, b.getI64IntegerAttr(0)), {2});
  Value stride = index(1);
  for (int64_t d = rank - 1; d >= 0; --d) {
    insert(arith::IndexCastOp::create(b, i64, shape[d]), {3, d});
    insert(arith::IndexCastOp::create(b, i64, stride), {4, d});
    stride = arith::MulIOp::create(b, stride, shape[d]);
  }
  return UnrealizedConversionCastOp::create(b, TypeRange{memrefType},
                                            ValueRange{desc})
      .getResult(0);
}

std::pair<Value, Value> CpuKernelEmitter::rowRange(Value rows,
                                                   int64_t rowsPerGroup) {
  Value begin = arith::MulIOp::create(b, workgroupId(0), index(rowsPerGroup));
  Value end = arith::MinSIOp::create(
      b, arith::AddIOp::create(b, begin, index(rowsPerGroup)), rows);
  return {begin, end};
}

Grid CpuKernelEmitter::rowGrid(int binding, int64_t rowsPerGroup) const {
  return {ceilDivExpr(dimExpr(binding, 0), rowsPerGroup), "1", "1"};
}

Value CpuKernelEmitter::subview(Value memref, ArrayRef<OpFoldResult> offsets,
                                ArrayRef<OpFoldResult> sizes) {
  return memref::SubViewOp::create(
      b, memref, offsets, sizes,
      SmallVector<OpFoldResult>(offsets.size(), b.getIndexAttr(1)));
}

Value CpuKernelEmitter::tensorOf(Value slice, bool writable) {
  auto type = cast<MemRefType>(slice.getType());
  return bufferization::ToTensorOp::create(
      b, RankedTensorType::get(type.getShape(), type.getElementType()), slice,
      /*restrict=*/true, writable);
}

void CpuKernelEmitter::storeInto(Value result, Value slice) {
  auto store =
      bufferization::MaterializeInDestinationOp::create(b, result, slice);
  store.setRestrict(true);
  store.setWritable(true);
}

void CpuKernelEmitter::finish() { func::ReturnOp::create(b); }
