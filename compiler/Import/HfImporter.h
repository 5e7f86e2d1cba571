//===- HfImporter.h - Hugging Face checkpoint to the llmserve dialect -----===//

#ifndef LLMSERVE_IMPORT_HFIMPORTER_H
#define LLMSERVE_IMPORT_HFIMPORTER_H

#include "compiler/Import/Config.h"
#include "llmserve/IR/LlmserveOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/Support/Error.h"

#include <optional>

namespace mlir::llmserve {

struct ImportOptions {
  /// Tokens per KV block.
  int64_t blockSize = 16;
  /// Also emit `logits`: the step function returning the logits [S, V]
  /// instead of sampling (for tests and debugging).
  bool logitsEntry = false;
};

/// How a quantized checkpoint stores its linears.
struct StoredQuantization {
  QuantizedCheckpoint layout;
  /// GPTQ's desc_act: a linear's groups of 128 inputs follow the activation
  /// order, not consecutive columns, so the int4 kernel cannot read it as
  /// stored; it is dequantized when the bundle loads.
  bool actOrder = false;
  /// compressed-tensors: whether some config group stores its linears
  /// packed in 4 bits (compressed_tensors_int4), and whether some stores
  /// them in 8 bits (compressed_tensors). Each linear's own tensors say
  /// which, when the checkpoint's tensors are at hand.
  bool packedInt4 = false, eightBit = false;
  /// compressed-tensors' kv_cache_scheme: the checkpoint holds scales for
  /// each layer's FP8 keys and values (`self_attn.k_scale`, `v_scale`): one
  /// per tensor (strategy `tensor`) or one per KV head (`attn_head`), which
  /// `kvCacheScales` then lists, per layer.
  bool kvCacheScheme = false, kvCachePerHead = false;
  struct KvCacheScales {
    SmallVector<float> key, value;
  };
  SmallVector<KvCacheScales> kvCacheScales;
};

/// How config.json's quantization_config says the checkpoint stores its
/// linears: nothing for an unquantized checkpoint, the GPTQ, AWQ or FP8
/// layout llmserve reads, or an error naming what it cannot read.
llvm::Expected<std::optional<StoredQuantization>>
readQuantizedCheckpoint(const Config &config);

/// Builds the `step` function of the checkpoint in `dir` from its
/// config.json. Tensor names are checked against the safetensors headers
/// when the weights are present; compiling needs only config.json.
llvm::Expected<OwningOpRef<ModuleOp>>
importHuggingFace(MLIRContext *context, llvm::StringRef dir,
                  const ImportOptions &options);

} // namespace mlir::llmserve

#endif
