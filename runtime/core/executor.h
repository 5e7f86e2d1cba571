// The one interface the engine drives a model through: "run this step, give
// me the sampled tokens". A step is the step contract's arrays in host memory
// (bundle/step_batch.h).
#ifndef LLMSERVE_CORE_EXECUTOR_H
#define LLMSERVE_CORE_EXECUTOR_H

#include "bundle/step_batch.h"

#include <cstdint>
#include <string>

namespace llmserve {

struct KvCacheSpec {
  int32_t block_size = 16;
  int64_t bytes_per_token = 0; // all layers, K and V
  std::string dtype = "f32";   // the bundle's spelling ("bf16", "f8_e4m3")
};

class Executor {
public:
  virtual ~Executor() = default;
  virtual KvCacheSpec kv_cache_spec() const = 0;
  // Called once before the first step.
  virtual void allocate_kv_cache(int32_t num_blocks) = 0;
  virtual void execute(const StepBatch &batch, StepOutput &out) = 0;
};

} // namespace llmserve

#endif // LLMSERVE_CORE_EXECUTOR_H
