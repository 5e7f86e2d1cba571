//===- CompileBundle.cpp - llmserve IR to a kernel bundle -----------------===//

#include "compiler/Pipeline/CompileBundle.h"

#include "compiler/Bundle/BundleWriter.h"
#include "compiler/Conversion/Common/KernelModule.h"
#include "compiler/Conversion/Passes.h"
#include "compiler/Target/Cpu/CpuTarget.h"
#include "compiler/Target/Nvptx/NvptxTarget.h"
#include "compiler/Transforms/Passes.h"
#include "llmserve/IR/LlmserveDialect.h"
#include "llmserve/abi.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::llmserve;
namespace abi = ::llmserve::abi;

namespace {

/// An error that no place in the IR is to blame for.
InFlightDiagnostic emitUnlocatedError(MLIRContext *context) {
  return emitError(UnknownLoc::get(context));
}

std::string pathIn(StringRef dir, StringRef name) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  return path.str().str();
}

LogicalResult writeFile(MLIRContext *context, StringRef path,
                        StringRef contents) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    return emitUnlocatedError(context) << error;
  file->os() << contents;
  file->keep();
  return success();
}

LogicalResult copyFile(MLIRContext *context, StringRef from, StringRef to) {
  if (std::error_code ec = llvm::sys::fs::copy_file(from, to))
    return emitUnlocatedError(context)
           << "cannot copy " << from << " to " << to << ": " << ec.message();
  return success();
}

LogicalResult createBundleDirectory(MLIRContext *context, StringRef dir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return emitUnlocatedError(context)
           << "cannot create " << dir << ": " << ec.message();
  return success();
}

/// Tokenizer files and, when asked, the weights, from the checkpoint the
/// module was imported from.
LogicalResult copyCheckpointFiles(ModuleOp module, StringRef bundleDir,
                                  bool embedWeights) {
  MLIRContext *context = module.getContext();
  auto checkpoint =
      module->getAttrOfType<StringAttr>(LlmserveDialect::kCheckpointAttrName);
  if (!checkpoint) {
    if (embedWeights)
      return emitUnlocatedError(context)
             << "--embed-weights needs a module imported from a checkpoint "
                "(no llmserve.checkpoint attribute)";
    return success();
  }
  for (StringRef name : {"tokenizer.json", "tokenizer_config.json"}) {
    std::string from = pathIn(checkpoint.getValue(), name);
    if (llvm::sys::fs::exists(from) &&
        failed(copyFile(context, from, pathIn(bundleDir, name))))
      return failure();
  }
  if (!embedWeights)
    return success();
  std::string from = pathIn(checkpoint.getValue(), "model.safetensors");
  if (!llvm::sys::fs::exists(from))
    return emitUnlocatedError(context)
           << "--embed-weights needs a single-file checkpoint, and " << from
           << " does not exist";
  return copyFile(context, from, pathIn(bundleDir, abi::kEmbeddedWeightsFile));
}

/// The quantize-weights pass for `llmc compile --quantize`.
QuantizeWeightsOptions quantizeOptions(const CompileOptions &options, bool experts) {
  QuantizeWeightsOptions quantize;
  quantize.scheme = *options.quantize == "int4" ? "int4_group128" : "int8_channel";
  quantize.experts = experts;
  return quantize;
}

/// Outlines `module`'s ops into kernels for the CPU of `set`, choosing their
/// instructions by its features.
LogicalResult outlineCpuKernels(ModuleOp module, const CompileOptions &options,
                                const CpuKernelSet &set) {
  MLIRContext *context = module.getContext();
  auto has = [&](StringRef feature) {
    return llvm::is_contained(set.features, feature);
  };
  PassManager outline(context);
  if (options.quantize)
    outline.addPass(createQuantizeWeights(quantizeOptions(options, /*experts=*/true)));
  // The linears' float weights narrow: bf16 ones multiplied by vdpbf16ps
  // where the CPU has it, others widened to f32 as they are read.
  if (options.dtype && *options.dtype != "f32") {
    NarrowLinearWeightsOptions narrow;
    narrow.dtype = *options.dtype;
    outline.addPass(createNarrowLinearWeights(narrow));
  }
  if (options.kvCacheDtype != "auto")
    outline.addPass(createQuantizeKvCache());
  outline.addPass(createLlmserveToLinalg());
  outline.addPass(createFormDispatchRegions());
  LlmserveToCpuKernelsOptions kernelOptions;
  kernelOptions.avx512 = has("avx512f");
  kernelOptions.vnni = has("avx512vnni") && has("avx512bw");
  kernelOptions.bf16 = has("avx512bf16");
  outline.addPass(createLlmserveToCpuKernels(kernelOptions));
  return outline.run(module);
}

