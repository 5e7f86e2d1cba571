// Bundles for the tests, built by hand the way llmc writes them: a manifest
// (as JSON, so a test can break one field), the kernels of test_kernels.c
// compiled to a shared object at build time, and safetensors weights.
#ifndef LLMSERVE_TEST_SUPPORT_TEST_BUNDLE_H
#define LLMSERVE_TEST_SUPPORT_TEST_BUNDLE_H

#include "llmserve/abi.h"
#include "model/convert.h"
#include "model/safetensors.h"
#include "support/safetensors_writer.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace llmserve::test {

namespace fs = std::filesystem;
using nlohmann::json;

// Owns the bytes of a tensor to write with write_safetensors.
struct TestTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  TensorView view() const { return {name, dtype, shape, bytes.data(), bytes.size()}; }
};

inline TestTensor f32_tensor(const std::string &name, std::vector<int64_t> shape,
                             const std::vector<float> &values) {
  TestTensor t{name, DType::F32, std::move(shape), std::vector<uint8_t>(values.size() * 4)};
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

inline TestTensor f16_tensor(const std::string &name, std::vector<int64_t> shape,
                             const std::vector<float> &values) {
  TestTensor t{name, DType::F16, std::move(shape), std::vector<uint8_t>(values.size() * 2)};
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = f32_to_f16(values[i]);
    std::memcpy(t.bytes.data() + 2 * i, &h, 2);
  }
  return t;
}

inline void write_weights(const fs::path &path, const std::vector<TestTensor> &tensors) {
  std::vector<TensorView> views;
  for (const TestTensor &t : tensors)
    views.push_back(t.view());
  write_safetensors(path.string(), views);
}

// A bundle directory: manifest.json and, unless told otherwise, the test
// kernels as kernels.cpu.so.
inline void write_bundle(const fs::path &dir, const json &manifest, bool with_kernels = true) {
  fs::create_directories(dir);
  write_file(dir / abi::kManifestFile, manifest.dump(2));
  if (with_kernels)
    fs::copy_file(LLMSERVE_TEST_KERNELS_SO, dir / abi::kCpuKernelsFile,
                  fs::copy_options::overwrite_existing);
}

inline json manifest_skeleton() {
  return {
      {"format", abi::kFormatName},
      {"format_version", abi::kBundleFormatVersion},
      {"kernel_abi_version", abi::kKernelAbiVersion},
      {"target", "cpu"},
      {"model",
       {{"architecture", "llama"}, {"vocab_size", 8}, {"hidden_size", 4},
        {"num_layers", 1}, {"num_heads", 1}, {"num_kv_heads", 1}, {"head_dim", 4},
        {"max_position_embeddings", 64}, {"bos_token_id", 1}, {"eos_token_ids", {2}}}},
      {"kv_cache",
       {{"block_size", 2}, {"dtype", "f32"}, {"layout", "block,slot,head,dim"},
        {"num_layers", 1}, {"num_kv_heads", 1}, {"head_dim", 4},
        {"bytes_per_token", 2 * 1 * 1 * 4 * 4}}},
      {"weights", json::object()},
      {"buffers", json::array()},
      {"kernels", json::array()},
      {"entry_points", json::array()},
  };
}

// `m` as the manifest of an NVIDIA bundle: target sm_90, and every kernel
// launched with one thread per block and no dynamic shared memory.
inline json for_sm90(json m) {
  m["target"] = abi::kCudaTarget;
  for (json &k : m["kernels"]) {
    k["block"] = {1, 1, 1};
    k["shared_bytes"] = 0;
  }
  return m;
}

inline json dispatch(const char *kernel, std::vector<int> bindings, json push_constants,
                     json grid) {
  return {{"kernel", kernel}, {"bindings", bindings},
          {"push_constants", push_constants}, {"grid", grid}};
}

