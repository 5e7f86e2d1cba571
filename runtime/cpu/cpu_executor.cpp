#include "cpu/cpu_executor.h"

#include "bundle/entry_inputs.h"
#include "bundle/step_batch.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace llmserve {

namespace {

size_t align_up(size_t n) {
  return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

Bundle cpu_bundle(Bundle bundle) {
  const std::string &target = bundle.manifest().target;
  if (target != "cpu")
    throw std::invalid_argument(bundle.dir() + ": the bundle targets " + target +
                                ", not the CPU");
  return bundle;
}

} // namespace

CpuExecutor::CpuExecutor(Bundle bundle, int num_threads)
    : bundle_(cpu_bundle(std::move(bundle))), kernels_(bundle_), pool_(num_threads) {
  const Manifest &m = bundle_.manifest();
  buffers_.assign(m.buffers.size(), nullptr);
  for (size_t id = 0; id < m.buffers.size(); ++id)
    buffers_[id] = bundle_.weight(static_cast<int>(id));
  for (const EntryPoint &e : m.entry_points)
    scratch_buffers_.push_back(m.scratch_buffers(e));
  step_thread_ = std::thread([this] { step_loop(); });
}

CpuExecutor::~CpuExecutor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  step_thread_.join();
}

KvCacheSpec CpuExecutor::kv_cache_spec() const {
  const std::optional<KvCacheLayout> &kv = bundle_.manifest().kv_cache;
  if (!kv)
    throw std::logic_error(bundle_.dir() + ": the bundle has no KV cache");
  KvCacheSpec spec;
  spec.block_size = static_cast<int32_t>(kv->block_size);
  spec.bytes_per_token = kv->bytes_per_token;
  spec.dtype = dtype_name(kv->dtype);
  return spec;
}

void CpuExecutor::allocate_kv_cache(int32_t num_blocks) {
  check_idle("allocate_kv_cache");
  if (num_blocks < 1)
    throw std::invalid_argument("KV cache: " + std::to_string(num_blocks) +
                                " blocks, need at least 1");
  const Manifest &m = bundle_.manifest();
  kv_cache_.clear();
  Symbols symbols;
  symbols.NB = num_blocks;
  for (size_t id = 0; id < m.buffers.size(); ++id) {
    if (m.buffers[id].kind != BufferKind::KvCache)
      continue;
    kv_cache_.emplace_back(m.buffers[id].byte_size(symbols, static_cast<int>(id)));
    buffers_[id] = kv_cache_.back().data();
  }
  num_kv_blocks_ = num_blocks;
}

const EntryPoint &CpuExecutor::entry(std::string_view name) const {
  if (const EntryPoint *e = bundle_.manifest().find_entry(name))
    return *e;
  throw std::invalid_argument(bundle_.dir() + ": no entry point '" +
                              std::string(name) + "'");
}

void CpuExecutor::check_idle(const char *caller) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!launched_.empty())
    throw std::logic_error(std::string(caller) + "() while a step is launched");
}

void CpuExecutor::check_batch(const char *caller, std::string_view entry_name,
                              const StepBatch &batch, int64_t previous_num_seqs) const {
  if (num_kv_blocks_ == 0)
    throw std::logic_error(std::string(caller) + "() before allocate_kv_cache()");
  entry(entry_name);
  check_step_batch(batch, bundle_.manifest().step_bounds(num_kv_blocks_));
  check_deferred_tokens(batch, previous_num_seqs);
}

const EntryPoint &CpuExecutor::run_step_entry(std::string_view name, const StepBatch &batch,
                                              const int32_t *token_ids,
                                              std::vector<float> *dispatch_ms) {
  const EntryPoint &e = entry(name);
  const Symbols symbols = step_symbols(batch, num_kv_blocks_);
  // Kernels only read arguments, so they use the batch's arrays in place.
  auto arguments = step_argument_data(batch);
  arguments[kTokenIdsArgument] = token_ids;
  run(e, symbols, arguments.data(), dispatch_ms);
  return e;
}

void CpuExecutor::launch(const StepBatch &batch) {
  check_batch("launch", "step", batch, last_launched_num_seqs_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (launched_.size() == 2)
      throw std::logic_error("launch(): two steps are launched already");
    launched_.push_back({&batch, {}, nullptr, false});
  }
  last_launched_num_seqs_ = batch.num_seqs;
  changed_.notify_all();
}

void CpuExecutor::wait(StepOutput &out) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (launched_.empty())
    throw std::logic_error("wait(): no step is launched");
  changed_.wait(lock, [&] { return launched_.front().done; });
  LaunchedStep step = std::move(launched_.front());
  launched_.pop_front();
  lock.unlock();
  if (step.error)
    std::rethrow_exception(step.error);
  out = std::move(step.out);
}

void CpuExecutor::step_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // The oldest step not yet run; steps before it are done.
    auto next = std::find_if(launched_.begin(), launched_.end(),
                             [](const LaunchedStep &s) { return !s.done; });
    if (next == launched_.end()) {
      if (stopping_)
        return;
      changed_.wait(lock);
      continue;
    }
    // The deque only grows at the back while a step runs, and its front is
    // taken only once done, so `step` stays put.
    LaunchedStep &step = *next;
    lock.unlock();
    run_launched(step);
    lock.lock();
    step.done = true;
    changed_.notify_all();
  }
}

