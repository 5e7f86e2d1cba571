// The one interface the engine drives a model through: "start this step",
// then "give me its sampled tokens". A step is the step contract's arrays in
// host memory (bundle/step_batch.h). Steps run in the order they are
// launched, so a step may be launched before the one ahead of it has
// returned, taking that step's sampled tokens as its deferred tokens: the
// host schedules step n + 1 while step n runs.
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
  // Starts a step after those launched before it. The executor may read
  // `batch` until the wait() that returns it, so it must stay unchanged
  // until then. At most two steps are launched and not yet waited for.
  // Throws std::invalid_argument for a batch that breaks the step contract,
  // before anything of it runs.
  virtual void launch(const StepBatch &batch) = 0;
  // Waits for the oldest launched step and gives its results. Throws what
  // the step failed with; the steps launched after it still run.
  virtual void wait(StepOutput &out) = 0;

  // A step with nothing launched ahead of it, run to the end.
  void execute(const StepBatch &batch, StepOutput &out) {
    launch(batch);
    wait(out);
  }
};

} // namespace llmserve

#endif // LLMSERVE_CORE_EXECUTOR_H