/// The CPU bundle's kernel sets: kernels.cpu.so for the first of the
/// --cpu CPUs, kernels.<cpu>.so for each other, each compiled from a copy
/// of `module` as it is now; returns the manifest. The kernels choose their
/// instructions by CPU but not the weights' layouts, grids or program, so
/// that one manifest serves every set.
FailureOr<std::string> compileForCpu(ModuleOp module, StringRef bundleDir,
                                     const CompileOptions &options) {
  MLIRContext *context = module.getContext();
  SmallVector<CpuTargetOptions> targets;
  SmallVector<CpuKernelSet> sets;
  for (const std::string &cpu : options.cpus) {
    CpuTargetOptions target;
    target.cpu = cpu;
    FailureOr<SmallVector<std::string>> features =
        cpuFeatureNames(module.getLoc(), target);
    if (failed(features))
      return failure();
    std::string name = cpuName(target);
    for (const CpuKernelSet &earlier : sets)
      if (earlier.cpu == name)
        return emitUnlocatedError(context)
               << "--cpu names CPU '" << name << "' twice";
    std::string file = sets.empty() ? abi::kCpuKernelsFile
                                    : "kernels." + name + ".so";
    sets.push_back({name, file, *features});
    targets.push_back(target);
  }
  SmallVector<OwningOpRef<ModuleOp>> copies;
  for (size_t i = 1; i < targets.size(); ++i)
    copies.push_back(module.clone());

  if (failed(outlineCpuKernels(module, options, sets.front())))
    return failure();
  // The program alone, which every set's must equal; then with the sets.
  FailureOr<std::string> program = writeManifest(module, "cpu");
  if (failed(program))
    return failure();
  FailureOr<std::string> manifest = writeManifest(module, "cpu", sets);
  if (failed(manifest) || failed(createBundleDirectory(context, bundleDir)))
    return failure();
  for (size_t i = 0; i < targets.size(); ++i) {
    ModuleOp kernelsOf = i == 0 ? module : *copies[i - 1];
    if (i > 0) {
      if (failed(outlineCpuKernels(kernelsOf, options, sets[i])))
        return failure();
      FailureOr<std::string> other = writeManifest(kernelsOf, "cpu");
      if (failed(other))
        return failure();
      if (*other != *program)
        return emitUnlocatedError(context)
               << "the kernels for CPU '" << sets[i].cpu
               << "' need another program or other weight layouts than those "
                  "for '"
               << sets.front().cpu << "'; compile a bundle for each";
    }
    auto kernels = lookupKernelModule<ModuleOp>(kernelsOf);
    PassManager lower(context);
    buildCpuKernelsToLLVMPipeline(lower);
    if (failed(lower.run(kernels)) ||
        failed(emitCpuSharedObject(kernels, pathIn(bundleDir, sets[i].file),
                                   targets[i])))
      return failure();
  }
  return manifest;
}

