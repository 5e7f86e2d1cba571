//===- LlmserveDialect.cpp - llmserve dialect registration ----------------===//

#include "llmserve/IR/LlmserveDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::llmserve;

#include "llmserve/IR/LlmserveDialect.cpp.inc"
#include "llmserve/IR/LlmserveEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "llmserve/IR/LlmserveAttrs.cpp.inc"

void LlmserveDialect::initialize() {
  registerAttributes();
  registerOps(); // LlmserveOps.td
}

void LlmserveDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "llmserve/IR/LlmserveAttrs.cpp.inc"
      >();
}
