//===- GpuKernelEmitter.cpp -----------------------------------------------===//

#include "compiler/Conversion/LlmserveToGpu/GpuKernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::llmserve;

GpuKernelEmitter::GpuKernelEmitter(gpu::GPUModuleOp module, StringRef symbol,
                                   Location loc,
                                   ArrayRef<RankedTensorType> types,
                                   int64_t blockSize)
    : KernelEmitter(loc, module.getContext(), types), threads(blockSize) {
  SmallVector<Type> params;
  for (RankedTensorType type : types)
    params.push_back(MemRefType::get({1}, storageType(type.getElementType())));
  params.append(numPushConstants(), b.getI64Type());
  b.setInsertionPointToEnd(module.getBody());
  func = gpu::GPUFuncOp::create(b, symbol, b.getFunctionType(params, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(blockSize), 1, 1}));
  b.setInsertionPointToStart(&func.getBody().front());
}

Value GpuKernelEmitter::threadId() {
  return gpu::ThreadIdOp::create(b, gpu::Dimension::x);
}

Value GpuKernelEmitter::laneId() {
  return a.remui(threadId(), index(kWarpSize));
}

Value GpuKernelEmitter::warpId() {
  return a.divui(threadId(), index(kWarpSize));
}

Value GpuKernelEmitter::blockId(int dim) {
  static constexpr gpu::Dimension dims[] = {
      gpu::Dimension::x, gpu::Dimension::y, gpu::Dimension::z};
  return gpu::BlockIdOp::create(b, dims[dim]);
}

Value GpuKernelEmitter::pushConstant(int k) {
  return a.toIndex(func.getArgument(numBindings() + k));
}

Value GpuKernelEmitter::binding(int i, ArrayRef<Value> shape) {
  // The parameter is a bare pointer typed memref<1xT>; reinterpret it with
  // the buffer's shape and row-major strides.
  SmallVector<OpFoldResult> sizes, strides(shape.size());
  for (Value size : shape)
    sizes.push_back(getAsOpFoldResult(size));
  OpFoldResult stride = b.getIndexAttr(1);
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    strides[d] = stride;
    if (d == 0)
      break;
    std::optional<int64_t> s = getConstantIntValue(stride),
                           n = getConstantIntValue(shape[d]);
    if (s && n)
      stride = b.getIndexAttr(*s * *n);
    else
      stride = a.muli(getValueOrCreateConstantIndexOp(b, b.getLoc(), stride),
                      shape[d]);
  }
  auto cast = memref::ReinterpretCastOp::create(
      b, func.getArgument(i), b.getIndexAttr(0), sizes, strides);
  return cast.getResult();
}

Value GpuKernelEmitter::sharedBuffer(ArrayRef<int64_t> shape,
                                     Type elementType) {
  auto space = gpu::AddressSpaceAttr::get(b.getContext(),
                                          gpu::AddressSpace::Workgroup);
  auto type = MemRefType::get(shape, elementType, MemRefLayoutAttrInterface(),
                              space);
  shared += type.getNumElements() * (type.getElementTypeBitWidth() / 8);
  BlockArgument buffer = func.addWorkgroupAttribution(type, b.getLoc());
  // 16 bytes, so that 128-bit shared loads and stores are aligned whatever
  // buffers come before this one.
  func.setWorkgroupAttributionAttr(
      func.getNumWorkgroupAttributions() - 1,
      LLVM::LLVMDialect::getAlignAttrName(), b.getI64IntegerAttr(16));
  return buffer;
}

Value GpuKernelEmitter::loadF32(Value memref, ValueRange indices) {
  Value v = memref::LoadOp::create(b, memref, indices);
  if (v.getType().isF32())
    return v;
  return arith::ExtFOp::create(b, b.getF32Type(), v);
}

void GpuKernelEmitter::storeF32(Value value, Value memref, ValueRange indices) {
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  if (element != value.getType())
    value = arith::TruncFOp::create(b, element, value);
  memref::StoreOp::create(b, value, memref, indices);
}

