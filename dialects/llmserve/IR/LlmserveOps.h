//===- LlmserveOps.h - llmserve tensor-level ops ----------------*- C++ -*-===//

#ifndef LLMSERVE_IR_LLMSERVEOPS_H
#define LLMSERVE_IR_LLMSERVEOPS_H

#include "llmserve/IR/LlmserveDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "llmserve/IR/LlmserveOps.h.inc"

#endif // LLMSERVE_IR_LLMSERVEOPS_H
