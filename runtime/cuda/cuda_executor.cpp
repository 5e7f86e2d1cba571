#include "cuda/cuda_executor.h"

#include "bundle/entry_inputs.h"
#include "bundle/step_batch.h"
#include "core/request.h" // Clock, seconds_between
#include "cuda/decode_padding.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace llmserve::cuda {

namespace {

namespace fs = std::filesystem;

// Kernels asking for more dynamic shared memory than this need the opt-in
// attribute.
constexpr int64_t kDefaultSharedBytes = 48 * 1024;

std::string read_file(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int attribute(CUdevice device, CUdevice_attribute which) {
  int value = 0;
  CU_CALL(cuDeviceGetAttribute, &value, which, device);
  return value;
}

// Events created for one measurement, destroyed with it.
class Events {
public:
  explicit Events(size_t n) {
    for (size_t i = 0; i < n; ++i)
      CU_CALL(cuEventCreate, &events_.emplace_back(), CU_EVENT_DEFAULT);
  }
  ~Events() {
    for (CUevent e : events_)
      cuda_driver().cuEventDestroy_v2(e);
  }
  Events(const Events &) = delete;
  Events &operator=(const Events &) = delete;
  const std::vector<CUevent> &get() const { return events_; }
  float elapsed_ms(size_t from, size_t to) const {
    float ms = 0;
    CU_CALL(cuEventElapsedTime_v2, &ms, events_[from], events_[to]);
    return ms;
  }

private:
  std::vector<CUevent> events_;
};

} // namespace

CudaExecutor::Context::~Context() {
  if (context)
    cuda_driver().cuDevicePrimaryCtxRelease_v2(device);
}

CudaExecutor::CudaExecutor(Bundle bundle, CudaExecutorOptions options)
    : options_(options), manifest_(bundle.manifest()), bundle_dir_(bundle.dir()),
      weights_source_(bundle.weights_source()) {
  if (manifest_.target != abi::kCudaTarget)
    throw std::invalid_argument(bundle_dir_ + ": the bundle targets " + manifest_.target +
                                ", not " + abi::kCudaTarget + " (NVIDIA)");
  int count = 0;
  CU_CALL(cuDeviceGetCount, &count);
  if (options.device < 0 || options.device >= count)
    throw CudaError("CUDA device " + std::to_string(options.device) + " does not exist (" +
                    std::to_string(count) + " devices)");
  CU_CALL(cuDeviceGet, &context_.device, options.device);
  CU_CALL(cuDevicePrimaryCtxRetain, &context_.context, context_.device);
  make_current();

  CUdevice dev = context_.device;
  char name[256] = {};
  CU_CALL(cuDeviceGetName, name, sizeof name - 1, dev);
  size_t total = 0;
  CU_CALL(cuDeviceTotalMem_v2, &total, dev);
  device_ = {options.device,
             name,
             attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
             attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
             attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
             static_cast<int64_t>(total),
             0};
  CU_CALL(cuDriverGetVersion, &device_.driver_version);
  if (device_.compute_major < 9)
    throw CudaError(bundle_dir_ + ": the bundle targets sm_90; device " +
                    std::to_string(options.device) + " (" + device_.name +
                    ") is compute capability " + std::to_string(device_.compute_major) +
                    "." + std::to_string(device_.compute_minor));

  CU_CALL(cuStreamCreate, &stream_, CU_STREAM_NON_BLOCKING);
  load_module(bundle.dir());
  addresses_.assign(manifest_.buffers.size(), 0);
  upload_weights(bundle);

  step_ = manifest_.find_entry("step");
  if (!step_)
    return; // a bundle of single ops, for run_entry
  const StepLimits &l = options_.limits;
  if (l.max_tokens < 1 || l.max_seqs < 1 || l.max_blocks_per_seq < 1)
    throw std::invalid_argument("CUDA executor: step limits must be positive (max tokens " +
                                std::to_string(l.max_tokens) + ", sequences " +
                                std::to_string(l.max_seqs) + ", blocks per sequence " +
                                std::to_string(l.max_blocks_per_seq) + ")");
  step_scratch_ = manifest_.scratch_buffers(*step_);
  // The largest step is either the limits or the largest padded decode step;
  // a sequence's logit entries are at most each distinct token of its context
  // and each token of the vocabulary it biases, its mask one row.
  const StepBounds bounds = manifest_.step_bounds(0);
  max_logit_entries_ =
      int64_t{l.max_seqs} *
      (int64_t{l.max_blocks_per_seq} * manifest_.kv_cache->block_size + bounds.vocab_size);
  const int64_t max_mask_words = int64_t{l.max_seqs} * token_mask_words(bounds.vocab_size);
  std::vector<Symbols> largest = {{l.max_tokens, l.max_seqs, l.max_blocks_per_seq, 0,
                                   max_logit_entries_, max_mask_words}};
  if (const int32_t bucket = decode_bucket(std::min(l.max_seqs, kDecodeBuckets.back())))
    largest.push_back(
        {bucket, bucket, l.max_blocks_per_seq, 0, max_logit_entries_, max_mask_words});
  size_t arguments = 0, scratch = 0, results = 0;
  for (const Symbols &s : largest) {
    arguments = std::max(arguments, layout_of(step_->arguments, s).total);
    scratch = std::max(scratch, layout_of(step_scratch_, s).total);
    results = std::max(results, layout_of(step_->results, s).total);
  }
  step_arguments_ = DeviceBuffer(arguments);
  step_arena_ = DeviceBuffer(scratch);
  for (int i = 0; i < 2; ++i) {
    staging_[i] = PinnedBuffer(arguments);
    results_[i] = PinnedBuffer(results);
  }
  for (CUevent &event : step_events_)
    CU_CALL(cuEventCreate, &event, CU_EVENT_DEFAULT);
}

CudaExecutor::~CudaExecutor() {
  const CudaDriver &cu = cuda_driver();
  cu.cuCtxSetCurrent(context_.context);
  drop_graphs();
  // Memory first, while the module and stream still exist; the context last.
  kv_cache_.clear();
  weights_.clear();
  step_arguments_ = DeviceBuffer();
  step_arena_ = DeviceBuffer();
  staging_ = {};
  results_ = {};
  for (CUevent event : step_events_)
    if (event)
      cu.cuEventDestroy_v2(event);
  if (module_)
    cu.cuModuleUnload(module_);
  if (stream_)
    cu.cuStreamDestroy_v2(stream_);
}

void CudaExecutor::make_current() const {
  // The engine may run steps on another thread than the one that loaded.
  CU_CALL(cuCtxSetCurrent, context_.context);
}

void CudaExecutor::load_module(const std::string &dir) {
  const fs::path cubin = fs::path(dir) / abi::kCudaCubinFile;
  const fs::path ptx = fs::path(dir) / abi::kCudaPtxFile;
  const CudaDriver &cu = cuda_driver();
  if (device_.compute_major == 9 && device_.compute_minor == 0 && fs::exists(cubin)) {
    const std::string image = read_file(cubin);
    module_file_ = abi::kCudaCubinFile;
    const CUresult r = cu.cuModuleLoadDataEx(&module_, image.data(), 0, nullptr, nullptr);
    if (r != CUDA_SUCCESS)
      throw CudaError(cubin.string() + ": cuModuleLoadDataEx: " + cu.describe(r));
  } else {
    if (!fs::exists(ptx))
      throw std::runtime_error(dir + ": the bundle has no " + abi::kCudaPtxFile +
                               (fs::exists(cubin) ? " and its cubin is for compute capability "
                                                    "9.0 only"
                                                  : ""));
    const std::string image = read_file(ptx); // std::string ends in '\0'
    module_file_ = abi::kCudaPtxFile;
    std::string error_log(16384, '\0'), info_log(16384, '\0');
    CUjit_option keys[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                           CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                           CU_JIT_LOG_VERBOSE};
    void *values[] = {error_log.data(), reinterpret_cast<void *>(error_log.size()),
                      info_log.data(), reinterpret_cast<void *>(info_log.size()),
                      reinterpret_cast<void *>(uintptr_t{1})};
    const CUresult r = cu.cuModuleLoadDataEx(&module_, image.c_str(), std::size(keys), keys,
                                             values);
    if (r != CUDA_SUCCESS) {
      error_log.resize(std::strlen(error_log.c_str()));
      info_log.resize(std::strlen(info_log.c_str()));
      throw CudaError(ptx.string() + ": cuModuleLoadDataEx (PTX JIT): " + cu.describe(r) +
                      (error_log.empty() ? "" : "\n" + error_log) +
                      (info_log.empty() ? "" : "\n" + info_log));
    }
  }

  const int max_shared = attribute(context_.device,
                                   CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  for (const Kernel &k : manifest_.kernels) {
    CUfunction f = nullptr;
    const CUresult r = cu.cuModuleGetFunction(&f, module_, k.symbol.c_str());
    if (r != CUDA_SUCCESS)
      throw CudaError(dir + "/" + module_file_ + ": no kernel '" + k.symbol + "' (kernel '" +
                      k.name + "'): " + cu.describe(r));
    if (k.shared_bytes > max_shared)
      throw CudaError(dir + ": kernel '" + k.name + "' needs " +
                      std::to_string(k.shared_bytes) + " bytes of shared memory; " +
                      device_.name + " allows " + std::to_string(max_shared) + " per block");
    if (k.shared_bytes > kDefaultSharedBytes)
      CU_CALL(cuFuncSetAttribute, f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
              static_cast<int>(k.shared_bytes));
    functions_.push_back(f);
  }
}

void CudaExecutor::upload_weights(const Bundle &bundle) {
  weights_.clear();
  for (size_t id = 0; id < manifest_.buffers.size(); ++id) {
    const Buffer &b = manifest_.buffers[id];
    if (b.kind != BufferKind::Weight)
      continue;
    const size_t bytes = b.byte_size(Symbols{}, static_cast<int>(id));
    DeviceBuffer &d = weights_.emplace_back(bytes);
    if (bytes > 0)
      CU_CALL(cuMemcpyHtoDAsync_v2, d.address(), bundle.weight(static_cast<int>(id)), bytes,
              stream_);
    addresses_[id] = d.address();
    weight_bytes_ += static_cast<int64_t>(bytes);
  }
  // The bundle's host copies go when the constructor returns.
  CU_CALL(cuStreamSynchronize, stream_);
}

KvCacheSpec CudaExecutor::kv_cache_spec() const {
  if (!manifest_.kv_cache)
    throw std::logic_error(bundle_dir_ + ": the bundle has no KV cache");
  KvCacheSpec spec;
  spec.block_size = static_cast<int32_t>(manifest_.kv_cache->block_size);
  spec.bytes_per_token = manifest_.kv_cache->bytes_per_token;
  spec.dtype = dtype_name(manifest_.kv_cache->dtype);
  return spec;
}

void CudaExecutor::allocate_kv_cache(int32_t num_blocks) {
  if (!launched_.empty())
    throw std::logic_error("allocate_kv_cache() while a step is launched");
  if (num_blocks < 1)
    throw std::invalid_argument("KV cache: " + std::to_string(num_blocks) +
                                " blocks, need at least 1");
  const int64_t block_size = manifest_.kv_cache ? manifest_.kv_cache->block_size : 1;
  const int64_t pool_blocks = int64_t{num_blocks} + (step_ && options_.cuda_graphs ? 1 : 0);
  // Slots are int32 in the step contract, the sink block's included.
  if (pool_blocks * block_size > std::numeric_limits<int32_t>::max())
    throw std::invalid_argument("KV cache: " + std::to_string(num_blocks) + " blocks of " +
                                std::to_string(block_size) + " slots exceed int32 slot ids");
  make_current();
  drop_graphs(); // they bind the old pools
  kv_cache_.clear();
  num_kv_blocks_ = 0;
  pool_blocks_ = 0;
  Symbols symbols;
  symbols.NB = pool_blocks;
  for (size_t id = 0; id < manifest_.buffers.size(); ++id) {
    const Buffer &b = manifest_.buffers[id];
    if (b.kind != BufferKind::KvCache)
      continue;
    DeviceBuffer &d = kv_cache_.emplace_back(b.byte_size(symbols, static_cast<int>(id)));
    if (d.size() > 0)
      CU_CALL(cuMemsetD8Async, d.address(), 0, d.size(), stream_);
    addresses_[id] = d.address();
  }
  CU_CALL(cuStreamSynchronize, stream_);
  num_kv_blocks_ = num_blocks;
  pool_blocks_ = pool_blocks;
}

const EntryPoint &CudaExecutor::entry(std::string_view name) const {
  if (const EntryPoint *e = manifest_.find_entry(name))
    return *e;
  throw std::invalid_argument(bundle_dir_ + ": no entry point '" + std::string(name) + "'");
}

BufferLayout CudaExecutor::layout_of(const std::vector<int> &ids,
                                     const Symbols &symbols) const {
  std::vector<size_t> sizes;
  for (int id : ids)
    sizes.push_back(manifest_.buffers[id].byte_size(symbols, id));
  return BufferLayout::of(std::move(sizes));
}

void CudaExecutor::bind_step(const BufferLayout &arguments, const BufferLayout &scratch) {
  // Sizes grow with T, S and MB, so the memory allocated for the largest
  // step holds any other; a manifest whose sizes shrink would break that.
  if (arguments.total > step_arguments_.size() || scratch.total > step_arena_.size())
    throw std::logic_error("step needs " + std::to_string(arguments.total) +
                           " bytes of arguments and " + std::to_string(scratch.total) +
                           " of activations; the executor holds " +
                           std::to_string(step_arguments_.size()) + " and " +
                           std::to_string(step_arena_.size()) + " for its limits");
  for (size_t i = 0; i < step_->arguments.size(); ++i)
    addresses_[step_->arguments[i]] = step_arguments_.address() + arguments.offsets[i];
  for (size_t i = 0; i < step_scratch_.size(); ++i)
    addresses_[step_scratch_[i]] = step_arena_.address() + scratch.offsets[i];
}

void CudaExecutor::launch(const StepBatch &batch) { enqueue_step(batch, nullptr); }

std::vector<float> CudaExecutor::profile_step(const StepBatch &batch) {
  if (!step_)
    throw std::logic_error(bundle_dir_ + ": the bundle has no step entry point");
  if (!launched_.empty())
    throw std::logic_error("profile_step() while a step is launched");
  make_current();
  const size_t n = step_->dispatches.size();
  Events events(n + 1);
  StepOutput out;
  enqueue_step(batch, &events.get());
  wait(out);
  std::vector<float> ms(n);
  for (size_t i = 0; i < n; ++i)
    ms[i] = events.elapsed_ms(i, i + 1);
  return ms;
}

double CudaExecutor::copy_bandwidth(size_t bytes) {
  make_current();
  DeviceBuffer from(bytes), to(bytes);
  CU_CALL(cuMemsetD8Async, from.address(), 1, bytes, stream_);
  CU_CALL(cuMemcpyDtoDAsync_v2, to.address(), from.address(), bytes, stream_); // warm-up
  constexpr int kCopies = 10;
  Events events(2);
  CU_CALL(cuEventRecord, events.get()[0], stream_);
  for (int i = 0; i < kCopies; ++i)
    CU_CALL(cuMemcpyDtoDAsync_v2, to.address(), from.address(), bytes, stream_);
  CU_CALL(cuEventRecord, events.get()[1], stream_);
  CU_CALL(cuEventSynchronize, events.get()[1]);
  return 2.0 * static_cast<double>(bytes) * kCopies / (events.elapsed_ms(0, 1) * 1e-3);
}

void CudaExecutor::enqueue_step(const StepBatch &batch, const std::vector<CUevent> *events) {
  if (!step_)
    throw std::logic_error(bundle_dir_ + ": the bundle has no step entry point");
  if (num_kv_blocks_ == 0)
    throw std::logic_error("launch() before allocate_kv_cache()");
  if (launched_.size() == 2)
    throw std::logic_error("launch(): two steps are launched already");
  const Clock::time_point start = Clock::now();
  check_step_batch(batch, manifest_.step_bounds(num_kv_blocks_));
  check_deferred_tokens(batch, previous_num_seqs_);
  const StepLimits &l = options_.limits;
  if (batch.num_tokens > l.max_tokens || batch.num_seqs > l.max_seqs ||
      batch.max_blocks_per_seq > l.max_blocks_per_seq)
    throw std::invalid_argument(
        "step batch: T = " + std::to_string(batch.num_tokens) + ", S = " +
        std::to_string(batch.num_seqs) + ", MB = " + std::to_string(batch.max_blocks_per_seq) +
        " exceeds the CUDA executor's limits T <= " + std::to_string(l.max_tokens) +
        ", S <= " + std::to_string(l.max_seqs) + ", MB <= " +
        std::to_string(l.max_blocks_per_seq));
  make_current();

  // A graph replays the sizes it was captured with: decode steps are padded
  // to a bucket of sequences, their logit entries and mask rows to buckets
  // of their own, and each combination has its graph.
  const int32_t bucket = options_.cuda_graphs && !events && is_decode_only(batch)
                             ? decode_bucket(batch.num_seqs)
                             : 0;
  StepBatch padded;
  GraphKey key{bucket, 0, 0};
  if (bucket) {
    padded = pad_decode_batch(batch, bucket, l.max_blocks_per_seq,
                              {num_kv_blocks_, static_cast<int32_t>(kv_cache_spec().block_size)});
    const int32_t vocab_size = static_cast<int32_t>(manifest_.step_bounds(0).vocab_size);
    const auto mask_rows =
        static_cast<int64_t>(batch.token_mask.size()) / token_mask_words(vocab_size);
    key.logit_entries = logit_entries_bucket(static_cast<int64_t>(batch.penalty_tokens.size()),
                                             max_logit_entries_);
    key.mask_rows = mask_rows_bucket(mask_rows, l.max_seqs);
    pad_logit_entries(padded, key.logit_entries, key.mask_rows, vocab_size);
  }
  const StepBatch &run = bucket ? padded : batch;
  const Symbols symbols = step_symbols(run, pool_blocks_);

  LaunchedStep step{};
  step.buffers = static_cast<int>(num_launches_ % 2);
  step.events = static_cast<int>(num_launches_ % kStepEventPairs);
  step.after_another = num_launches_ > 0;
  step.timed = !events;
  step.num_seqs = batch.num_seqs;
  step.logprobs = wants_logprobs(batch);
  const CUevent started = step_events_[2 * step.events];
  const CUevent ended = step_events_[2 * step.events + 1];

  // The step's arrays: packed into pinned memory, uploaded with one copy.
  // The stream orders the upload after the step before, which reads the
  // same device memory.
  const BufferLayout arguments = layout_of(step_->arguments, symbols);
  const BufferLayout scratch = layout_of(step_scratch_, symbols);
  bind_step(arguments, scratch);
  void *staging = staging_[step.buffers].data();
  pack_arrays(arguments, step_argument_data(run).data(), staging);
  const Clock::time_point prepared = Clock::now();
  CU_CALL(cuEventRecord, started, stream_);
  if (arguments.total > 0)
    CU_CALL(cuMemcpyHtoDAsync_v2, step_arguments_.address(), staging, arguments.total, stream_);
  // Deferred tokens, one copy per run of consecutive tokens taken from
  // consecutive rows. The step before's results are still in the arena:
  // only this step's kernels, queued behind the copies, overwrite them.
  const CUdeviceptr token_ids = addresses_[step_->arguments[kTokenIdsArgument]];
  const std::vector<DeferredToken> &deferred = batch.deferred_tokens;
  for (size_t i = 0; i < deferred.size();) {
    size_t n = 1;
    while (i + n < deferred.size() &&
           deferred[i + n].token_index == deferred[i].token_index + int32_t(n) &&
           deferred[i + n].previous_row == deferred[i].previous_row + int32_t(n))
      ++n;
    CU_CALL(cuMemcpyDtoDAsync_v2, token_ids + sizeof(int32_t) * deferred[i].token_index,
            previous_next_tokens_ + sizeof(int32_t) * deferred[i].previous_row,
            sizeof(int32_t) * n, stream_);
    i += n;
  }

  if (!bucket) {
    launch(*step_, symbols, events);
  } else if (auto graph = graphs_.find(key); graph != graphs_.end()) {
    CU_CALL(cuGraphLaunch, graph->second, stream_);
  } else {
    // A bucket's first step runs uncaptured, which also loads every kernel
    // before the capture; later steps of the bucket replay the graph.
    launch(*step_, symbols);
    graphs_.emplace(key, capture_step(symbols));
  }

  // Only the real sequences' results: the first rows of each.
  // The log-prob results (abi::kStepResults after next_tokens) only when a
  // sequence asked for them.
  const Symbols real = step_symbols(batch, pool_blocks_);
  step.results = layout_of(step_->results, real);
  auto *host = static_cast<uint8_t *>(results_[step.buffers].data());
  for (size_t i = 0; i < (step.logprobs ? step_->results.size() : 1); ++i)
    if (step.results.sizes[i] > 0)
      CU_CALL(cuMemcpyDtoHAsync_v2, host + step.results.offsets[i],
              addresses_[step_->results[i]], step.results.sizes[i], stream_);
  CU_CALL(cuEventRecord, ended, stream_);
  step.next_tokens = addresses_[step_->results[0]];
  step.prepare_s = seconds_between(start, prepared);
  step.enqueue_s = seconds_between(prepared, Clock::now());
  launched_.push_back(step);
  ++num_launches_;
  previous_next_tokens_ = step.next_tokens;
  previous_num_seqs_ = batch.num_seqs;
}

void CudaExecutor::wait(StepOutput &out) {
  if (launched_.empty())
    throw std::logic_error("wait(): no step is launched");
  const LaunchedStep step = launched_.front();
  launched_.pop_front();
  make_current();
  const Clock::time_point start = Clock::now();
  CU_CALL(cuEventSynchronize, step_events_[2 * step.events + 1]);
  const Clock::time_point done = Clock::now();
  const size_t S = static_cast<size_t>(step.num_seqs);
  const auto *host = static_cast<const uint8_t *>(results_[step.buffers].data());
  std::array<const void *, abi::kNumStepResults> results{};
  for (size_t i = 0; i < results.size(); ++i)
    results[i] = i < step.results.offsets.size() ? host + step.results.offsets[i] : nullptr;
  read_step_results(results.data(), S, step.logprobs, out);
  // The GPU's idle time: from the end of the step before to this one's
  // start, both recorded on the stream. That pair is not reused until the
  // step after the next is launched.
  out.idle_seconds_before.reset();
  if (step.after_another) {
    const int before = (step.events + kStepEventPairs - 1) % kStepEventPairs;
    float ms = 0;
    CU_CALL(cuEventElapsedTime_v2, &ms, step_events_[2 * before + 1],
            step_events_[2 * step.events]);
    out.idle_seconds_before = std::max(0.0, ms * 1e-3);
  }
  if (!step.timed)
    return;
  ++host_timing_.steps;
  host_timing_.prepare_s += step.prepare_s;
  host_timing_.enqueue_s += step.enqueue_s;
  host_timing_.wait_s += seconds_between(start, done);
  host_timing_.results_s += seconds_between(done, Clock::now());
}

std::vector<HostTensor> CudaExecutor::run_entry(std::string_view name, Symbols symbols,
                                                const std::vector<HostTensor> &inputs) {
  const EntryPoint &e = entry(name);
  if (!launched_.empty())
    throw std::logic_error("run_entry() while a step is launched");
  symbols.NB = pool_blocks_;
  check_entry_inputs(manifest_, e, symbols, inputs, num_kv_blocks_ > 0);
  make_current();

  // Memory of this call only: run_entry is for tests and tools, not serving.
  const BufferLayout arguments = layout_of(e.arguments, symbols);
  std::vector<const void *> sources;
  for (const HostTensor &in : inputs)
    sources.push_back(in.data.data());
  std::vector<uint8_t> staging(arguments.total);
  pack_arrays(arguments, sources.data(), staging.data());
  DeviceBuffer argument_memory(arguments.total);
  if (arguments.total > 0)
    CU_CALL(cuMemcpyHtoDAsync_v2, argument_memory.address(), staging.data(), arguments.total,
            stream_);
  const std::vector<int> scratch_ids = manifest_.scratch_buffers(e);
  const BufferLayout scratch = layout_of(scratch_ids, symbols);
  DeviceBuffer arena(scratch.total);
  for (size_t i = 0; i < e.arguments.size(); ++i)
    addresses_[e.arguments[i]] = argument_memory.address() + arguments.offsets[i];
  for (size_t i = 0; i < scratch_ids.size(); ++i)
    addresses_[scratch_ids[i]] = arena.address() + scratch.offsets[i];

  launch(e, symbols);

  std::vector<HostTensor> results;
  for (int id : e.results) {
    HostTensor &r = results.emplace_back();
    r.dtype = manifest_.buffers[id].dtype;
    r.shape = buffer_shape(manifest_, id, symbols);
    r.data.resize(manifest_.buffers[id].byte_size(symbols, id));
    if (!r.data.empty())
      CU_CALL(cuMemcpyDtoHAsync_v2, r.data.data(), addresses_[id], r.data.size(), stream_);
  }
  CU_CALL(cuStreamSynchronize, stream_);
  return results;
}

CUgraphExec CudaExecutor::capture_step(const Symbols &symbols) {
  // The bucket's symbols always give the same layouts, so the pointers and
  // push constants the graph records stay right for every replay.
  const CudaDriver &cu = cuda_driver();
  CU_CALL(cuStreamBeginCapture_v2, stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  CUgraph graph = nullptr;
  try {
    launch(*step_, symbols);
  } catch (...) {
    cu.cuStreamEndCapture(stream_, &graph); // leaves capture mode
    if (graph)
      cu.cuGraphDestroy(graph);
    throw;
  }
  CU_CALL(cuStreamEndCapture, stream_, &graph);
  CUgraphExec exec = nullptr;
  const CUresult r = cu.cuGraphInstantiateWithFlags(&exec, graph, 0);
  cu.cuGraphDestroy(graph);
  cu.check(r, "cuGraphInstantiateWithFlags");
  return exec;
}

void CudaExecutor::launch(const EntryPoint &e, const Symbols &symbols,
                          const std::vector<CUevent> *events) {
  static constexpr int64_t kMaxGrid[3] = {std::numeric_limits<int32_t>::max(), 65535, 65535};
  for (size_t i = 0; i < e.dispatches.size(); ++i) {
    const Dispatch &d = e.dispatches[i];
    const Kernel &k = manifest_.kernels[d.kernel];
    if (events)
      CU_CALL(cuEventRecord, (*events)[i], stream_);
    try {
      int64_t grid[3];
      bool empty = false;
      for (int axis = 0; axis < 3; ++axis) {
        grid[axis] = d.grid[axis].evaluate(symbols);
        if (grid[axis] < 0 || grid[axis] > kMaxGrid[axis])
          throw std::runtime_error("grid " + std::string(1, "xyz"[axis]) + " = " +
                                   std::to_string(grid[axis]) + " is outside [0, " +
                                   std::to_string(kMaxGrid[axis]) + "]");
        empty |= grid[axis] == 0;
      }
      if (empty)
        continue;
      push_constants_.clear();
      for (const Expression &c : d.push_constants)
        push_constants_.push_back(c.evaluate(symbols));
      params_.assign(d.bindings, addresses_, push_constants_);
      // A kernel that waits for its predecessors itself may start while
      // they finish: its launch and prologue overlap their tail.
      CUlaunchAttribute overlap{};
      overlap.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      overlap.value.programmaticStreamSerializationAllowed = 1;
      CUlaunchConfig config{};
      config.gridDimX = static_cast<unsigned>(grid[0]);
      config.gridDimY = static_cast<unsigned>(grid[1]);
      config.gridDimZ = static_cast<unsigned>(grid[2]);
      config.blockDimX = static_cast<unsigned>(k.block[0]);
      config.blockDimY = static_cast<unsigned>(k.block[1]);
      config.blockDimZ = static_cast<unsigned>(k.block[2]);
      config.sharedMemBytes = static_cast<unsigned>(k.shared_bytes);
      config.hStream = stream_;
      config.attrs = &overlap;
      config.numAttrs = k.programmatic_launch ? 1 : 0;
      CU_CALL(cuLaunchKernelEx, &config, functions_[d.kernel], params_.pointers(), nullptr);
    } catch (const std::exception &ex) {
      throw std::runtime_error("entry point '" + e.name + "' dispatch " + std::to_string(i) +
                               " (kernel '" + k.name + "'): " + ex.what());
    }
  }
  if (events)
    CU_CALL(cuEventRecord, events->back(), stream_);
}

void CudaExecutor::drop_graphs() {
  for (auto &[key, exec] : graphs_)
    cuda_driver().cuGraphExecDestroy(exec);
  graphs_.clear();
}

int64_t CudaExecutor::free_memory() const {
  make_current();
  size_t free = 0, total = 0;
  CU_CALL(cuMemGetInfo_v2, &free, &total);
  return static_cast<int64_t>(free);
}

} // namespace llmserve::cuda
