// The executor for a bundle on the device its target names: the CPU
// executor for target "cpu", the CUDA executor for "sm_90". `llmrun serve`,
// `generate` and `bench offline` load models through this.
#ifndef LLMSERVE_SERVER_MODEL_EXECUTOR_H
#define LLMSERVE_SERVER_MODEL_EXECUTOR_H

#include "core/engine.h"
#include "core/executor.h"
#include "bundle/manifest.h"
#include "server/serve_options.h"

#include <memory>
#include <string>

namespace llmserve {

enum class Device { Cpu, Cuda };

// The device a bundle of `target` runs on: `requested` ("cpu", "cuda", or
// empty for the bundle's own). Throws std::invalid_argument when they do not
// match: "m.llmb targets sm_90 (NVIDIA GPUs): it cannot run on --device cpu;
// compile the model without --target for the CPU".
Device select_device(const std::string &bundle_dir, const std::string &target,
                     const std::string &requested);

struct ModelExecutor {
  Device device = Device::Cpu;
  std::unique_ptr<Executor> executor;
  Manifest manifest;
  std::string weights_source;
  // One line for start-up: "CPU, 16 threads", or the GPU's name, compute
  // capability, free memory and which kernels file was loaded.
  std::string description;
  KvMemory kv_memory; // what the KV cache is sized from
};

// Loads options.bundle_dir, whose manifest is `manifest` (weights from
// options.weights_dir when given), on the device select_device gives; the
// device is settled before any weight is read. The CUDA executor allocates
// its step memory for `engine` (max_num_batched_tokens, max_num_seqs,
// max_model_len); its KV memory is the device memory left free after that.
ModelExecutor load_model_executor(const ServeOptions &options, const Manifest &manifest,
                                  const EngineConfig &engine);

} // namespace llmserve

#endif // LLMSERVE_SERVER_MODEL_EXECUTOR_H
