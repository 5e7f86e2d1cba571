//===- NvptxTarget.cpp ----------------------------------------------------===//

#include "compiler/Target/Nvptx/NvptxTarget.h"

#include "compiler/Conversion/Common/KernelModule.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"

using namespace mlir;

void mlir::llmserve::registerNvptxTarget(DialectRegistry &registry) {
  // convert-gpu-to-nvvm lowers every dialect through its ConvertToLLVM
  // interface, which the extensions register.
  registerAllExtensions(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerAllToLLVMIRTranslations(registry);
}

FailureOr<std::string> mlir::llmserve::emitPtx(ModuleOp module) {
  PassManager pm(module.getContext());
  GpuModuleToBinaryPassOptions options;
  options.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(options));
  if (failed(pm.run(module)))
    return failure();
  if (auto binary = lookupKernelModule<gpu::BinaryOp>(module))
    return cast<gpu::ObjectAttr>(binary.getObjects()[0]).getObject().str();
  return emitError(module.getLoc(), "the module has no gpu.module @")
             << kKernelModuleName,
         failure();
}

std::optional<std::string> mlir::llmserve::findPtxas() {
  if (llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName("ptxas"))
    return *path;
  if (llvm::ErrorOr<std::string> path =
          llvm::sys::findProgramByName("ptxas", {"/usr/local/cuda/bin"}))
    return *path;
  return std::nullopt;
}

LogicalResult mlir::llmserve::assembleCubin(MLIRContext *context,
                                            StringRef ptxas, StringRef ptxPath,
                                            StringRef cubinPath) {
  Location loc = UnknownLoc::get(context);
  llvm::SmallString<128> log;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("ptxas", "log", fd, log))
    return emitError(loc, "cannot create a temporary file for ptxas");
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string error;
  int status = llvm::sys::ExecuteAndWait(
      ptxas, {ptxas, "-arch=sm_90a", "-o", cubinPath, ptxPath},
      /*Env=*/std::nullopt, redirects, /*SecondsToWait=*/0,
      /*MemoryLimit=*/0, &error);
  std::string output;
  if (auto buffer = llvm::MemoryBuffer::getFile(log))
    output = (*buffer)->getBuffer().trim().str();
  llvm::sys::fs::remove(log);
  if (status == 0)
    return success();
  InFlightDiagnostic diag = emitError(loc) << ptxas << " failed";
  if (status < 0)
    diag << " to run: " << error;
  else
    diag << " (exit status " << status << ")";
  if (!output.empty())
    diag << ":\n" << output;
  return diag;
}