void GpuKernelEmitter::barrier() { gpu::BarrierOp::create(b); }

Value GpuKernelEmitter::warpReduce(
    Value value, const std::function<Value(Value, Value)> &combine) {
  return warpReduce(ValueRange{value},
                    [&](ValueRange x, ValueRange y) -> SmallVector<Value> {
                      return {combine(x[0], y[0])};
                    })[0];
}

Value GpuKernelEmitter::blockReduce(
    Value value, Value scratch,
    const std::function<Value(Value, Value)> &combine) {
  return blockReduce(ValueRange{value}, {scratch},
                     [&](ValueRange x, ValueRange y) -> SmallVector<Value> {
                       return {combine(x[0], y[0])};
                     })[0];
}

SmallVector<Value> GpuKernelEmitter::warpReduce(ValueRange values,
                                                const TupleCombine &combine) {
  SmallVector<Value> current(values);
  for (int32_t offset = kWarpSize / 2; offset > 0; offset /= 2) {
    SmallVector<Value> other;
    for (Value v : current)
      other.push_back(gpu::ShuffleOp::create(b, v, offset, kWarpSize,
                                             gpu::ShuffleMode::XOR)
                          .getShuffleResult());
    current = combine(current, other);
  }
  return current;
}

SmallVector<Value> GpuKernelEmitter::blockReduce(ValueRange values,
                                                 ArrayRef<Value> scratch,
                                                 const TupleCombine &combine) {
  SmallVector<Value> warp = warpReduce(values, combine);
  ifThen(a.cmpi(arith::CmpIPredicate::eq, laneId(), index(0)), [&] {
    for (auto [v, buffer] : llvm::zip(warp, scratch))
      memref::StoreOp::create(b, v, buffer, warpId());
  });
  barrier();
  auto read = [&](int64_t w) {
    SmallVector<Value> tuple;
    for (Value buffer : scratch)
      tuple.push_back(memref::LoadOp::create(b, buffer, index(w)));
    return tuple;
  };
  SmallVector<Value> result = read(0);
  for (int64_t w = 1; w < numWarps(); ++w)
    result = combine(result, read(w));
  // The scratch buffers may be written again only once every thread has read.
  barrier();
  return result;
}

void GpuKernelEmitter::threadLoop(Value end,
                                  const std::function<void(Value)> &body) {
  forLoop(threadId(), end, threads, body);
}

SmallVector<Value> GpuKernelEmitter::threadLoop(
    Value end, ValueRange init,
    const std::function<SmallVector<Value>(Value, ValueRange)> &body,
    int64_t unroll) {
  if (unroll == 1)
    return forLoop(threadId(), end, threads, init, body);
  Arith &a = arith();
  Value last = a.subi(end, index(1));
  auto unrolled = [&](Value first, ValueRange acc) -> SmallVector<Value> {
    SmallVector<Value> values(acc);
    for (int64_t j = 0; j < unroll; ++j) {
      Value i = j == 0 ? first : a.addi(first, index(j * threads));
      Value inside = a.cmpi(arith::CmpIPredicate::slt, i, end);
      SmallVector<Value> next = body(a.mini(i, last), values);
      for (auto [value, folded] : llvm::zip_equal(values, next))
        value = a.select(inside, folded, value);
    }
    return values;
  };
  return forLoop(threadId(), end, threads * unroll, init, unrolled);
}

void GpuKernelEmitter::waitForPrerequisites() {
  waited = true;
  NVVM::GriddepcontrolOp::create(b, NVVM::GridDepActionKind::wait);
  NVVM::GriddepcontrolOp::create(b, NVVM::GridDepActionKind::launch_dependents);
}

void GpuKernelEmitter::finish() {
  if (!waited) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&func.getBody().front());
    waitForPrerequisites();
  }
  gpu::ReturnOp::create(b);
}
