// Runs a bundle's `logits` entry point over a sequence of steps sharing one KV
// pool, and prints every step's logits: the end-to-end numerics test compares
// them with an independent torch implementation. With --greedy N it instead
// runs the `step` entry point (the compiled sampler, temperature 0) on one
// prompt and prints the N tokens it generates. A bundle for sm_90 runs on the
// GPU (test/gpu/gpu_checks.py), any other on the CPU.
//
//   llmserve-step-driver <bundle> <steps.json> [--weights DIR]
//   llmserve-step-driver <bundle> --greedy N --prompt 1,2,3
//
// steps.json: {"num_blocks": N, "steps": [{"token_ids": [...], "positions":
// [...], "query_start": [...], "context_len": [...], "block_table": [[...],
// ...], "slot_mapping": [...], "logits_rows": [...]}, ...]}
// Output (stdout): {"logits": [[[f32 x V] x S] x steps]}
#include "cpu/cpu_executor.h"
#include "cuda/cuda_executor.h"
#include "llmserve/abi.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <iostream>

using llmserve::DType;
using llmserve::HostTensor;
using nlohmann::json;

namespace {

template <typename T>
HostTensor tensor(DType dtype, std::vector<int64_t> shape,
                  const std::vector<T> &values) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data.resize(values.size() * sizeof(T));
  if (!values.empty())
    std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

std::vector<HostTensor> contract_inputs(const json &step,
                                        llmserve::Symbols &symbols) {
  auto ints = [&](const char *key) {
    return step.at(key).get<std::vector<int32_t>>();
  };
  std::vector<int32_t> tokens = ints("token_ids");
  std::vector<std::vector<int32_t>> rows =
      step.at("block_table").get<std::vector<std::vector<int32_t>>>();
  symbols.T = static_cast<int64_t>(tokens.size());
  symbols.S = static_cast<int64_t>(rows.size());
  symbols.MB = 0;
  for (const auto &row : rows)
    symbols.MB = std::max<int64_t>(symbols.MB, row.size());
  std::vector<int32_t> table;
  for (auto row : rows) {
    row.resize(symbols.MB, -1);
    table.insert(table.end(), row.begin(), row.end());
  }
  const int64_t T = symbols.T, S = symbols.S;
  std::vector<HostTensor> in;
  in.push_back(tensor(DType::I32, {T}, tokens));
  in.push_back(tensor(DType::I32, {T}, ints("positions")));
  in.push_back(tensor(DType::I32, {S + 1}, ints("query_start")));
  in.push_back(tensor(DType::I32, {S}, ints("context_len")));
  in.push_back(tensor(DType::I32, {S, symbols.MB}, table));
  in.push_back(tensor(DType::I32, {T}, ints("slot_mapping")));
  in.push_back(tensor(DType::I32, {S}, ints("logits_rows")));
  // Greedy sampling parameters: the logits entry point does not sample.
  in.push_back(tensor(DType::F32, {S}, std::vector<float>(S, 0.0f)));
  in.push_back(tensor(DType::F32, {S}, std::vector<float>(S, 1.0f)));
  in.push_back(tensor(DType::I32, {S}, std::vector<int32_t>(S, 0)));
  in.push_back(tensor(DType::F32, {S}, std::vector<float>(S, 0.0f)));
  in.push_back(tensor(DType::I64, {S}, std::vector<int64_t>(S, 0)));
  // No penalties or biases.
  in.push_back(tensor(DType::F32, {S}, std::vector<float>(S, 0.0f)));
  in.push_back(tensor(DType::F32, {S}, std::vector<float>(S, 0.0f)));
  in.push_back(tensor(DType::F32, {S}, std::vector<float>(S, 1.0f)));
  in.push_back(tensor(DType::I32, {S + 1}, std::vector<int32_t>(S + 1, 0)));
  in.push_back(tensor(DType::I32, {0}, std::vector<int32_t>()));
  in.push_back(tensor(DType::I32, {0}, std::vector<int32_t>()));
  in.push_back(tensor(DType::F32, {0}, std::vector<float>()));
  // No masks, no log-probs.
  in.push_back(tensor(DType::I32, {S}, std::vector<int32_t>(S, -1)));
  in.push_back(tensor(DType::I32, {0}, std::vector<int32_t>()));
  in.push_back(tensor(DType::I32, {S}, std::vector<int32_t>(S, -1)));
  return in;
}

// Greedy generation through the `step` entry point: the prompt in one chunk,
// then one token per step, in blocks 0, 1, 2, ... of the pool.
std::vector<int32_t> greedy(llmserve::Executor &executor,
                            std::vector<int32_t> context, int steps) {
  const int32_t block_size = executor.kv_cache_spec().block_size;
  const int32_t blocks =
      static_cast<int32_t>((context.size() + steps) / block_size + 1);
  executor.allocate_kv_cache(blocks);
  std::vector<int32_t> generated;
  size_t done = 0;
  while (static_cast<int>(generated.size()) < steps) {
    llmserve::StepBatch batch;
    batch.num_seqs = 1;
    batch.num_tokens = static_cast<int32_t>(context.size() - done);
    batch.max_blocks_per_seq = blocks;
    for (size_t p = done; p < context.size(); ++p) {
      batch.token_ids.push_back(context[p]);
      batch.positions.push_back(static_cast<int32_t>(p));
      batch.slot_mapping.push_back(static_cast<int32_t>(p));
    }
    batch.query_start = {0, batch.num_tokens};
    batch.context_len = {static_cast<int32_t>(context.size())};
    for (int32_t b = 0; b < blocks; ++b)
      batch.block_table.push_back(b);
    batch.logits_rows = {batch.num_tokens - 1};
    batch.temperature = {0.0f};
    batch.top_p = {1.0f};
    batch.top_k = {0};
    batch.min_p = {0.0f};
    batch.seed = {0};
    batch.presence_penalty = {0.0f};
    batch.frequency_penalty = {0.0f};
    batch.repetition_penalty = {1.0f};
    batch.penalty_start = {0, 0};
    batch.mask_index = {-1};
    batch.num_logprobs = {-1};
    llmserve::StepOutput out;
    executor.execute(batch, out);
    done = context.size();
    context.push_back(out.next_tokens.at(0));
    generated.push_back(out.next_tokens.at(0));
  }
  return generated;
}

std::vector<int32_t> parse_ids(const std::string &text) {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos)
      end = text.size();
    ids.push_back(std::stoi(text.substr(start, end - start)));
    start = end + 1;
  }
  return ids;
}

