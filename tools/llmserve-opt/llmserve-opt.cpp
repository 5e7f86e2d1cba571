// llmserve-opt: parses, verifies, transforms and prints llmserve IR; the
// driver of the compiler's lit tests.

#include "compiler/Conversion/Passes.h"
#include "compiler/Pipeline/CompileBundle.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::llmserve::registerLlmservePasses();

  mlir::DialectRegistry registry;
  mlir::llmserve::registerCompilerDialects(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "llmserve optimizer driver\n", registry));
}