// Entry points on single ops, weights embedded:
//   add(a[T], b[T]) -> 2a + b, through an activation a + b
//   scale(x[2,4]) -> x * gain           gain: f32 [4], used in place
//   scale_half(x[2,4]) -> x * half_gain half_gain: f16 [4] in the file
//   project(x[2,4]) -> x . proj^T       proj: [3,4] in the file, transposed
inline json ops_manifest() {
  json m = manifest_skeleton();
  m["weights"]["embedded"] = abi::kEmbeddedWeightsFile;
  m["buffers"] = {
      {{"kind", "argument"}, {"name", "a"}, {"dtype", "f32"}, {"shape", {"T"}}},     // 0
      {{"kind", "argument"}, {"name", "b"}, {"dtype", "f32"}, {"shape", {"T"}}},     // 1
      {{"kind", "activation"}, {"dtype", "f32"}, {"shape", {"T"}}},                  // 2
      {{"kind", "result"}, {"name", "sum"}, {"dtype", "f32"}, {"shape", {"T"}}},     // 3
      {{"kind", "argument"}, {"name", "x"}, {"dtype", "f32"}, {"shape", {2, 4}}},    // 4
      {{"kind", "weight"}, {"name", "gain"}, {"dtype", "f32"}, {"shape", {4}},
       {"tensor", "gain"}, {"transform", "none"}},                                   // 5
      {{"kind", "result"}, {"name", "scaled"}, {"dtype", "f32"}, {"shape", {2, 4}}}, // 6
      {{"kind", "weight"}, {"name", "half_gain"}, {"dtype", "f32"}, {"shape", {4}},
       {"tensor", "half_gain"}, {"transform", "none"}},                              // 7
      {{"kind", "weight"}, {"name", "proj"}, {"dtype", "f32"}, {"shape", {4, 3}},
       {"tensor", "proj"}, {"transform", "transpose"}},                              // 8
      {{"kind", "result"}, {"name", "projected"}, {"dtype", "f32"}, {"shape", {2, 3}}}, // 9
  };
  m["kernels"] = {{{"name", "add"}, {"symbol", "test_add"}},
                  {{"name", "scale_rows"}, {"symbol", "test_scale_rows"}},
                  {{"name", "matmul"}, {"symbol", "test_matmul"}}};
  m["entry_points"] = {
      {{"name", "add"}, {"arguments", {0, 1}}, {"results", {3}},
       {"dispatches",
        {dispatch("add", {0, 1, 2}, {"T"}, {"ceildiv(T,4)", 1, 1}),
         dispatch("add", {2, 0, 3}, {"T"}, {"ceildiv(T, 4)", 1, 1})}}},
      {{"name", "scale"}, {"arguments", {4}}, {"results", {6}},
       {"dispatches", {dispatch("scale_rows", {4, 5, 6}, {4}, {2, 1, 1})}}},
      {{"name", "scale_half"}, {"arguments", {4}}, {"results", {6}},
       {"dispatches", {dispatch("scale_rows", {4, 7, 6}, {4}, {2, 1, 1})}}},
      {{"name", "project"}, {"arguments", {4}}, {"results", {9}},
       {"dispatches", {dispatch("matmul", {4, 8, 9}, {4, 3}, {2, 3, 1})}}},
      // Two dispatches whose grids select one by the step's size, as a
      // compiler writes kernels for small and large steps: a + b when T > 4,
      // else a + a.
      {{"name", "add_selected"}, {"arguments", {0, 1}}, {"results", {3}},
       {"dispatches",
        {dispatch("add", {0, 1, 3}, {"T"}, {"ceildiv(T,4)*min(max(T-4,0),1)", 1, 1}),
         dispatch("add", {0, 0, 3}, {"T"}, {"ceildiv(T,4)*(1-min(max(T-4,0),1))", 1, 1})}}},
  };
  return m;
}

inline const std::vector<float> kGain = {1.0f, 2.0f, 3.0f, 4.0f};
inline const std::vector<float> kHalfGain = {0.5f, -1.5f, 2.0f, 0.25f};
inline const std::vector<float> kProj = {1, 0, 0, 0, //
                                         0, 1, 1, 0, //
                                         2, 0, 0, -1}; // [3, 4]

inline std::vector<TestTensor> ops_weights() {
  return {f32_tensor("gain", {4}, kGain), f16_tensor("half_gain", {4}, kHalfGain),
          f32_tensor("proj", {3, 4}, kProj)};
}

// The ops bundle with its weights embedded, in `dir`.
inline fs::path ops_bundle(const fs::path &dir) {
  write_bundle(dir, ops_manifest());
  write_weights(dir / abi::kEmbeddedWeightsFile, ops_weights());
  return dir;
}

// The toy model of test_kernels.c behind the `step` entry point: V=8, H=4,
// one layer, block_size 2. embed (f16 [8,4] in the checkpoint) is read twice,
// as is for the embedding and transposed for the logits.
inline constexpr int kVocab = 8, kHidden = 4, kBlockSize = 2;
// Its two weight buffers, after the step arguments and the first result.
inline constexpr int kEmbedBuffer = abi::kNumStepArguments + 1;
inline constexpr int kUnembedBuffer = abi::kNumStepArguments + 2;

