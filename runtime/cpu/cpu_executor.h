// Runs a bundle's entry points on the host: owns the KV cache and the
// activation memory, binds buffers, and runs each dispatch's workgroups on a
// thread pool.
#ifndef LLMSERVE_CPU_CPU_EXECUTOR_H
#define LLMSERVE_CPU_CPU_EXECUTOR_H

#include "core/executor.h"
#include "bundle/aligned_buffer.h"
#include "bundle/bundle.h"
#include "bundle/host_tensor.h"
#include "cpu/kernel_library.h"
#include "cpu/thread_pool.h"

#include <string_view>
#include <vector>

namespace llmserve {

class CpuExecutor : public Executor {
public:
  // `num_threads` counts the calling thread; 0 means one per usable CPU.
  explicit CpuExecutor(Bundle bundle, int num_threads = 0);

  KvCacheSpec kv_cache_spec() const override;
  // Allocates one zero-filled pool of `num_blocks` blocks per kv_cache buffer
  // (again on a second call, dropping the old contents).
  void allocate_kv_cache(int32_t num_blocks) override;
  // Runs the `step` entry point. Throws std::invalid_argument if the batch is
  // inconsistent (array sizes, ids or slots out of range), before any kernel
  // runs.
  void execute(const StepBatch &batch, StepOutput &out) override;

  // Runs the `logits` entry point (llmc import --logits-entry) on `batch`,
  // checked as execute() checks it, and returns its logits: [S, V],
  // row-major, row s that of batch.logits_rows[s].
  std::vector<float> logits(const StepBatch &batch);

  // Runs entry point `name` on `inputs` (one per argument, in order, dtype
  // and shape as the manifest gives them for `symbols`) and returns its
  // results. symbols.NB is ignored: it is the allocated KV pool's size.
  std::vector<HostTensor> run_entry(std::string_view name, Symbols symbols,
                                    const std::vector<HostTensor> &inputs);

  const Bundle &bundle() const { return bundle_; }
  int num_threads() const { return pool_.num_threads(); }

private:
  const EntryPoint &entry(std::string_view name) const;
  // Checks `batch` and runs entry point `name` (`step` or `logits`) on it
  // for the public method `caller`; returns the entry point, whose results
  // are in buffers_.
  const EntryPoint &run_step_entry(std::string_view name, const StepBatch &batch,
                                   const char *caller);
  // Binds `arguments` (one pointer per argument of `e`), lays out the
  // activations and results for `symbols`, and runs the dispatches.
  void run(const EntryPoint &e, const Symbols &symbols, const void *const *arguments);

  Bundle bundle_;
  KernelLibrary kernels_;
  ThreadPool pool_;
  int64_t num_kv_blocks_ = 0;
  std::vector<AlignedBuffer> kv_cache_;
  // Activations and results of the running entry point, 64-byte aligned.
  // Grows to the largest step seen; never shrinks.
  AlignedBuffer arena_;
  // Activation and result buffers of each entry point, by entry index.
  std::vector<std::vector<int>> scratch_buffers_;
  std::vector<void *> buffers_; // base address by buffer id
  // Per-dispatch scratch, reused so a step allocates nothing.
  std::vector<void *> bindings_;
  std::vector<int64_t> push_constants_;
};

} // namespace llmserve

#endif // LLMSERVE_CPU_CPU_EXECUTOR_H