// Calls `run` with the executor for the bundle's target. The GPU's limits
// cover every step a steps file or a greedy run can make here.
template <typename Run>
void with_executor(const std::string &dir, const std::string &weights, Run run) {
  llmserve::Bundle bundle(dir, weights);
  if (bundle.manifest().target == llmserve::abi::kCudaTarget) {
    llmserve::cuda::CudaExecutorOptions options;
    options.limits = {.max_tokens = 4096, .max_seqs = 64, .max_blocks_per_seq = 1024};
    llmserve::cuda::CudaExecutor executor(std::move(bundle), options);
    run(executor);
  } else {
    llmserve::CpuExecutor executor(std::move(bundle));
    run(executor);
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 6 && !std::strcmp(argv[2], "--greedy") &&
      !std::strcmp(argv[4], "--prompt")) {
    try {
      with_executor(argv[1], "", [&](llmserve::Executor &executor) {
        std::cout << json(greedy(executor, parse_ids(argv[5]), std::stoi(argv[3]))).dump()
                  << "\n";
      });
      return 0;
    } catch (const std::exception &e) {
      std::cerr << "llmserve-step-driver: error: " << e.what() << "\n";
      return 1;
    }
  }
  if (argc != 3 && !(argc == 5 && !std::strcmp(argv[3], "--weights"))) {
    std::cerr << "usage: llmserve-step-driver <bundle> <steps.json> "
                 "[--weights DIR]\n";
    return 2;
  }
  try {
    std::ifstream file(argv[2]);
    if (!file)
      throw std::runtime_error(std::string("cannot read ") + argv[2]);
    json spec = json::parse(file);
    json out = json::array();
    with_executor(argv[1], argc == 5 ? argv[4] : "", [&](auto &executor) {
      executor.allocate_kv_cache(spec.at("num_blocks").get<int32_t>());
      for (const json &step : spec.at("steps")) {
        llmserve::Symbols symbols;
        std::vector<HostTensor> inputs = contract_inputs(step, symbols);
        std::vector<HostTensor> results = executor.run_entry("logits", symbols, inputs);
        const HostTensor &logits = results.at(0);
        const float *values = reinterpret_cast<const float *>(logits.data.data());
        json rows = json::array();
        for (int64_t s = 0; s < logits.shape[0]; ++s)
          rows.push_back(std::vector<float>(values + s * logits.shape[1],
                                            values + (s + 1) * logits.shape[1]));
        out.push_back(std::move(rows));
      }
    });
    std::cout << json{{"logits", out}}.dump() << "\n";
  } catch (const std::exception &e) {
    std::cerr << "llmserve-step-driver: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
