// Runs a bundle's entry points on the host: owns the KV cache and the
// activation memory, binds buffers, and runs each dispatch's workgroups on a
// thread pool. Launched steps run on a step thread of their own, in order,
// while the thread that launched them goes on.
#ifndef LLMSERVE_CPU_CPU_EXECUTOR_H
#define LLMSERVE_CPU_CPU_EXECUTOR_H

#include "core/executor.h"
#include "bundle/aligned_buffer.h"
#include "bundle/bundle.h"
#include "bundle/host_tensor.h"
#include "cpu/kernel_library.h"
#include "cpu/thread_pool.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

namespace llmserve {

class CpuExecutor : public Executor {
public:
  // `num_threads` counts the calling thread; 0 means one per usable CPU.
  explicit CpuExecutor(Bundle bundle, int num_threads = 0);

  // The kernel set loaded (of the bundle's sets for several CPUs) and why.
  const KernelLibrary &kernels() const { return kernels_; }

  KvCacheSpec kv_cache_spec() const override;
  // Allocates one zero-filled pool of `num_blocks` blocks per kv_cache buffer
  // (again on a second call, dropping the old contents).
  void allocate_kv_cache(int32_t num_blocks) override;
  ~CpuExecutor() override;
  CpuExecutor(const CpuExecutor &) = delete;
  CpuExecutor &operator=(const CpuExecutor &) = delete;

  // Queues the `step` entry point for the step thread. Throws
  // std::invalid_argument if the batch is inconsistent (array sizes, ids or
  // slots out of range), before any kernel runs.
  void launch(const StepBatch &batch) override;
  void wait(StepOutput &out) override;

  // Runs the `logits` entry point (llmc import --logits-entry) on `batch`,
  // checked as launch() checks it, and returns its logits: [S, V],
  // row-major, row s that of batch.logits_rows[s]. Not while a step is
  // launched, nor with deferred tokens.
  std::vector<float> logits(const StepBatch &batch);

  // Runs the `step` entry point on `batch` (checked as launch() checks it,
  // without deferred tokens) on the calling thread, timing each dispatch:
  // the milliseconds each took, by dispatch index. For `llmrun bench decode
  // --profile`; not while a step is launched.
  std::vector<float> profile_step(const StepBatch &batch);

  // Runs entry point `name` on `inputs` (one per argument, in order, dtype
  // and shape as the manifest gives them for `symbols`) and returns its
  // results. symbols.NB is ignored: it is the allocated KV pool's size. Not
  // while a step is launched.
  std::vector<HostTensor> run_entry(std::string_view name, Symbols symbols,
                                    const std::vector<HostTensor> &inputs);

  const Bundle &bundle() const { return bundle_; }
  int num_threads() const { return pool_.num_threads(); }

private:
  // A launched step, as the step thread takes it.
  struct LaunchedStep {
    const StepBatch *batch;
    StepOutput out;
    std::exception_ptr error;
    bool done = false;
  };

  const EntryPoint &entry(std::string_view name) const;
  // Throws std::logic_error naming `caller` while a step is launched.
  void check_idle(const char *caller) const;
  // Throws std::logic_error naming `caller` before the KV cache is
  // allocated, and std::invalid_argument for a bundle without entry point
  // `entry_name`, a batch that breaks the step contract, or deferred tokens
  // naming rows outside a previous step of `previous_num_seqs` sequences.
  void check_batch(const char *caller, std::string_view entry_name, const StepBatch &batch,
                   int64_t previous_num_seqs) const;
  // Runs entry point `name` (`step` or `logits`) on a checked batch whose
  // token ids are `token_ids`; returns the entry point, whose results are in
  // buffers_. With `dispatch_ms`, the milliseconds of each dispatch.
  const EntryPoint &run_step_entry(std::string_view name, const StepBatch &batch,
                                   const int32_t *token_ids,
                                   std::vector<float> *dispatch_ms = nullptr);
  // The step thread: runs launched steps in order.
  void step_loop();
  void run_launched(LaunchedStep &step);
  // Binds `arguments` (one pointer per argument of `e`), lays out the
  // activations and results for `symbols`, and runs the dispatches; with
  // `dispatch_ms`, timing each.
  void run(const EntryPoint &e, const Symbols &symbols, const void *const *arguments,
           std::vector<float> *dispatch_ms = nullptr);

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

  // Launched steps, oldest first; guarded by mutex_. The step thread owns
  // everything above while a step runs.
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<LaunchedStep> launched_;
  int64_t last_launched_num_seqs_ = 0; // launching thread only
  bool stopping_ = false;
  // Step thread only: the tokens of the step it ran last, for the next
  // step's deferred tokens, and when it ended.
  std::vector<int32_t> previous_next_tokens_;
  std::vector<int32_t> resolved_token_ids_;
  std::optional<std::chrono::steady_clock::time_point> previous_end_;
  std::thread step_thread_;
};

} // namespace llmserve

#endif // LLMSERVE_CPU_CPU_EXECUTOR_H
