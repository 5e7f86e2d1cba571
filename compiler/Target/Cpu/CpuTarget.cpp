//===- CpuTarget.cpp ------------------------------------------------------===//

#include "compiler/Target/Cpu/CpuTarget.h"
#include "llmserve/abi.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

static void optimize(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder pb(&machine, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3)
      .run(module, mam);
}

/// The target machine of the host's triple for `options.cpu`.
static FailureOr<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(Location loc, const mlir::llmserve::CpuTargetOptions &options) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return emitError(loc, "no LLVM target for ")
           << triple.str() << ": " << error;
  std::string cpu = options.cpu;
  std::string features;
  if (cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features += (feature.second ? "+" : "-") + feature.first().str() + ",";
  }
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features, targetOptions, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return emitError(loc, "cannot create a target machine for ") << cpu;
  return machine;
}

std::string mlir::llmserve::cpuName(const CpuTargetOptions &options) {
  return options.cpu == "native" ? llvm::sys::getHostCPUName().str() : options.cpu;
}

FailureOr<SmallVector<std::string>>
mlir::llmserve::cpuFeatureNames(Location loc, const CpuTargetOptions &options) {
  FailureOr<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(loc, options);
  if (failed(machine))
    return failure();
  SmallVector<std::string> names;
  for (const char *feature : ::llmserve::abi::kCpuFeatures)
    if ((*machine)->getMCSubtargetInfo()->checkFeatures(
            (llvm::Twine("+") + feature).str()))
      names.push_back(feature);
  return names;
}

LogicalResult
mlir::llmserve::emitCpuSharedObject(ModuleOp kernels, StringRef path,
                                    const CpuTargetOptions &options) {
  Location loc = kernels.getLoc();
  registerBuiltinDialectTranslation(*kernels.getContext());
  registerLLVMDialectTranslation(*kernels.getContext());
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> module =
      translateModuleToLLVMIR(kernels, llvmContext, "llmserve_kernels");
  if (!module)
    return emitError(loc, "failed to translate the kernels to LLVM IR");

  FailureOr<std::unique_ptr<llvm::TargetMachine>> target =
      createTargetMachine(loc, options);
  if (failed(target))
    return failure();
  llvm::TargetMachine *machine = target->get();
  module->setDataLayout(machine->createDataLayout());
  module->setTargetTriple(machine->getTargetTriple());
  optimize(*module, *machine);

  // Object file next to the output, then `ld.lld -shared`.
  llvm::SmallString<128> objectPath(path);
  objectPath += ".o";
  {
    std::error_code ec;
    llvm::ToolOutputFile object(objectPath, ec, llvm::sys::fs::OF_None);
    if (ec)
      return emitError(loc, "cannot write ") << objectPath << ": "
                                              << ec.message();
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, object.os(), nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return emitError(loc, "the target cannot emit object files");
    codegen.run(*module);
    object.keep();
  }
  llvm::StringRef args[] = {options.linker, "-shared", "--no-undefined-version",
                            "-o", path, objectPath};
  std::string linkError;
  int rc = llvm::sys::ExecuteAndWait(options.linker, args, std::nullopt, {}, 0,
                                     0, &linkError);
  llvm::sys::fs::remove(objectPath);
  if (rc != 0)
    return emitError(loc, "linking ")
           << path << " with " << options.linker << " failed"
           << (linkError.empty() ? "" : ": ") << linkError;
  return success();
}
