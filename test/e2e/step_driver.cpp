// Runs a bundle's `logits` entry point over a sequence of steps sharing one KV
// pool, and prints every step's logits: the end-to-end numerics test compares
// them with an independent torch implementation.
//
//   llmserve-step-driver <bundle> <steps.json> [--weights DIR]
//
// steps.json: {"num_blocks": N, "steps": [{"token_ids": [...], "positions":
// [...], "query_start": [...], "context_len": [...], "block_table": [[...],
// ...], "slot_mapping": [...], "logits_rows": [...]}, ...]}
// Output (stdout): {"logits": [[[f32 x V] x S] x steps]}
#include "cpu/cpu_executor.h"
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
  return in;
}

} // namespace

int main(int argc, char **argv) {
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
    llmserve::CpuExecutor executor(
        llmserve::Bundle(argv[1], argc == 5 ? argv[4] : ""));
    executor.allocate_kv_cache(spec.at("num_blocks").get<int32_t>());
    json out = json::array();
    for (const json &step : spec.at("steps")) {
      llmserve::Symbols symbols;
      std::vector<HostTensor> inputs = contract_inputs(step, symbols);
      std::vector<HostTensor> results =
          executor.run_entry("logits", symbols, inputs);
      const HostTensor &logits = results.at(0);
      const float *values = reinterpret_cast<const float *>(logits.data.data());
      json rows = json::array();
      for (int64_t s = 0; s < logits.shape[0]; ++s)
        rows.push_back(std::vector<float>(values + s * logits.shape[1],
                                          values + (s + 1) * logits.shape[1]));
      out.push_back(std::move(rows));
    }
    std::cout << json{{"logits", out}}.dump() << "\n";
  } catch (const std::exception &e) {
    std::cerr << "llmserve-step-driver: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
