//===- llmc.cpp - The llmserve compiler driver ----------------------------===//
//
//   llmc import <hf-checkpoint-dir> -o model.mlir
//   llmc compile model.mlir -o model.llmb [--target cpu|sm_90] [--embed-weights]
//                [--dtype bf16|f16|f32] [--ptxas <path>]
//
// Exit status: 0 on success, 1 on any error (reported with its location).
//
//===----------------------------------------------------------------------===//

#include "compiler/Bundle/BundleWriter.h"
#include "compiler/Conversion/Common/KernelModule.h"
#include "compiler/Conversion/Passes.h"
#include "compiler/Import/HfImporter.h"
#include "compiler/Target/Cpu/CpuTarget.h"
#include "compiler/Target/Nvptx/NvptxTarget.h"
#include "compiler/Transforms/Passes.h"
#include "llmserve/IR/LlmserveDialect.h"
#include "llmserve/abi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;
namespace abi = ::llmserve::abi;

static cl::SubCommand importCommand(
    "import", "Import a Hugging Face checkpoint directory as llmserve IR");
static cl::opt<std::string> importInput(cl::Positional, cl::Required,
                                        cl::desc("<hf-checkpoint-dir>"),
                                        cl::sub(importCommand));
static cl::opt<std::string> importOutput("o", cl::Required,
                                         cl::desc("Output .mlir file"),
                                         cl::value_desc("model.mlir"),
                                         cl::sub(importCommand));
static cl::opt<int64_t> importBlockSize("block-size", cl::init(16),
                                        cl::desc("Tokens per KV-cache block"),
                                        cl::sub(importCommand));

static cl::opt<bool> importLogitsEntry(
    "logits-entry",
    cl::desc("Also emit the entry point `logits`, which returns the logits "
             "instead of sampling"),
    cl::sub(importCommand));

static cl::SubCommand compileCommand("compile",
                                     "Compile a model.mlir into a kernel bundle");
static cl::opt<std::string> compileInput(cl::Positional, cl::Required,
                                         cl::desc("<model.mlir>"),
                                         cl::sub(compileCommand));
static cl::opt<std::string> compileOutput("o", cl::Required,
                                          cl::desc("Output bundle directory"),
                                          cl::value_desc("model.llmb"),
                                          cl::sub(compileCommand));
static cl::opt<std::string> compileTarget("target", cl::init("cpu"),
                                          cl::desc("Target: cpu or sm_90"),
                                          cl::sub(compileCommand));
static cl::opt<std::string> compileDtype(
    "dtype", cl::init("bf16"),
    cl::desc("sm_90: storage type of weights, KV cache and activations: "
             "bf16, f16 or f32 (f32 keeps the types as written)"),
    cl::sub(compileCommand));
static cl::opt<std::string> compilePtxas(
    "ptxas",
    cl::desc("sm_90: the ptxas that assembles the cubin (default: ptxas on "
             "PATH, else /usr/local/cuda/bin/ptxas; without one the bundle "
             "has PTX only)"),
    cl::sub(compileCommand));
static cl::opt<std::string>
    compileCpu("cpu", cl::init("native"),
               cl::desc("LLVM CPU name for the CPU kernels (native = host)"),
               cl::sub(compileCommand));
static cl::opt<bool> embedWeights(
    "embed-weights",
    cl::desc("Copy the checkpoint's model.safetensors into the bundle"),
    cl::sub(compileCommand));

namespace {

LogicalResult writeFile(StringRef path, StringRef contents) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file) {
    llvm::errs() << "llmc: error: " << error << "\n";
    return failure();
  }
  file->os() << contents;
  file->keep();
  return success();
}

LogicalResult copyFile(StringRef from, StringRef to) {
  if (std::error_code ec = llvm::sys::fs::copy_file(from, to)) {
    llvm::errs() << "llmc: error: cannot copy " << from << " to " << to << ": "
                 << ec.message() << "\n";
    return failure();
  }
  return success();
}

/// Tokenizer files and, when asked, the weights, from the checkpoint the
/// module was imported from.
LogicalResult copyCheckpointFiles(ModuleOp module, StringRef bundle) {
  auto checkpoint = module->getAttrOfType<StringAttr>(
      mlir::llmserve::LlmserveDialect::kCheckpointAttrName);
  if (!checkpoint) {
    if (embedWeights) {
      llvm::errs() << "llmc: error: --embed-weights needs a module imported "
                      "from a checkpoint (no llmserve.checkpoint attribute)\n";
      return failure();
    }
    return success();
  }
  for (StringRef name : {"tokenizer.json", "tokenizer_config.json"}) {
    llvm::SmallString<256> from(checkpoint.getValue()), to(bundle);
    llvm::sys::path::append(from, name);
    llvm::sys::path::append(to, name);
    if (llvm::sys::fs::exists(from) && failed(copyFile(from, to)))
      return failure();
  }
  if (!embedWeights)
    return success();
  llvm::SmallString<256> from(checkpoint.getValue()), to(bundle);
  llvm::sys::path::append(from, "model.safetensors");
  llvm::sys::path::append(to, abi::kEmbeddedWeightsFile);
  if (!llvm::sys::fs::exists(from)) {
    llvm::errs() << "llmc: error: --embed-weights needs a single-file "
                 << "checkpoint, and " << from << " does not exist\n";
    return failure();
  }
  return copyFile(from, to);
}

LogicalResult createOutputDirectory() {
  if (std::error_code ec = llvm::sys::fs::create_directories(compileOutput)) {
    llvm::errs() << "llmc: error: cannot create " << compileOutput << ": "
                 << ec.message() << "\n";
    return failure();
  }
  return success();
}

