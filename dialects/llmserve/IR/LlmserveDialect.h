//===- LlmserveDialect.h - llmserve dialect and attributes ------*- C++ -*-===//

#ifndef LLMSERVE_IR_LLMSERVEDIALECT_H
#define LLMSERVE_IR_LLMSERVEDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Dialect.h"

#include "llmserve/IR/LlmserveDialect.h.inc"
#include "llmserve/IR/LlmserveEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "llmserve/IR/LlmserveAttrs.h.inc"

#endif // LLMSERVE_IR_LLMSERVEDIALECT_H
