//===- CompileBundle.h - llmserve IR to a kernel bundle ---------*- C++ -*-===//
//
// The pipelines of `llmc compile`, as a library: a module in the llmserve
// dialect becomes a bundle directory (docs/bundle.md) for the CPU or for
// NVIDIA sm_90. Errors are diagnostics on the module's context: located where
// they are in the IR, unlocated when they are not (options, files, ptxas).
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_PIPELINE_COMPILEBUNDLE_H
#define LLMSERVE_PIPELINE_COMPILEBUNDLE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace mlir::llmserve {

/// What to compile for. Error messages name the options as llmc's flags.
struct CompileOptions {
  /// "cpu" or "sm_90".
  std::string target = "cpu";
  /// sm_90: the storage type of weights, KV cache and activations: "bf16"
  /// (when unset), "f16", or "f32", which keeps the types as written. cpu:
  /// the type of the linears' float weights, computed in f32 ("f32" when
  /// unset).
  std::optional<std::string> dtype;
  /// cpu: the LLVM CPUs the kernels are compiled for, each into a set of its
  /// own; "native" is the host's CPU and features. The runtime loads the
  /// first set whose features the CPU has, so the most capable CPU goes
  /// first and a portable one (x86-64-v3) last.
  SmallVector<std::string> cpus = {"native"};
  /// sm_90: the ptxas that assembles the cubin; when empty, findPtxas()'s.
  /// Without one the bundle has PTX only.
  std::string ptxas;
  /// Copy the checkpoint's model.safetensors into the bundle.
  bool embedWeights = false;
  /// "int8" reads the weights of linears as int8 values with a scale per
  /// output channel, "int4" as int4 values with one per output channel and
  /// group of 128 inputs, quantized by the runtime at load.
  std::optional<std::string> quantize;
  /// The KV cache's storage type: "auto" (the activations') or "fp8" (=
  /// "fp8_e4m3").
  std::string kvCacheDtype = "auto";
  /// sm_90: linears of an FP8 checkpoint's weights quantize their inputs to
  /// FP8 per row and group of 128 columns and multiply on the FP8 tensor
  /// cores (W8A8), instead of converting the weights to the activations'
  /// type (W8A16).
  bool fp8Activations = false;
};

/// Registers what compileBundle needs of a context: the llmserve dialect, the
/// upstream dialects and extensions the pipelines use, and the NVPTX target.
void registerCompilerDialects(DialectRegistry &registry);

/// Checks `options` on their own: a known target and types.
LogicalResult verifyCompileOptions(MLIRContext *context,
                                   const CompileOptions &options);

/// Compiles `module` (lowering it in place) into the bundle directory
/// `bundleDir`, created with its parents: the kernels, the tokenizer files
/// (and, when asked, the weights) of the checkpoint it was imported from,
/// and manifest.json last, so that a directory with a manifest is a complete
/// bundle.
LogicalResult compileBundle(ModuleOp module, StringRef bundleDir,
                            const CompileOptions &options);

} // namespace mlir::llmserve

#endif // LLMSERVE_PIPELINE_COMPILEBUNDLE_H
