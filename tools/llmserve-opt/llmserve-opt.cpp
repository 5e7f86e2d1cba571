// llmserve-opt: parses, verifies, transforms and prints llmserve IR; the
// driver of the compiler's lit tests.

#include "compiler/Conversion/Passes.h"
#include "compiler/Target/Nvptx/NvptxTarget.h"
#include "llmserve/IR/LlmserveDialect.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::llmserve::registerLlmservePasses();

  mlir::DialectRegistry registry;
  registry.insert<mlir::llmserve::LlmserveDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::llmserve::registerNvptxTarget(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "llmserve optimizer driver\n", registry));
}
