// Runs a bundle of target sm_90 on an NVIDIA GPU through the driver API:
// loads its module, uploads its weights once, owns the KV pool and the
// activation memory on the device, and runs each step's dispatches on one
// stream, decode steps as CUDA graphs (docs/executor.md, "The CUDA
// executor"). A launched step is enqueued and not waited for, so the host
// can prepare the next one while it runs; a deferred token is copied on the
// device from the step before's sampled tokens.
#ifndef LLMSERVE_CUDA_CUDA_EXECUTOR_H
#define LLMSERVE_CUDA_CUDA_EXECUTOR_H

#include "core/executor.h"
#include "bundle/bundle.h"
#include "bundle/host_tensor.h"
#include "cuda/buffer_layout.h"
#include "cuda/cuda_driver.h"
#include "cuda/device_memory.h"
#include "cuda/kernel_params.h"

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace llmserve::cuda {

// The largest step the executor runs; its device memory is allocated for
// these once, so steps never allocate.
struct StepLimits {
  int32_t max_tokens = 0;         // T: max_num_batched_tokens
  int32_t max_seqs = 0;           // S: max_num_seqs
  int32_t max_blocks_per_seq = 0; // MB: ceil(max_model_len / block_size)
};

struct CudaExecutorOptions {
  StepLimits limits;
  int device = 0;           // ordinal
  bool cuda_graphs = true;  // capture decode steps per padded batch size
};

struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  int64_t total_memory = 0;
  int driver_version = 0; // 13000 for CUDA 13.0
};

class CudaExecutor : public Executor {
public:
  // Loads the driver, takes the device's primary context, loads the module
  // (the sm_90a cubin on a compute capability 9.0 device when the bundle has
  // one, else its PTX, JIT-compiled), uploads the bundle's weights, and
  // allocates the step's activation and staging memory for
  // `options.limits` (unless the bundle has no `step` entry point). Throws
  // CudaError for driver failures (with the JIT log for PTX that does not
  // compile) and std::invalid_argument for a bundle of another target.
  CudaExecutor(Bundle bundle, CudaExecutorOptions options);
  ~CudaExecutor() override;
  CudaExecutor(const CudaExecutor &) = delete;
  CudaExecutor &operator=(const CudaExecutor &) = delete;

  KvCacheSpec kv_cache_spec() const override;
  // Allocates one zeroed pool per kv_cache buffer, of num_blocks blocks and,
  // with CUDA graphs, one more: the sink of padded decode rows. Drops the
  // graphs captured over the previous pools.
  void allocate_kv_cache(int32_t num_blocks) override;
  // Enqueues the `step` entry point. Throws std::invalid_argument for a
  // batch that is inconsistent (check_step_batch) or larger than the
  // limits, before anything is enqueued.
  void launch(const StepBatch &batch) override;
  void wait(StepOutput &out) override;
  // Runs the step uncaptured (and unpadded) with an event before every
  // dispatch: the milliseconds each dispatch of the `step` entry point took,
  // by dispatch index (0 for an empty grid). For `llmrun bench decode`;
  // not while a step is launched.
  std::vector<float> profile_step(const StepBatch &batch);
  // Device-to-device copy rate in bytes read plus written per second, over
  // `bytes`-sized copies: the memory-bandwidth roofline benchmarks compare
  // against.
  double copy_bandwidth(size_t bytes);

  // Runs entry point `name` on `inputs`, as CpuExecutor::run_entry does,
  // with buffers allocated for this call. symbols.NB is the pools' size.
  std::vector<HostTensor> run_entry(std::string_view name, Symbols symbols,
                                    const std::vector<HostTensor> &inputs);

  const Manifest &manifest() const { return manifest_; }
  const std::string &bundle_dir() const { return bundle_dir_; }
  const std::string &weights_source() const { return weights_source_; }
  const CudaDeviceInfo &device() const { return device_; }
  // Which file the kernels came from: kernels.sm_90a.cubin or kernels.ptx.
  const std::string &module_file() const { return module_file_; }
  // Free and total device memory now (cuMemGetInfo).
  int64_t free_memory() const;
  int64_t weight_bytes() const { return weight_bytes_; }
  // Decode graphs captured so far, one per combination of buckets used.
  size_t num_graphs() const { return graphs_.size(); }

