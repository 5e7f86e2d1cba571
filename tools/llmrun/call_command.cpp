// llmrun call: runs one entry point of a bundle on tensors read from .npy
// files and writes its results as .npy files, so a test in Python can check a
// compiled op against a reference (torch) without linking the runtime.
#include "commands.h"

#include "cpu/cpu_executor.h"
#include "bundle/npy.h"
#include "cuda/cuda_executor.h"
#include "model/convert.h"
#include "server/model_executor.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace llmrun {
namespace {

const char kUsage[] =
    "usage: llmrun call <bundle> --entry NAME --input a.npy [b.npy ...]\n"
    "                   --output-dir DIR [--weights DIR] [--sym T=7 ...]\n"
    "                   [--threads N] [--device cpu|cuda]\n"
    "  Runs entry point NAME on the inputs (one per argument, in order) and\n"
    "  writes result_0.npy, result_1.npy, ... to DIR. A float32 input of an\n"
    "  f16 or bf16 argument is rounded to it; bf16 results are written as\n"
    "  float32 (numpy has no bf16), exactly.\n"
    "  --weights DIR  checkpoint directory to read the weights from\n"
    "  --sym S=N      value of a shape symbol (T, S, MB); NB=N allocates a KV\n"
    "                 cache of N blocks\n"
    "  --threads N    worker threads including the caller (default: all)\n"
    "  --device D     cpu or cuda (default: the bundle's target)\n";

int64_t parse_int(const std::string &text, const char *what) {
  size_t end = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &end);
  } catch (const std::exception &) {
    end = 0;
  }
  if (end == 0 || end != text.size())
    throw std::invalid_argument(std::string(what) + ": '" + text + "' is not an integer");
  return value;
}

// `t` as `dtype`, rounded to nearest even (convert_tensor's conversion).
llmserve::HostTensor converted(const llmserve::HostTensor &t, llmserve::DType dtype) {
  llmserve::HostTensor out{dtype, t.shape, {}};
  int64_t numel = 1;
  for (int64_t d : t.shape)
    numel *= d;
  out.data.resize(static_cast<size_t>(numel) * llmserve::dtype_size(dtype));
  llmserve::TensorView view;
  view.name = "input";
  view.dtype = t.dtype;
  view.shape = t.shape;
  view.data = t.data.data();
  view.nbytes = t.data.size();
  llmserve::convert_tensor(view, dtype, /*transpose=*/false, out.data.data());
  return out;
}

bool is_narrow_float(llmserve::DType dtype) {
  return dtype == llmserve::DType::F16 || dtype == llmserve::DType::BF16;
}

} // namespace

int call_command(int argc, char **argv) {
  std::string bundle_dir, entry, output_dir, weights, device;
  std::vector<std::string> inputs;
  llmserve::Symbols symbols;
  int64_t kv_blocks = 0, threads = 0;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--entry") && has_value) {
      entry = argv[++i];
    } else if (!std::strcmp(argv[i], "--input") && has_value) {
      // Every following argument up to the next option is an input.
      while (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0)
        inputs.push_back(argv[++i]);
    } else if (!std::strcmp(argv[i], "--output-dir") && has_value) {
      output_dir = argv[++i];
    } else if (!std::strcmp(argv[i], "--weights") && has_value) {
      weights = argv[++i];
    } else if (!std::strcmp(argv[i], "--sym") && has_value) {
      const std::string binding = argv[++i];
      const size_t eq = binding.find('=');
      if (eq == std::string::npos)
        throw std::invalid_argument("--sym " + binding + ": expected NAME=VALUE");
      const std::string name = binding.substr(0, eq);
      const int64_t value = parse_int(binding.substr(eq + 1), "--sym");
      if (name == "NB")
        kv_blocks = value;
      else
        symbols.set(name, value);
    } else if (!std::strcmp(argv[i], "--device") && has_value) {
      device = argv[++i];
    } else if (!std::strcmp(argv[i], "--threads") && has_value) {
      threads = parse_int(argv[++i], "--threads");
    } else if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (argv[i][0] != '-' && bundle_dir.empty()) {
      bundle_dir = argv[i];
    } else {
      std::fprintf(stderr, "llmrun call: unknown argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
  }
  if (bundle_dir.empty() || entry.empty() || output_dir.empty()) {
    std::fprintf(stderr, "llmrun call: <bundle>, --entry and --output-dir are required\n%s",
                 kUsage);
    return 2;
  }
  if (threads < 0 || threads > INT32_MAX)
    throw std::invalid_argument("--threads " + std::to_string(threads) + " is out of range");
  if (kv_blocks < 0 || kv_blocks > INT32_MAX)
    throw std::invalid_argument("--sym NB=" + std::to_string(kv_blocks) + " is out of range");

  std::vector<llmserve::HostTensor> tensors;
  for (const std::string &path : inputs)
    tensors.push_back(llmserve::read_npy(path));
  const llmserve::Manifest manifest = llmserve::Bundle::load_manifest(bundle_dir);
  if (const llmserve::EntryPoint *e = manifest.find_entry(entry))
    for (size_t i = 0; i < tensors.size() && i < e->arguments.size(); ++i) {
      const llmserve::DType want = manifest.buffers[e->arguments[i]].dtype;
      if (tensors[i].dtype == llmserve::DType::F32 && is_narrow_float(want))
        tensors[i] = converted(tensors[i], want);
    }
  std::vector<llmserve::HostTensor> results;
  if (llmserve::select_device(bundle_dir, manifest.target, device) == llmserve::Device::Cpu) {
    llmserve::CpuExecutor executor(llmserve::Bundle(bundle_dir, weights),
                                   static_cast<int>(threads));
    if (kv_blocks > 0)
      executor.allocate_kv_cache(static_cast<int32_t>(kv_blocks));
    results = executor.run_entry(entry, symbols, tensors);
  } else {
    // The step's limits size memory for `execute`, which call never runs;
    // without graphs the KV pools hold NB blocks, as on the CPU.
    llmserve::cuda::CudaExecutorOptions options;
    options.limits = {1, 1, 1};
    options.cuda_graphs = false;
    llmserve::cuda::CudaExecutor executor(llmserve::Bundle(bundle_dir, weights), options);
    if (kv_blocks > 0)
      executor.allocate_kv_cache(static_cast<int32_t>(kv_blocks));
    results = executor.run_entry(entry, symbols, tensors);
  }

  std::filesystem::create_directories(output_dir);
  for (llmserve::HostTensor &r : results)
    if (r.dtype == llmserve::DType::BF16)
      r = converted(r, llmserve::DType::F32);
  for (size_t i = 0; i < results.size(); ++i)
    llmserve::write_npy(
        (std::filesystem::path(output_dir) / ("result_" + std::to_string(i) + ".npy")).string(),
        results[i]);
  return 0;
}

} // namespace llmrun