LogicalResult import(MLIRContext &context) {
  if (importBlockSize <= 0) {
    llvm::errs() << "llmc: error: --block-size must be positive\n";
    return failure();
  }
  mlir::llmserve::ImportOptions options;
  options.blockSize = importBlockSize;
  options.logitsEntry = importLogitsEntry;
  auto module = mlir::llmserve::importHuggingFace(&context, importInput, options);
  if (!module) {
    llvm::errs() << "llmc import: error: " << llvm::toString(module.takeError())
                 << "\n";
    return failure();
  }
  if (failed(verify(**module)))
    return failure();
  std::string text;
  llvm::raw_string_ostream os(text);
  (*module)->print(os);
  return writeFile(importOutput, text);
}

/// The CPU bundle: kernels.cpu.so.
LogicalResult compileForCpu(ModuleOp module, MLIRContext &context,
                         std::string &manifest) {
  PassManager outline(&context);
  outline.addPass(mlir::llmserve::createLlmserveToLinalg());
  outline.addPass(mlir::llmserve::createFormDispatchRegions());
  outline.addPass(mlir::llmserve::createLlmserveToCpuKernels());
  if (failed(outline.run(module)))
    return failure();
  FailureOr<std::string> written =
      mlir::llmserve::writeManifest(module, "cpu");
  if (failed(written))
    return failure();
  manifest = std::move(*written);

  auto kernels = mlir::llmserve::lookupKernelModule<ModuleOp>(module);
  PassManager lower(&context);
  mlir::llmserve::buildCpuKernelsToLLVMPipeline(lower);
  if (failed(lower.run(kernels)) || failed(createOutputDirectory()))
    return failure();
  llvm::SmallString<256> kernelsPath(compileOutput);
  llvm::sys::path::append(kernelsPath, abi::kCpuKernelsFile);
  mlir::llmserve::CpuTargetOptions options;
  options.cpu = compileCpu;
  return mlir::llmserve::emitCpuSharedObject(kernels, kernelsPath, options);
}

/// The NVIDIA bundle: kernels.ptx, and kernels.sm_90a.cubin when there is
/// a ptxas.
LogicalResult compileForNvptx(ModuleOp module, MLIRContext &context,
                           std::string &manifest) {
  PassManager outline(&context);
  if (compileDtype != "f32") {
    mlir::llmserve::NarrowStorageOptions narrow;
    narrow.dtype = compileDtype;
    outline.addPass(mlir::llmserve::createNarrowStorage(narrow));
  }
  outline.addPass(mlir::llmserve::createLlmserveToGpuKernels());
  if (failed(outline.run(module)))
    return failure();
  FailureOr<std::string> written =
      mlir::llmserve::writeManifest(module, abi::kCudaTarget);
  if (failed(written))
    return failure();
  manifest = std::move(*written);

  PassManager lower(&context);
  mlir::llmserve::buildGpuKernelsToNvvmPipeline(lower);
  if (failed(lower.run(module)))
    return failure();
  FailureOr<std::string> ptx = mlir::llmserve::emitPtx(module);
  if (failed(ptx) || failed(createOutputDirectory()))
    return failure();
  llvm::SmallString<256> ptxPath(compileOutput), cubinPath(compileOutput);
  llvm::sys::path::append(ptxPath, abi::kCudaPtxFile);
  llvm::sys::path::append(cubinPath, abi::kCudaCubinFile);
  if (failed(writeFile(ptxPath, *ptx)))
    return failure();
  std::optional<std::string> ptxas =
      compilePtxas.empty() ? mlir::llmserve::findPtxas()
                           : std::optional<std::string>(compilePtxas);
  if (!ptxas)
    return success();
  return mlir::llmserve::assembleCubin(*ptxas, ptxPath, cubinPath);
}

LogicalResult compile(MLIRContext &context) {
  bool cpu = compileTarget == "cpu", nvptx = compileTarget == abi::kCudaTarget;
  if (!cpu && !nvptx) {
    llvm::errs() << "llmc: error: unknown target '" << compileTarget
                 << "' (supported: cpu, " << abi::kCudaTarget << ")\n";
    return failure();
  }
  if (nvptx && !llvm::is_contained({"bf16", "f16", "f32"}, compileDtype)) {
    llvm::errs() << "llmc: error: unknown --dtype '" << compileDtype
                 << "' (supported: bf16, f16, f32)\n";
    return failure();
  }
  if (cpu && compileDtype.getNumOccurrences()) {
    llvm::errs() << "llmc: error: --dtype applies to target "
                 << abi::kCudaTarget << " (CPU kernels compute in f32)\n";
    return failure();
  }
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(compileInput, sourceMgr, &context);
  if (!module)
    return failure();

  std::string manifest;
  if (failed(cpu ? compileForCpu(*module, context, manifest)
                 : compileForNvptx(*module, context, manifest)) ||
      failed(copyCheckpointFiles(*module, compileOutput)))
    return failure();
  // The manifest goes last: a bundle with a manifest is complete.
  llvm::SmallString<256> manifestPath(compileOutput);
  llvm::sys::path::append(manifestPath, abi::kManifestFile);
  return writeFile(manifestPath, manifest);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "llmserve compiler\n");

  DialectRegistry registry;
  registry.insert<mlir::llmserve::LlmserveDialect, arith::ArithDialect,
                  func::FuncDialect>();
  // The bufferization and tiling models (registered with their dialects) and
  // the transform-dialect extensions the CPU pipeline's schedules use.
  registerAllDialects(registry);
  registerAllExtensions(registry);
  mlir::llmserve::registerNvptxTarget(registry);
  MLIRContext context(registry);

  if (importCommand)
    return failed(import(context)) ? 1 : 0;
  if (compileCommand)
    return failed(compile(context)) ? 1 : 0;
  cl::PrintHelpMessage();
  return 1;
}
