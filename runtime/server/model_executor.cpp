#include "server/model_executor.h"

#include "cpu/cpu_executor.h"
#include "cuda/cuda_executor.h"
#include "llmserve/abi.h"

#include <cstdio>
#include <stdexcept>

namespace llmserve {

namespace {

std::string gib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", double(bytes) / double(1 << 30));
  return text;
}

} // namespace

Device select_device(const std::string &bundle_dir, const std::string &target,
                     const std::string &requested) {
  if (!requested.empty() && requested != "cpu" && requested != "cuda")
    throw std::invalid_argument("--device '" + requested + "': expected cpu or cuda");
  const Device native = target == abi::kCudaTarget ? Device::Cuda : Device::Cpu;
  const Device wanted = requested == "cuda" ? Device::Cuda : Device::Cpu;
  if (requested.empty() || wanted == native)
    return native;
  if (native == Device::Cuda)
    throw std::invalid_argument(bundle_dir + " targets " + target +
                                " (NVIDIA GPUs): it cannot run on --device cpu; compile "
                                "the model without --target for the CPU");
  throw std::invalid_argument(bundle_dir + " targets " + target +
                              ": it cannot run on --device cuda; compile the model with "
                              "llmc compile --target " + abi::kCudaTarget);
}

ModelExecutor load_model_executor(const ServeOptions &options, const Manifest &manifest,
                                  const EngineConfig &engine) {
  ModelExecutor m;
  m.device = select_device(options.bundle_dir, manifest.target, options.device);
  Bundle bundle(options.bundle_dir, options.weights_dir);
  m.manifest = bundle.manifest();
  m.weights_source = bundle.weights_source();
  if (m.device == Device::Cpu) {
    auto cpu = std::make_unique<CpuExecutor>(std::move(bundle), options.num_threads);
    m.description = "CPU, " + std::to_string(cpu->num_threads()) + " threads";
    const KernelLibrary &kernels = cpu->kernels();
    if (!kernels.loaded().cpu.empty())
      m.description += ", kernels for " + kernels.loaded().cpu;
    if (!kernels.reason().empty())
      m.description += " (" + kernels.reason() + ")";
    m.kv_memory = host_kv_memory();
    m.executor = std::move(cpu);
    return m;
  }

  cuda::CudaExecutorOptions cuda_options;
  const int64_t block_size = m.manifest.kv_cache ? m.manifest.kv_cache->block_size : 1;
  cuda_options.limits = {engine.max_num_batched_tokens, engine.max_num_seqs,
                         static_cast<int32_t>((engine.max_model_len + block_size - 1) /
                                              block_size)};
  cuda_options.cuda_graphs = options.cuda_graphs;
  auto gpu = std::make_unique<cuda::CudaExecutor>(std::move(bundle), cuda_options);
  const cuda::CudaDeviceInfo &d = gpu->device();
  const int64_t free = gpu->free_memory();
  m.description = "GPU " + std::to_string(d.ordinal) + ": " + d.name +
                  " (compute capability " + std::to_string(d.compute_major) + "." +
                  std::to_string(d.compute_minor) + ", driver CUDA " +
                  std::to_string(d.driver_version / 1000) + "." +
                  std::to_string(d.driver_version % 1000 / 10) + "), " + gib(free) +
                  " free of " + gib(d.total_memory) + " after " + gib(gpu->weight_bytes()) +
                  " of weights; kernels from " + gpu->module_file() +
                  (options.cuda_graphs ? "" : "; CUDA graphs off");
  // Leave a tenth of the free memory for the graphs and the driver.
  m.kv_memory = {free, free / 10 * 9, d.total_memory};
  m.executor = std::move(gpu);
  return m;
}

} // namespace llmserve