/// The NVIDIA bundle's kernels.ptx, and kernels.sm_90a.cubin when there is
/// a ptxas; returns the manifest.
FailureOr<std::string> compileForNvptx(ModuleOp module, StringRef bundleDir,
                                       const CompileOptions &options) {
  MLIRContext *context = module.getContext();
  PassManager outline(context);
  // sm_90 has no int8 expert kernel: the experts keep the model's type. An
  // FP8 checkpoint's linears not quantized so read its codes as stored.
  if (options.quantize)
    outline.addPass(createQuantizeWeights(quantizeOptions(options, /*experts=*/false)));
  outline.addPass(createReadFp8Weights());
  std::string dtype = options.dtype.value_or("bf16");
  if (dtype != "f32") {
    NarrowStorageOptions narrow;
    narrow.dtype = dtype;
    outline.addPass(createNarrowStorage(narrow));
  }
  if (options.fp8Activations)
    outline.addPass(createQuantizeFp8Activations());
  if (options.kvCacheDtype != "auto")
    outline.addPass(createQuantizeKvCache());
  outline.addPass(createGroupSiblingLinears());
  outline.addPass(createGroupSiblingRopes());
  outline.addPass(createGroupKvWrites());
  outline.addPass(createLlmserveToGpuKernels());
  if (failed(outline.run(module)))
    return failure();
  FailureOr<std::string> manifest = writeManifest(module, abi::kCudaTarget);
  if (failed(manifest))
    return failure();

  PassManager lower(context);
  buildGpuKernelsToNvvmPipeline(lower);
  if (failed(lower.run(module)))
    return failure();
  FailureOr<std::string> ptx = emitPtx(module);
  if (failed(ptx) || failed(createBundleDirectory(context, bundleDir)))
    return failure();
  std::string ptxPath = pathIn(bundleDir, abi::kCudaPtxFile);
  if (failed(writeFile(context, ptxPath, *ptx)))
    return failure();
  std::optional<std::string> ptxas =
      options.ptxas.empty() ? findPtxas()
                            : std::optional<std::string>(options.ptxas);
  if (ptxas && failed(assembleCubin(context, *ptxas, ptxPath,
                                    pathIn(bundleDir, abi::kCudaCubinFile))))
    return failure();
  return manifest;
}

} // namespace

void mlir::llmserve::registerCompilerDialects(DialectRegistry &registry) {
  registry.insert<LlmserveDialect>();
  // The bufferization and tiling models (registered with their dialects) and
  // the transform-dialect extensions the CPU pipeline's schedules use.
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerNvptxTarget(registry);
}

LogicalResult
mlir::llmserve::verifyCompileOptions(MLIRContext *context,
                                     const CompileOptions &options) {
  bool cpu = options.target == "cpu",
       nvptx = options.target == abi::kCudaTarget;
  if (!cpu && !nvptx)
    return emitUnlocatedError(context)
           << "unknown target '" << options.target << "' (supported: cpu, "
           << abi::kCudaTarget << ")";
  if (options.dtype && !llvm::is_contained({"bf16", "f16", "f32"}, *options.dtype))
    return emitUnlocatedError(context) << "unknown --dtype '" << *options.dtype
                                       << "' (supported: bf16, f16, f32)";
  if (options.quantize && !llvm::is_contained({"int8", "int4"}, *options.quantize))
    return emitUnlocatedError(context) << "unknown --quantize '"
                                       << *options.quantize
                                       << "' (supported: int8, int4)";
  if (!llvm::is_contained({"auto", "fp8", "fp8_e4m3"}, options.kvCacheDtype))
    return emitUnlocatedError(context)
           << "unknown --kv-cache-dtype '" << options.kvCacheDtype
           << "' (supported: auto, fp8, fp8_e4m3)";
  if (llvm::is_contained(options.cpus, ""))
    return emitUnlocatedError(context) << "--cpu lists an empty CPU name";
  if (options.fp8Activations) {
    if (!nvptx)
      return emitUnlocatedError(context)
             << "--fp8-activations needs --target " << abi::kCudaTarget
             << " (the cpu reads FP8 weights dequantized)";
    if (options.quantize)
      return emitUnlocatedError(context)
             << "--fp8-activations excludes --quantize (which requantizes "
                "FP8 weights)";
    if (options.dtype == "f32")
      return emitUnlocatedError(context)
             << "--fp8-activations needs --dtype bf16 or f16 (the "
                "tensor-core linears)";
  }
  return success();
}

LogicalResult mlir::llmserve::compileBundle(ModuleOp module,
                                            StringRef bundleDir,
                                            const CompileOptions &options) {
  MLIRContext *context = module.getContext();
  if (failed(verifyCompileOptions(context, options)))
    return failure();
  FailureOr<std::string> manifest =
      options.target == "cpu" ? compileForCpu(module, bundleDir, options)
                              : compileForNvptx(module, bundleDir, options);
  if (failed(manifest) ||
      failed(copyCheckpointFiles(module, bundleDir, options.embedWeights)))
    return failure();
  // The manifest goes last: a bundle with a manifest is complete.
  return writeFile(context, pathIn(bundleDir, abi::kManifestFile), *manifest);
}
