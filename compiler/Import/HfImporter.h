//===- HfImporter.h - Hugging Face checkpoint to the llmserve dialect -----===//

#ifndef LLMSERVE_IMPORT_HFIMPORTER_H
#define LLMSERVE_IMPORT_HFIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/Support/Error.h"

namespace mlir::llmserve {

struct ImportOptions {
  /// Tokens per KV block.
  int64_t blockSize = 16;
  /// Also emit `logits`: the step function returning the logits [S, V]
  /// instead of sampling (for tests and debugging).
  bool logitsEntry = false;
};

/// Builds the `step` function of the checkpoint in `dir` from its
/// config.json. Tensor names are checked against the safetensors headers
/// when the weights are present; compiling needs only config.json.
llvm::Expected<OwningOpRef<ModuleOp>>
importHuggingFace(MLIRContext *context, llvm::StringRef dir,
                  const ImportOptions &options);

} // namespace mlir::llmserve

#endif
