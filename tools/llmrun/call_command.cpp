// llmrun call: runs one entry point of a bundle on tensors read from .npy
// files and writes its results as .npy files, so a test in Python can check a
// compiled op against a reference (torch) without linking the runtime.
#include "commands.h"
#include "options.h"

#include "bundle/npy.h"
#include "cli/command_line.h"
#include "cpu/cpu_executor.h"
#include "cuda/cuda_executor.h"
#include "model/convert.h"
#include "server/model_executor.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace llmrun {
namespace {

struct Options {
  llmserve::ServeOptions model; // the bundle, --weights, --threads, --device
  std::string entry, output_dir;
  std::vector<std::string> inputs;
  std::vector<std::pair<std::string, int64_t>> symbols; // --sym NAME=VALUE
};

// "T=7" as a shape symbol and its value; NB, the KV cache's blocks, must fit
// an int32. Throws std::invalid_argument naming --sym and the binding.
std::pair<std::string, int64_t> symbol_binding(const std::string &binding) {
  auto bad = [&](const std::string &why) {
    return std::invalid_argument("--sym '" + binding + "': " + why);
  };
  const size_t eq = binding.find('=');
  if (eq == std::string::npos)
    throw bad("expected NAME=VALUE");
  const std::string name = binding.substr(0, eq);
  const std::optional<int64_t> parsed = llmserve::cli::to_integer(binding.substr(eq + 1));
  if (!parsed)
    throw bad("not an integer");
  const int64_t value = *parsed;
  if (name == "NB" && (value < 0 || value > INT32_MAX))
    throw bad("NB must be in [0, " + std::to_string(INT32_MAX) + "]");
  return {name, value};
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
  return dtype == llmserve::DType::F16 || dtype == llmserve::DType::BF16 ||
         dtype == llmserve::DType::F8E4M3;
}

int call(const Options &o) {
  const std::string &bundle_dir = o.model.bundle_dir;
  llmserve::Symbols symbols;
  int32_t kv_blocks = 0;
  for (const auto &[name, value] : o.symbols) {
    if (name == "NB")
      kv_blocks = static_cast<int32_t>(value);
    else
      symbols.set(name, value);
  }
  std::vector<llmserve::HostTensor> tensors;
  for (const std::string &path : o.inputs)
    tensors.push_back(llmserve::read_npy(path));
  const llmserve::Manifest manifest = llmserve::Bundle::load_manifest(bundle_dir);
  if (const llmserve::EntryPoint *e = manifest.find_entry(o.entry))
    for (size_t i = 0; i < tensors.size() && i < e->arguments.size(); ++i) {
      const llmserve::DType want = manifest.buffers[e->arguments[i]].dtype;
      if (tensors[i].dtype == llmserve::DType::F32 && is_narrow_float(want))
        tensors[i] = converted(tensors[i], want);
    }
  std::vector<llmserve::HostTensor> results;
  if (llmserve::select_device(bundle_dir, manifest.target, o.model.device) ==
      llmserve::Device::Cpu) {
    llmserve::CpuExecutor executor(llmserve::Bundle(bundle_dir, o.model.weights_dir),
                                   o.model.num_threads);
    if (kv_blocks > 0)
      executor.allocate_kv_cache(kv_blocks);
    results = executor.run_entry(o.entry, symbols, tensors);
  } else {
    // The step's limits size memory for `execute`, which call never runs;
    // without graphs the KV pools hold NB blocks, as on the CPU.
    llmserve::cuda::CudaExecutorOptions options;
    options.limits = {1, 1, 1};
    options.cuda_graphs = false;
    llmserve::cuda::CudaExecutor executor(llmserve::Bundle(bundle_dir, o.model.weights_dir),
                                          options);
    if (kv_blocks > 0)
      executor.allocate_kv_cache(kv_blocks);
    results = executor.run_entry(o.entry, symbols, tensors);
  }

  std::filesystem::create_directories(o.output_dir);
  for (llmserve::HostTensor &r : results)
    if (r.dtype == llmserve::DType::BF16 || r.dtype == llmserve::DType::F8E4M3)
      r = converted(r, llmserve::DType::F32);
  for (size_t i = 0; i < results.size(); ++i)
    llmserve::write_npy(
        (std::filesystem::path(o.output_dir) / ("result_" + std::to_string(i) + ".npy")).string(),
        results[i]);
  return 0;
}

} // namespace

Command add_call_command(CLI::App &llmrun) {
  auto o = std::make_shared<Options>();
  CLI::App *command =
      llmrun.add_subcommand("call", "run one entry point of a bundle on .npy inputs");
  add_model_options(*command, o->model);
  command->add_option("--entry", o->entry, "the entry point")->type_name("NAME")->required();
  command->add_option("--input", o->inputs, "its arguments, in order")->type_name("FILE");
  command->add_option("--output-dir", o->output_dir, "where result_0.npy, result_1.npy, ... go")
      ->type_name("DIR")
      ->required();
  command
      ->add_option_function<std::vector<std::string>>(
          "--sym",
          [o](const std::vector<std::string> &bindings) {
            for (const std::string &binding : bindings)
              o->symbols.push_back(symbol_binding(binding));
          },
          "value of a shape symbol (T, S, MB); NB=N allocates\n"
          "a KV cache of N blocks (repeatable)")
      ->type_name("S=N")
      ->allow_extra_args(false);
  command->footer("A float32 input of an f16, bf16 or f8_e4m3 argument is rounded to it;\n"
                  "bf16 and f8_e4m3 results are written as float32 (numpy has neither),\n"
                  "exactly.");
  return {command, [o] { return call(*o); }};
}

} // namespace llmrun