inline json step_manifest() {
  json m = manifest_skeleton();
  json buffers = json::array();
  std::vector<int> arguments;
  for (const abi::ContractArray &a : abi::kStepArguments) {
    json shape = json::array();
    std::string dims = a.shape;
    for (size_t start = 0, comma; start <= dims.size(); start = comma + 1) {
      comma = dims.find(',', start);
      if (comma == std::string::npos)
        comma = dims.size();
      shape.push_back(dims.substr(start, comma - start));
    }
    arguments.push_back(static_cast<int>(buffers.size()));
    buffers.push_back({{"kind", "argument"}, {"name", a.name}, {"dtype", a.dtype},
                       {"shape", shape}});
  }
  // Then, numbered from N = the number of arguments:
  const int N = abi::kNumStepArguments;
  buffers.push_back({{"kind", "result"}, {"name", "next_tokens"}, {"dtype", "i32"},
                     {"shape", {"S"}}}); // N
  buffers.push_back({{"kind", "weight"}, {"name", "embed"}, {"dtype", "f32"},
                     {"shape", {kVocab, kHidden}}, {"tensor", "embed"},
                     {"transform", "none"}}); // N+1
  buffers.push_back({{"kind", "weight"}, {"name", "unembed"}, {"dtype", "f32"},
                     {"shape", {kHidden, kVocab}}, {"tensor", "embed"},
                     {"transform", "transpose"}}); // N+2
  buffers.push_back({{"kind", "kv_cache"}, {"name", "layers.0.k"}, {"layer", 0},
                     {"role", "k"}, {"dtype", "f32"},
                     {"shape", {"NB", kBlockSize, 1, kHidden}}}); // N+3
  buffers.push_back({{"kind", "kv_cache"}, {"name", "layers.0.v"}, {"layer", 0},
                     {"role", "v"}, {"dtype", "f32"},
                     {"shape", {"NB", kBlockSize, 1, kHidden}}}); // N+4
  buffers.push_back({{"kind", "activation"}, {"dtype", "f32"}, {"shape", {"T", kHidden}}}); // N+5
  buffers.push_back({{"kind", "activation"}, {"dtype", "f32"}, {"shape", {"S", kHidden}}}); // N+6
  buffers.push_back({{"kind", "activation"}, {"dtype", "f32"}, {"shape", {"S", kVocab}}}); // N+7
  buffers.push_back({{"kind", "result"}, {"name", "token_logprobs"}, {"dtype", "f32"},
                     {"shape", {"S"}}}); // N+8
  buffers.push_back({{"kind", "result"}, {"name", "top_logprob_tokens"}, {"dtype", "i32"},
                     {"shape", {"S", abi::kMaxTopLogprobs}}}); // N+9
  buffers.push_back({{"kind", "result"}, {"name", "top_logprobs"}, {"dtype", "f32"},
                     {"shape", {"S", abi::kMaxTopLogprobs}}}); // N+10
  m["buffers"] = buffers;
  m["kernels"] = {{{"name", "embed"}, {"symbol", "test_embed"}},
                  {{"name", "kv_write"}, {"symbol", "test_kv_write"}},
                  {{"name", "attend"}, {"symbol", "test_attend"}},
                  {{"name", "logits"}, {"symbol", "test_logits"}},
                  {{"name", "sample"}, {"symbol", "test_sample"}}};
  const std::vector<int> results = {N, N + 8, N + 9, N + 10};
  std::vector<int> sample_bindings = {N + 7};
  sample_bindings.insert(sample_bindings.end(), arguments.begin(), arguments.end());
  sample_bindings.insert(sample_bindings.end(), results.begin(), results.end());
  m["entry_points"] = {
      {{"name", "step"}, {"arguments", arguments}, {"results", results},
       {"dispatches",
        {dispatch("embed", {0, N + 1, N + 5}, {kHidden}, {"T", 1, 1}),
         dispatch("kv_write", {N + 5, 5, N + 3, N + 4}, {kHidden}, {"T", 1, 1}),
         dispatch("attend", {3, 4, N + 3, N + 6}, {kHidden, "MB", kBlockSize}, {"S", 1, 1}),
         dispatch("logits", {N + 6, N + 2, N + 7}, {kHidden, kVocab}, {"S", kVocab, 1}),
         dispatch("sample", sample_bindings, {kVocab, "MB", kBlockSize}, {"S", 1, 1})}}}};
  return m;
}

// Row v of the toy embedding: distinct small integers, exact in f16.
inline std::vector<float> embedding_values(float scale = 1.0f) {
  std::vector<float> e(kVocab * kHidden);
  for (int v = 0; v < kVocab; ++v)
    for (int h = 0; h < kHidden; ++h)
      e[v * kHidden + h] = scale * static_cast<float>((v * 3 + h * 5) % 7 - 3);
  return e;
}

// A checkpoint directory holding the toy model's one tensor.
inline fs::path step_checkpoint(const fs::path &dir, float scale = 1.0f) {
  fs::create_directories(dir);
  write_weights(dir / "model.safetensors",
                {f16_tensor("embed", {kVocab, kHidden}, embedding_values(scale))});
  return dir;
}

// The step bundle in `dir`, its manifest naming `checkpoint` as the default.
inline fs::path step_bundle(const fs::path &dir, const fs::path &checkpoint) {
  json m = step_manifest();
  m["weights"]["checkpoint"] = checkpoint.string();
  write_bundle(dir, m);
  return dir;
}

} // namespace llmserve::test

#endif // LLMSERVE_TEST_SUPPORT_TEST_BUNDLE_H