void CpuExecutor::run_launched(LaunchedStep &step) {
  const StepBatch &batch = *step.batch;
  const auto start = std::chrono::steady_clock::now();
  if (previous_end_)
    step.out.idle_seconds_before =
        std::chrono::duration<double>(start - *previous_end_).count();
  const size_t S = static_cast<size_t>(batch.num_seqs);
  try {
    const int32_t *token_ids = batch.token_ids.data();
    if (!batch.deferred_tokens.empty()) {
      resolved_token_ids_ = batch.token_ids; // reuses the buffer of the step before
      fill_deferred_tokens(batch, previous_next_tokens_, resolved_token_ids_);
      token_ids = resolved_token_ids_.data();
    }
    const EntryPoint &e = run_step_entry("step", batch, token_ids);
    std::array<const void *, abi::kNumStepResults> results{};
    for (size_t i = 0; i < results.size(); ++i)
      results[i] = i < e.results.size() ? buffers_[e.results[i]] : nullptr;
    read_step_results(results.data(), S, wants_logprobs(batch), step.out);
    previous_next_tokens_ = step.out.next_tokens;
  } catch (...) {
    step.error = std::current_exception();
    // A step that takes tokens from this one runs on token 0 for them; its
    // sequences are ended by this failure.
    previous_next_tokens_.assign(S, 0);
  }
  previous_end_ = std::chrono::steady_clock::now();
}

std::vector<float> CpuExecutor::profile_step(const StepBatch &batch) {
  check_idle("profile_step");
  check_batch("profile_step", "step", batch, /*previous_num_seqs=*/0);
  std::vector<float> ms;
  run_step_entry("step", batch, batch.token_ids.data(), &ms);
  return ms;
}

std::vector<float> CpuExecutor::logits(const StepBatch &batch) {
  check_idle("logits");
  check_batch("logits", "logits", batch, /*previous_num_seqs=*/0);
  const EntryPoint &e = run_step_entry("logits", batch, batch.token_ids.data());
  const auto *logits = static_cast<const float *>(buffers_[e.results.at(0)]);
  return std::vector<float>(
      logits, logits + static_cast<size_t>(batch.num_seqs) * bundle_.manifest().model->vocab_size);
}

std::vector<HostTensor>
CpuExecutor::run_entry(std::string_view name, Symbols symbols,
                       const std::vector<HostTensor> &inputs) {
  const EntryPoint &e = entry(name);
  const Manifest &m = bundle_.manifest();
  check_idle("run_entry");
  symbols.NB = num_kv_blocks_;
  check_entry_inputs(m, e, symbols, inputs, num_kv_blocks_ > 0);
  std::vector<const void *> arguments;
  for (const HostTensor &in : inputs)
    arguments.push_back(in.data.data());

  run(e, symbols, arguments.data());

  std::vector<HostTensor> results;
  for (int id : e.results) {
    HostTensor &r = results.emplace_back();
    r.dtype = m.buffers[id].dtype;
    r.shape = buffer_shape(m, id, symbols);
    const auto *p = static_cast<const uint8_t *>(buffers_[id]);
    r.data.assign(p, p + m.buffers[id].byte_size(symbols, id));
  }
  return results;
}

void CpuExecutor::run(const EntryPoint &e, const Symbols &symbols,
                      const void *const *arguments, std::vector<float> *dispatch_ms) {
  const Manifest &m = bundle_.manifest();
  for (size_t i = 0; i < e.arguments.size(); ++i)
    buffers_[e.arguments[i]] = const_cast<void *>(arguments[i]);

  // Lay the activations and results out back to back in the arena.
  const std::vector<int> &scratch = scratch_buffers_[&e - m.entry_points.data()];
  size_t arena_size = 0;
  for (int id : scratch)
    arena_size += align_up(m.buffers[id].byte_size(symbols, id));
  if (arena_size > arena_.size())
    arena_ = AlignedBuffer(arena_size);
  size_t offset = 0;
  for (int id : scratch) {
    buffers_[id] = static_cast<uint8_t *>(arena_.data()) + offset;
    offset += align_up(m.buffers[id].byte_size(symbols, id));
  }

  for (size_t i = 0; i < e.dispatches.size(); ++i) {
    const Dispatch &d = e.dispatches[i];
    try {
      bindings_.clear();
      for (int id : d.bindings)
        bindings_.push_back(buffers_[id]);
      push_constants_.clear();
      for (const Expression &c : d.push_constants)
        push_constants_.push_back(c.evaluate(symbols));
      KernelLaunch launch;
      launch.kernel = kernels_.kernel(d.kernel);
      launch.bindings = bindings_.data();
      launch.push_constants = push_constants_.data();
      for (int axis = 0; axis < 3; ++axis)
        launch.grid[axis] = d.grid[axis].evaluate(symbols);
      const auto start = std::chrono::steady_clock::now();
      pool_.run(launch);
      if (dispatch_ms)
        dispatch_ms->push_back(std::chrono::duration<float, std::milli>(
                                   std::chrono::steady_clock::now() - start)
                                   .count());
    } catch (const std::exception &ex) { // an expression or the grid is bad
      throw std::runtime_error("entry point '" + e.name + "' dispatch " +
                               std::to_string(i) + " (kernel '" +
                               m.kernels[d.kernel].name + "'): " + ex.what());
    }
  }
}

} // namespace llmserve