  // Where launch() and wait() spend host time, summed over the steps since
  // the last reset: checking, padding and packing the step's arrays (the GPU
  // idles unless a step is queued ahead), enqueueing the upload, the
  // launches and the result copies, waiting for the GPU, and taking the
  // results out.
  struct HostTiming {
    int64_t steps = 0;
    double prepare_s = 0, enqueue_s = 0, wait_s = 0, results_s = 0;
  };
  const HostTiming &host_timing() const { return host_timing_; }
  void reset_host_timing() { host_timing_ = {}; }

private:
  // What a captured decode graph was captured for: its buckets of
  // sequences, logit entries and mask rows (decode_padding.h).
  struct GraphKey {
    int32_t seqs;
    int64_t logit_entries, mask_rows;
    bool operator<(const GraphKey &o) const {
      return std::tie(seqs, logit_entries, mask_rows) <
             std::tie(o.seqs, o.logit_entries, o.mask_rows);
    }
  };
  // A step on the stream, until wait() takes its results.
  struct LaunchedStep {
    int buffers;             // its staging_ and results_
    int events;              // its pair in step_events_
    bool after_another;      // launched right after another step
    bool timed;              // counts in host_timing (not profiled)
    int32_t num_seqs;
    bool logprobs;
    BufferLayout results;    // of the real sequences, in results_[buffers]
    CUdeviceptr next_tokens; // its sampled tokens on the device
    double prepare_s, enqueue_s;
  };
  // Start and end events of the steps: three pairs, so that a step's idle
  // time can be read against the end of the step before while the step
  // after it is launched.
  static constexpr int kStepEventPairs = 3;

  struct Context {
    CUdevice device = 0;
    CUcontext context = nullptr;
    ~Context();
  };

  void make_current() const;
  void load_module(const std::string &dir);
  void upload_weights(const Bundle &bundle);
  const EntryPoint &entry(std::string_view name) const;
  BufferLayout layout_of(const std::vector<int> &ids, const Symbols &symbols) const;
  // Sets the address of every argument and scratch buffer of the step.
  void bind_step(const BufferLayout &arguments, const BufferLayout &scratch);
  // launch(), with events around the dispatches when `events` is given
  // (one per dispatch and one after the last; the step then runs uncaptured).
  void enqueue_step(const StepBatch &batch, const std::vector<CUevent> *events);
  // Launches every dispatch of `e` on the stream, with addresses_; records
  // (*events)[i] before dispatch i and the last event after them.
  void launch(const EntryPoint &e, const Symbols &symbols,
              const std::vector<CUevent> *events = nullptr);
  // Records the launches of the step for `symbols` as a graph.
  CUgraphExec capture_step(const Symbols &symbols);
  void drop_graphs();

  Context context_; // first: released after every other member
  CudaDeviceInfo device_;
  CudaExecutorOptions options_;
  Manifest manifest_;
  std::string bundle_dir_, weights_source_, module_file_;
  CUstream stream_ = nullptr;
  CUmodule module_ = nullptr;
  std::vector<CUfunction> functions_; // by kernel index

  std::vector<DeviceBuffer> weights_;
  int64_t weight_bytes_ = 0;
  std::vector<DeviceBuffer> kv_cache_;
  int32_t num_kv_blocks_ = 0; // the engine's
  int64_t pool_blocks_ = 0;   // NB: the engine's and the padding sink
  std::vector<uint64_t> addresses_; // device address by buffer id
  // Per-dispatch scratch, reused so a launch allocates nothing.
  KernelParams params_;
  std::vector<int64_t> push_constants_;
  HostTiming host_timing_;

  // The step: its scratch buffers, and memory for the largest step.
  const EntryPoint *step_ = nullptr;
  std::vector<int> step_scratch_;
  DeviceBuffer step_arguments_, step_arena_;
  // Two of each: a step packs its arrays and gets its results while the
  // step before may still be uploading and running.
  std::array<PinnedBuffer, 2> staging_, results_;
  std::array<CUevent, 2 * kStepEventPairs> step_events_{};
  std::deque<LaunchedStep> launched_; // oldest first
  uint64_t num_launches_ = 0;
  // The last launched step's sampled tokens on the device, and how many.
  CUdeviceptr previous_next_tokens_ = 0;
  int32_t previous_num_seqs_ = 0;
  std::map<GraphKey, CUgraphExec> graphs_;
  int64_t max_logit_entries_ = 0; // of the largest step
};

} // namespace llmserve::cuda

#endif // LLMSERVE_CUDA_CUDA_EXECUTOR_H
