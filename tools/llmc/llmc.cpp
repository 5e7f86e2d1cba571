//===- llmc.cpp - The llmserve compiler driver ----------------------------===//
//
//   llmc import <hf-checkpoint-dir> -o model.mlir
//   llmc compile model.mlir -o model.llmb [--target cpu|sm_90]
//   [--embed-weights]
//                [--dtype bf16|f16|f32] [--quantize int8|int4]
//                [--kv-cache-dtype auto|fp8|fp8_e4m3] [--fp8-activations]
//                [--ptxas <path>]
//
// Option parsing around the importer (compiler/Import/HfImporter.h) and the
// pipelines (compiler/Pipeline/CompileBundle.h). Exit status: 0 on success,
// 1 on any error (reported with its location).
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/HfImporter.h"
#include "compiler/Pipeline/CompileBundle.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

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
    cl::desc("sm_90: storage type of weights, KV cache and activations "
             "(default bf16); cpu: of the linears' float weights, computed in "
             "f32 (default f32): bf16, f16 or f32 (f32 keeps the types as "
             "written)"),
    cl::sub(compileCommand));
static cl::opt<std::string> compilePtxas(
    "ptxas",
    cl::desc("sm_90: the ptxas that assembles the cubin (default: ptxas on "
             "PATH, else /usr/local/cuda/bin/ptxas; without one the bundle "
             "has PTX only)"),
    cl::sub(compileCommand));
static cl::list<std::string> compileCpus(
    "cpu", cl::CommaSeparated,
    cl::desc("cpu: the LLVM CPUs to compile kernels for (native = this "
             "machine's, the default), a set each; the runtime loads the "
             "first set the CPU it runs on can run, e.g. native,x86-64-v3"),
    cl::sub(compileCommand));
static cl::opt<std::string> compileQuantize(
    "quantize",
    cl::desc("int8 stores the weights of linears as int8 with one f32 scale "
             "per output channel, int4 as int4 with one per output channel "
             "and group of 128 inputs (a mixture's experts as int8 either way "
             "on cpu, unquantized on sm_90); both quantized when the bundle "
             "loads"),
    cl::sub(compileCommand));
static cl::opt<std::string> compileKvCacheDtype(
    "kv-cache-dtype", cl::init("auto"),
    cl::desc("Storage type of the KV cache: auto (the activations' type: f32 "
             "on cpu, --dtype on sm_90) or fp8 (= fp8_e4m3: OCP FP8 e4m3 with "
             "a scale of 1 per cache tensor)"),
    cl::sub(compileCommand));
static cl::opt<bool> compileFp8Activations(
    "fp8-activations",
    cl::desc("sm_90: the linears of an FP8 checkpoint quantize their inputs "
             "to FP8 e4m3, a scale per token and group of 128, and multiply "
             "on the FP8 tensor cores (W8A8; default: the weights become "
             "the activations' type as they are read, W8A16)"),
    cl::sub(compileCommand));
static cl::opt<bool> embedWeights(
    "embed-weights",
    cl::desc("Copy the checkpoint's model.safetensors into the bundle"),
    cl::sub(compileCommand));

namespace {

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
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file =
      openOutputFile(importOutput, &error);
  if (!file) {
    llvm::errs() << "llmc: error: " << error << "\n";
    return failure();
  }
  (*module)->print(file->os());
  file->keep();
  return success();
}

/// Prints an unlocated error, which no place in the IR is to blame for
/// (options, files, ptxas), as llmc's own.
LogicalResult printAsLlmcError(Diagnostic &diag) {
  if (!isa<UnknownLoc>(diag.getLocation()) ||
      diag.getSeverity() != DiagnosticSeverity::Error)
    return failure();
  llvm::errs() << "llmc: error: " << diag << "\n";
  return success();
}

LogicalResult compile(MLIRContext &context) {
  mlir::llmserve::CompileOptions options;
  options.target = compileTarget;
  if (compileDtype.getNumOccurrences())
    options.dtype = compileDtype;
  if (!compileCpus.empty())
    options.cpus.assign(compileCpus.begin(), compileCpus.end());
  options.ptxas = compilePtxas;
  options.embedWeights = embedWeights;
  if (compileQuantize.getNumOccurrences())
    options.quantize = compileQuantize;
  options.kvCacheDtype = compileKvCacheDtype;
  options.fp8Activations = compileFp8Activations;
  {
    ScopedDiagnosticHandler llmcErrors(&context, printAsLlmcError);
    if (failed(mlir::llmserve::verifyCompileOptions(&context, options)))
      return failure();
  }
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(compileInput, sourceMgr, &context);
  if (!module)
    return failure();
  ScopedDiagnosticHandler llmcErrors(&context, printAsLlmcError);
  return mlir::llmserve::compileBundle(*module, compileOutput, options);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "llmserve compiler\n");

  DialectRegistry registry;
  mlir::llmserve::registerCompilerDialects(registry);
  MLIRContext context(registry);

  if (importCommand)
    return failed(import(context)) ? 1 : 0;
  if (compileCommand)
    return failed(compile(context)) ? 1 : 0;
  cl::PrintHelpMessage();
  return 1;
}
