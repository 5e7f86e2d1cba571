//===- Model.h - A model family's reading of a checkpoint ------*- C++ -*-===//
//
// Each model family lives in one file of compiler/Import/Models/: it reads
// config.json into a Model, which builds the step's logits with the shared
// GraphBuilder. modelFamilies() lists them by Hugging Face model_type.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_IMPORT_MODEL_H
#define LLMSERVE_IMPORT_MODEL_H

#include "compiler/Import/Config.h"
#include "llmserve/IR/LlmserveOps.h"

#include "llvm/ADT/StringSet.h"

#include <memory>
#include <string>

namespace mlir::llmserve {

class GraphBuilder;

/// What every decoder-only model has: the step function's KV caches and the
/// bundle's model config are made of it.
struct ModelShape {
  std::string architecture; // the family's name in the bundle
  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kvHeads = 0,
          headDim = 0, maxPositions = 0;
  /// A mixture of experts' experts per sparse layer and per token; 0 for a
  /// dense model.
  int64_t experts = 0, expertsPerToken = 0;
};

/// Rotary position embedding of config.json (rope_theta, rope_scaling).
struct RopeParams {
  double theta = 10000;
  /// The channels of a head it rotates; 0: all of them.
  int64_t rotaryDim = 0;
  RopeScaling scaling = RopeScaling::none;
  double factor = 1, lowFreqFactor = 1, highFreqFactor = 4;
  int64_t originalMaxPosition = 0;
  /// longrope: per-pair factors of sequences up to and past
  /// originalMaxPosition, and the scale of cos and sin.
  SmallVector<float> shortFactor, longFactor;
  double attentionFactor = 1;
};
llvm::Expected<RopeParams> readRope(const Config &config);

/// The sizes every decoder's config.json names the same way: vocab_size,
/// hidden_size, num_hidden_layers, num_attention_heads and
/// num_key_value_heads (default: as many as the query heads, of which they
/// must divide the count). The family reads head_dim and
/// max_position_embeddings, whose defaults differ.
llvm::Error readDecoderShape(const Config &config, ModelShape &shape);

/// One checkpoint as its family reads it.
class Model {
public:
  virtual ~Model() = default;
  const ModelShape &shape() const { return shape_; }
  /// Adapts tensor names to the checkpoint's, which is empty when the
  /// directory holds no weights.
  virtual void useTensorNames(const llvm::StringSet<> &names) {}
  /// The logits [S, vocab] of the step: the last row of each sequence.
  virtual Value buildLogits(GraphBuilder &g) const = 0;

protected:
  ModelShape shape_;
};

/// Reads config.json of the given model_type; errors name the file and field.
using ModelReader = llvm::Expected<std::unique_ptr<Model>> (*)(
    const Config &config, llvm::StringRef modelType);

struct ModelFamily {
  llvm::StringLiteral modelType;
  ModelReader read;
};

/// Every supported model_type, in the order errors list them.
llvm::ArrayRef<ModelFamily> modelFamilies();

// The families' readers (compiler/Import/Models/).
llvm::Expected<std::unique_ptr<Model>> readLlama(const Config &config,
                                                 llvm::StringRef modelType);
llvm::Expected<std::unique_ptr<Model>> readPhi3(const Config &config,
                                                llvm::StringRef modelType);
llvm::Expected<std::unique_ptr<Model>> readGpt2(const Config &config,
                                                llvm::StringRef modelType);
llvm::Expected<std::unique_ptr<Model>> readGemma(const Config &config,
                                                 llvm::StringRef modelType);

} // namespace mlir::llmserve

#endif // LLMSERVE_IMPORT_MODEL_H
