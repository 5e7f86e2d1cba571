#include "bundle/manifest.h"

#include "support/test_bundle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

namespace llmserve {
namespace {

using ::testing::HasSubstr;
using test::json;

std::string parse_error(const std::string &text) {
  try {
    Manifest::parse(text, "m.json");
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(Manifest, ParsesTheStepBundle) {
  const Manifest m = Manifest::parse(test::step_manifest().dump(), "m.json");
  EXPECT_EQ(m.target, "cpu");
  ASSERT_TRUE(m.model && m.kv_cache);
  EXPECT_EQ(m.model->architecture, "llama");
  EXPECT_EQ(m.model->vocab_size, 8);
  EXPECT_EQ(m.model->bos_token_id, 1);
  EXPECT_EQ(m.model->eos_token_ids, std::vector<int64_t>{2});
  EXPECT_EQ(m.kv_cache->block_size, 2);
  EXPECT_EQ(m.kv_cache->dtype, DType::F32);
  EXPECT_EQ(m.kv_cache->bytes_per_token, 32);
  ASSERT_EQ(m.buffers.size(), static_cast<size_t>(abi::kNumStepArguments + 11));
  EXPECT_EQ(m.buffers[4].kind, BufferKind::Argument);
  EXPECT_EQ(m.buffers[4].name, "block_table");
  EXPECT_EQ(shape_text(m.buffers[4].shape), "S,MB");
  EXPECT_EQ(m.buffers[24].kind, BufferKind::Weight);
  EXPECT_EQ(m.buffers[24].tensor, "embed");
  EXPECT_TRUE(m.buffers[24].transpose);
  EXPECT_FALSE(m.buffers[23].transpose);
  EXPECT_EQ(m.buffers[26].kind, BufferKind::KvCache);
  EXPECT_EQ(m.buffers[26].layer, 0);
  EXPECT_EQ(m.buffers[26].role, 'v');
  EXPECT_EQ(m.buffers[27].kind, BufferKind::Activation);
  EXPECT_EQ(m.buffers[27].name, "");
  ASSERT_EQ(m.kernels.size(), 5u);
  EXPECT_EQ(m.kernels[2].symbol, "test_attend");

  const EntryPoint *step = m.find_entry("step");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->arguments.size(), static_cast<size_t>(abi::kNumStepArguments));
  EXPECT_EQ(step->results, (std::vector<int>{22, 30, 31, 32}));
  ASSERT_EQ(step->dispatches.size(), 5u);
  const Dispatch &attend = step->dispatches[2];
  EXPECT_EQ(attend.kernel, 2);
  EXPECT_EQ(attend.bindings, (std::vector<int>{3, 4, 25, 28}));
  ASSERT_EQ(attend.push_constants.size(), 3u);
  EXPECT_EQ(attend.push_constants[1].text(), "MB");
  EXPECT_EQ(attend.grid[0].text(), "S");
  EXPECT_EQ(m.find_entry("nope"), nullptr);
}

TEST(Manifest, SizesBuffers) {
  const Manifest m = Manifest::parse(test::step_manifest().dump(), "m.json");
  const Symbols s{5, 2, 3, 10, 6};
  EXPECT_EQ(m.buffers[4].byte_size(s, 4), 2u * 3 * 4);   // block_table i32 [S,MB]
  EXPECT_EQ(m.buffers[11].byte_size(s, 11), 2u * 8);     // seed i64 [S]
  EXPECT_EQ(m.buffers[17].byte_size(s, 17), 6u * 4);     // penalty_counts i32 [P]
  EXPECT_EQ(m.buffers[31].byte_size(s, 31), 2u * 20 * 4); // top_logprob_tokens [S,20]
  EXPECT_EQ(m.buffers[25].byte_size(s, 25), 10u * 2 * 4 * 4); // KV [NB,2,1,4]
  EXPECT_THAT([&] {
    try {
      m.buffers[27].byte_size({-1, 0, 0, 0}, 27);
    } catch (const std::runtime_error &e) {
      return std::string(e.what());
    }
    return std::string();
  }(), HasSubstr("buffer 27 has shape [-1, 4] for [T,4]: negative dimension"));
  EXPECT_THROW(m.buffers[27].byte_size({INT64_MAX / 2, 0, 0, 0}, 27), std::runtime_error);
}

TEST(Manifest, ListsTheCpuFeaturesOfItsKernels) {
  json m = test::ops_manifest();
  std::vector<CpuKernels> sets = Manifest::parse(m.dump(), "m.json").cpu_kernels;
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0].file, "kernels.cpu.so");
  EXPECT_TRUE(sets[0].cpu.empty());
  EXPECT_TRUE(sets[0].features.empty());
  m["cpu"] = "znver4";
  m["cpu_features"] = {"avx2", "avx512vnni"};
  sets = Manifest::parse(m.dump(), "m.json").cpu_kernels;
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0].cpu, "znver4");
  EXPECT_EQ(sets[0].features, (std::vector<std::string>{"avx2", "avx512vnni"}));
  m["target"] = "sm_90";
  EXPECT_THAT(parse_error(m.dump()),
              HasSubstr("cpu: a sm_90 bundle's kernels are not for a CPU"));
}

TEST(Manifest, ListsKernelsForOtherCpusInOrder) {
  json m = test::ops_manifest();
  m["cpu"] = "sapphirerapids";
  m["cpu_features"] = {"avx2", "avx512fp16"};
  m["cpu_fallbacks"] = {{{"cpu", "x86-64-v3"}, {"kernels", "kernels.x86-64-v3.so"},
                         {"cpu_features", {"avx2"}}},
                        {{"cpu", "x86-64-v2"}, {"kernels", "kernels.x86-64-v2.so"},
                         {"cpu_features", json::array()}}};
  const std::vector<CpuKernels> sets = Manifest::parse(m.dump(), "m.json").cpu_kernels;
  ASSERT_EQ(sets.size(), 3u);
  EXPECT_EQ(sets[0].cpu, "sapphirerapids");
  EXPECT_EQ(sets[1].cpu, "x86-64-v3");
  EXPECT_EQ(sets[1].file, "kernels.x86-64-v3.so");
  EXPECT_EQ(sets[1].features, std::vector<std::string>{"avx2"});
  EXPECT_EQ(sets[2].file, "kernels.x86-64-v2.so");
  EXPECT_TRUE(sets[2].features.empty());
  m["target"] = "sm_90";
  m.erase("cpu");
  m.erase("cpu_features");
  EXPECT_THAT(parse_error(m.dump()),
              HasSubstr("cpu_fallbacks: a sm_90 bundle's kernels are not for a CPU"));
}

TEST(Manifest, ParsesAnFp8KvCache) {
  json m = test::step_manifest();
  m["kv_cache"]["dtype"] = "f8_e4m3";
  m["kv_cache"]["bytes_per_token"] = 8; // 2 * 1 layer * 1 head * 4 dims * 1 byte
  for (json &b : m["buffers"])
    if (b["kind"] == "kv_cache")
      b["dtype"] = "f8_e4m3";
  const Manifest parsed = Manifest::parse(m.dump(), "m.json");
  EXPECT_EQ(parsed.kv_cache->dtype, DType::F8E4M3);
  EXPECT_EQ(parsed.buffers[25].byte_size({5, 2, 3, 10, 6}, 25), 10u * 2 * 4); // [NB,2,1,4]
  m["kv_cache"]["bytes_per_token"] = 32;
  EXPECT_THAT(parse_error(m.dump()),
              HasSubstr("kv_cache.bytes_per_token: 32, but 2 * layers * kv_heads * head_dim * "
                        "sizeof(dtype) is 8"));
  m["kv_cache"]["bytes_per_token"] = 8;
  m["buffers"][25]["dtype"] = "f32";
  EXPECT_THAT(parse_error(m.dump()), HasSubstr("f32, but kv_cache.dtype is f8_e4m3"));
}

TEST(Manifest, LoadsFromFile) {
  const auto dir = test::fresh_dir();
  test::write_file(dir / "manifest.json", test::ops_manifest().dump());
  EXPECT_EQ(Manifest::load((dir / "manifest.json").string()).entry_points.size(), 5u);
  EXPECT_THAT(
      [&] {
        try {
          Manifest::load((dir / "absent.json").string());
        } catch (const std::runtime_error &e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      HasSubstr("absent.json: cannot open"));
}

TEST(Manifest, RefusesOtherVersions) {
  json m = test::ops_manifest();
  m["format_version"] = abi::kBundleFormatVersion + 1;
  EXPECT_THAT(parse_error(m.dump()),
              HasSubstr("m.json: format_version: bundle format version 3, runtime supports 2"));
  m = test::ops_manifest();
  m["kernel_abi_version"] = 7;
  EXPECT_THAT(parse_error(m.dump()),
              HasSubstr("kernel_abi_version: bundle kernel ABI version 7, runtime supports " +
                        std::to_string(abi::kKernelAbiVersion)));
  m = test::ops_manifest();
  m["format"] = "onnx";
  EXPECT_THAT(parse_error(m.dump()), HasSubstr("format: 'onnx' is not a kernel bundle"));
}

TEST(Manifest, RefusesMalformedJson) {
  const std::string text = test::ops_manifest().dump();
  EXPECT_THAT(parse_error(text.substr(0, text.size() / 2)),
              HasSubstr("m.json: not valid JSON"));
  EXPECT_THAT(parse_error(""), HasSubstr("m.json: not valid JSON"));
  // A number too large for a double (test/fuzz/corpus/fuzz_manifest/number-overflow).
  EXPECT_THAT(parse_error("55e415"), HasSubstr("m.json: not valid JSON"));
  EXPECT_THAT(parse_error("[1, 2]"), HasSubstr("m.json: manifest: expected a JSON object"));
}

// Each case breaks one thing in a valid manifest; the error names the field.
struct BrokenCase {
  const char *what;
  std::function<void(json &)> breakit;
  const char *error;
  bool step = false; // break the step manifest rather than the ops one
};

const BrokenCase kBroken[] = {
    {"step without model", [](json &m) { m.erase("model"); },
     "entry_points[0]: the step entry point needs the manifest's 'model' and 'kv_cache'", true},
    {"kv buffers without kv_cache", [](json &m) { m.erase("kv_cache"); },
     "buffers[25]: a kv_cache buffer, but the manifest has no 'kv_cache'", true},
    {"string vocab", [](json &m) { m["model"]["vocab_size"] = "8"; },
     "model.vocab_size: expected an integer, got \"8\""},
    {"zero heads", [](json &m) { m["model"]["num_heads"] = 0; },
     "model.num_heads: 0 is less than 1"},
    {"eos outside vocab", [](json &m) { m["model"]["eos_token_ids"] = {2, 8}; },
     "model.eos_token_ids: token 8 is outside the vocabulary of 8"},
    {"bos outside vocab", [](json &m) { m["model"]["bos_token_id"] = 9; },
     "model.bos_token_id: token 9 is outside"},
    {"huge integer", [](json &m) { m["model"]["hidden_size"] = UINT64_MAX; },
     "model.hidden_size: integer 18446744073709551615 does not fit in int64"},
    {"kv dtype", [](json &m) { m["kv_cache"]["dtype"] = "f8"; },
     "kv_cache.dtype: unknown dtype 'f8'"},
    {"kv layers", [](json &m) { m["kv_cache"]["num_layers"] = 2; },
     "kv_cache.num_layers: 2 layers, the model has 1"},
    {"kv bytes", [](json &m) { m["kv_cache"]["bytes_per_token"] = 33; },
     "kv_cache.bytes_per_token: 33, but 2 * layers * kv_heads * head_dim * sizeof(dtype) is 32"},
    {"target not a string", [](json &m) { m["target"] = 1; },
     "manifest.target: expected a string, got 1"},
    {"unknown target", [](json &m) { m["target"] = "tpu"; },
     "target: unknown target 'tpu' (known: cpu, sm_90)"},
    {"cuda kernel without block", [](json &m) { m["target"] = "sm_90"; },
     "kernels[0]: missing field 'block'"},
    {"cuda block of two dimensions",
     [](json &m) {
       m["target"] = "sm_90";
       for (json &k : m["kernels"])
         k["block"] = {128, 1};
     },
     "kernels[0].block: expected 3 dimensions, got [128,1]"},
    {"cuda block too large",
     [](json &m) {
       m["target"] = "sm_90";
       for (json &k : m["kernels"])
         k["block"] = {64, 32, 1}, k["shared_bytes"] = 0;
     },
     "kernels[0].block: more than 1024 threads: [64,32,1]"},
    {"cuda negative shared memory",
     [](json &m) {
       m["target"] = "sm_90";
       for (json &k : m["kernels"])
         k["block"] = {128, 1, 1}, k["shared_bytes"] = -1;
     },
     "kernels[0].shared_bytes: negative"},
    {"cuda programmatic launch not a boolean",
     [](json &m) {
       m["target"] = "sm_90";
       for (json &k : m["kernels"])
         k["block"] = {128, 1, 1}, k["shared_bytes"] = 0, k["programmatic_launch"] = 1;
     },
     "kernels[0].programmatic_launch: expected true or false, got 1"},
    {"buffer not an object", [](json &m) { m["buffers"][0] = 5; },
     "buffers[0]: expected a JSON object, got 5"},
    {"embedded not a string", [](json &m) { m["weights"]["embedded"] = true; },
     "weights.embedded: expected a string, got true"},
    {"kernels not an array", [](json &m) { m["kernels"] = "add"; },
     "kernels: expected an array, got \"add\""},
    {"entry points not an array", [](json &m) { m["entry_points"] = nullptr; },
     "entry_points: expected an array, got null"},
    {"weights not object", [](json &m) { m["weights"] = "w"; },
     "weights: expected a JSON object"},
    {"buffers not array", [](json &m) { m["buffers"] = json::object(); },
     "buffers: expected an array"},
    {"unknown dtype", [](json &m) { m["buffers"][1]["dtype"] = "float32"; },
     "buffers[1].dtype: unknown dtype 'float32'"},
    {"checkpoint dtype spelling", [](json &m) { m["buffers"][1]["dtype"] = "F32"; },
     "buffers[1].dtype: unknown dtype 'F32'"},
    {"unknown kind", [](json &m) { m["buffers"][0]["kind"] = "input"; },
     "buffers[0].kind: unknown buffer kind 'input'"},
    {"nameless argument", [](json &m) { m["buffers"][0].erase("name"); },
     "buffers[0]: missing field 'name'"},
    {"bad shape expression", [](json &m) { m["buffers"][0]["shape"] = {"T+"}; },
     "buffers[0].shape[0]: bad expression 'T+' at position 2"},
    {"float shape", [](json &m) { m["buffers"][0]["shape"] = {1.5}; },
     "buffers[0].shape[0]: expected an integer or an expression string, got 1.5"},
    {"unknown transform", [](json &m) { m["buffers"][8]["transform"] = "flip"; },
     "buffers[8].transform: unknown transform 'flip'"},
    {"transpose 1-D", [](json &m) { m["buffers"][5]["transform"] = "transpose"; },
     "buffers[5].transform: transpose needs a 2-D shape, got [4]"},
    {"experts without experts per token", [](json &m) { m["model"]["num_experts"] = 4; },
     "model: num_experts and num_experts_per_tok go together"},
    {"more experts per token than experts",
     [](json &m) {
       m["model"]["num_experts"] = 4;
       m["model"]["num_experts_per_tok"] = 5;
     },
     "model.num_experts_per_tok: 5 experts of 4"},
    {"zeros without a quantized checkpoint",
     [](json &m) {
       m["buffers"][5].update({{"dtype", "i8"}, {"shape", {4, 1}}, {"quantization", "int4_group128"},
                               {"part", "zeros"}});
     },
     "buffers[5].part: zeros come from a 4-bit checkpoint (\"from\" gptq, gptq_v2, awq or "
     "compressed_tensors_int4) read as int4_group128"},
    {"zeros from an FP8 checkpoint",
     [](json &m) {
       m["buffers"][5].update({{"dtype", "i8"}, {"shape", {4, 1}}, {"quantization", "int4_group128"},
                               {"part", "zeros"}, {"from", "fp8_block128"}});
     },
     "buffers[5].part: zeros come from a 4-bit checkpoint (\"from\" gptq, gptq_v2, awq or "
     "compressed_tensors_int4) read as int4_group128"},
    {"unknown quantized checkpoint",
     [](json &m) {
       m["buffers"][5].update({{"dtype", "i8"}, {"shape", {8, 1}}, {"quantization", "int4_group128"},
                               {"part", "zeros"}, {"from", "exl2"}});
     },
     "buffers[5].from: unknown quantized checkpoint 'exl2' (expected gptq, gptq_v2, awq, "
     "fp8_block128, compressed_tensors or compressed_tensors_int4)"},
    {"zeros from a compressed-tensors FP8 or int8 checkpoint",
     [](json &m) {
       m["buffers"][5].update({{"dtype", "i8"}, {"shape", {4, 1}}, {"quantization", "int4_group128"},
                               {"part", "zeros"}, {"from", "compressed_tensors"}});
     },
     "buffers[5].part: zeros come from a 4-bit checkpoint (\"from\" gptq, gptq_v2, awq or "
     "compressed_tensors_int4) read as int4_group128"},
    {"a transposed linear from a compressed-tensors 4-bit checkpoint",
     [](json &m) {
       m["buffers"][5].update({{"from", "compressed_tensors_int4"}, {"transform", "transpose"}});
     },
     "buffers[5].from: a 4-bit checkpoint's linear is neither stacked nor transposed"},
    {"a transposed linear from a 4-bit checkpoint",
     [](json &m) { m["buffers"][5].update({{"from", "awq"}, {"transform", "transpose"}}); },
     "buffers[5].from: a 4-bit checkpoint's linear is neither stacked nor transposed"},
    {"zeros of int8 from a 4-bit checkpoint",
     [](json &m) {
       m["buffers"][5].update({{"dtype", "i8"}, {"shape", {4, 1}}, {"quantization", "int8_channel"},
                               {"part", "zeros"}, {"from", "gptq"}});
     },
     "buffers[5].part: zeros come from a 4-bit checkpoint (\"from\" gptq, gptq_v2, awq or "
     "compressed_tensors_int4) read as int4_group128"},
    {"cpu fallbacks not a list", [](json &m) { m["cpu_fallbacks"] = "x86-64-v3"; },
     "cpu_fallbacks: expected an array"},
    {"cpu fallback without its cpu",
     [](json &m) { m["cpu_fallbacks"] = {{{"kernels", "k.so"}, {"cpu_features", {"avx2"}}}}; },
     "cpu_fallbacks[0]: missing field 'cpu'"},
    {"cpu fallback without features",
     [](json &m) { m["cpu_fallbacks"] = {{{"cpu", "x86-64-v3"}, {"kernels", "k.so"}}}; },
     "cpu_fallbacks[0]: missing field 'cpu_features'"},
    {"cpu fallback kernels outside the bundle",
     [](json &m) {
       m["cpu_fallbacks"] = {{{"cpu", "x86-64-v3"}, {"kernels", "../evil.so"},
                              {"cpu_features", {"avx2"}}}};
     },
     "cpu_fallbacks[0].kernels: expected the name of a .so file in the bundle directory, got "
     "'../evil.so'"},
    {"cpu fallback kernels not a shared object",
     [](json &m) {
       m["cpu_fallbacks"] = {{{"cpu", "x86-64-v3"}, {"kernels", "manifest.json"},
                              {"cpu_features", {"avx2"}}}};
     },
     "cpu_fallbacks[0].kernels: expected the name of a .so file in the bundle directory, got "
     "'manifest.json'"},
    {"cpu fallback repeating the first's file",
     [](json &m) {
       m["cpu_fallbacks"] = {{{"cpu", "x86-64-v3"}, {"kernels", "kernels.cpu.so"},
                              {"cpu_features", {"avx2"}}}};
     },
     "cpu_fallbacks[0]: the kernels for CPU 'x86-64-v3' (kernels.cpu.so) repeat an earlier "
     "set's CPU or file"},
    {"cpu fallback repeating a cpu",
     [](json &m) {
       m["cpu_fallbacks"] = {
           {{"cpu", "x86-64-v3"}, {"kernels", "a.so"}, {"cpu_features", {"avx2"}}},
           {{"cpu", "x86-64-v3"}, {"kernels", "b.so"}, {"cpu_features", {"avx2"}}}};
     },
     "cpu_fallbacks[1]: the kernels for CPU 'x86-64-v3' (b.so) repeat an earlier set's CPU or "
     "file"},
    {"unknown cpu feature of a fallback",
     [](json &m) {
       m["cpu_fallbacks"] = {{{"cpu", "x86-64-v3"}, {"kernels", "a.so"},
                              {"cpu_features", {"avx2", "avx1024"}}}};
     },
     "cpu_fallbacks[0].cpu_features[1]: unknown CPU feature 'avx1024'"},
    {"cpu not a string", [](json &m) { m["cpu"] = 3; }, "cpu: expected a string"},
    {"cpu features not a list", [](json &m) { m["cpu_features"] = "avx2"; },
     "cpu_features: expected an array"},
    {"unknown cpu feature", [](json &m) { m["cpu_features"] = {"avx2", "avx1024"}; },
     "cpu_features[1]: unknown CPU feature 'avx1024'"},
    {"stacked count", [](json &m) { m["buffers"][8]["stacked"] = 0; },
     "buffers[8].stacked: must be positive, got 0"},
    {"stacked without a placeholder", [](json &m) { m["buffers"][8]["stacked"] = 4; },
     "buffers[8].tensor: a stacked weight's tensor name holds \"{}\" once, got 'proj'"},
    {"stacked shape",
     [](json &m) {
       m["buffers"][8]["stacked"] = 3;
       m["buffers"][8]["tensor"] = "e.{}.proj";
     },
     "buffers[8].shape: a weight of 3 stacked tensors has rank 2 or more and dimension 0 of 3, "
     "got [4,3]"},
    {"stacked transposed rank",
     [](json &m) {
       m["buffers"][8]["stacked"] = 4;
       m["buffers"][8]["tensor"] = "e.{}.proj";
     },
     "buffers[8].transform: transpose needs a 3-D shape (stacked 2-D tensors), got [4,3]"},
    {"stacked int4",
     [](json &m) {
       m["buffers"][8]["stacked"] = 4;
       m["buffers"][8]["tensor"] = "e.{}.proj";
       m["buffers"][8]["transform"] = "none";
       m["buffers"][8]["quantization"] = "int4_group128";
     },
     "buffers[8].quantization: a stacked weight is quantized by int8_channel only"},
    {"stacked int8 values of rank 2",
     [](json &m) {
       m["buffers"][8]["stacked"] = 4;
       m["buffers"][8]["tensor"] = "e.{}.proj";
       m["buffers"][8]["transform"] = "none";
       m["buffers"][8]["dtype"] = "i8";
       m["buffers"][8]["quantization"] = "int8_channel";
       m["buffers"][8]["part"] = "values";
     },
     "buffers[8]: int8_channel values are a 3-D i8 array, got i8 [4,3]"},
    {"symbolic weight", [](json &m) { m["buffers"][5]["shape"] = {"T"}; },
     "buffers[5].shape: a weight's shape must be constant"},
    {"empty tensor name", [](json &m) { m["buffers"][5]["tensor"] = ""; },
     "buffers[5].tensor: empty tensor name"},
    {"weight read twice", [](json &m) { m["buffers"][7]["tensor"] = "gain"; },
     "buffers[7]: tensor 'gain' with transform none is already bound by buffers[5]"},
    {"rows read twice",
     [](json &m) {
       m["buffers"][5]["rows"] = m["buffers"][7]["rows"] = {0, 4};
       m["buffers"][7]["tensor"] = "gain";
     },
     "buffers[7]: tensor 'gain' with transform none rows [0, 4] is already bound by buffers[5]"},
    {"rows not a pair", [](json &m) { m["buffers"][5]["rows"] = {1}; },
     "buffers[5].rows: expected [begin, end], got [1]"},
    {"rows empty", [](json &m) { m["buffers"][5]["rows"] = {2, 2}; },
     "buffers[5].rows: empty or negative range [2,2]"},
    {"rows negative", [](json &m) { m["buffers"][5]["rows"] = {-1, 3}; },
     "buffers[5].rows: empty or negative range [-1,3]"},
    {"rows off shape", [](json &m) { m["buffers"][5]["rows"] = {0, 3}; },
     "buffers[5].rows: rows [0,3] do not match shape [4]"},
    {"kv layer", [](json &m) { m["buffers"][25]["layer"] = 1; },
     "buffers[25].layer: layer 1 is out of range (1 layers)", true},
    {"kv role", [](json &m) { m["buffers"][25]["role"] = "q"; },
     "buffers[25].role: unknown role 'q'", true},
    {"kv dtype mismatch", [](json &m) { m["buffers"][25]["dtype"] = "f16"; },
     "buffers[25].dtype: f16, but kv_cache.dtype is f32", true},
    {"kv shape uses T", [](json &m) { m["buffers"][25]["shape"][0] = "T"; },
     "buffers[25].shape: a KV cache shape may use only NB", true},
    {"kv pool of the wrong size", [](json &m) { m["buffers"][25]["shape"][3] = 8; },
     "buffers[25].shape: [NB,2,1,8] holds 64 bytes for NB=1, kv_cache says 32", true},
    {"kv pool not linear in NB", [](json &m) { m["buffers"][25]["shape"][0] = "NB*NB"; },
     "buffers[25].shape: [NB*NB,2,1,4] holds 128 bytes for NB=2, kv_cache says 64", true},
    {"kv size overflow",
     [](json &m) { m["model"]["num_layers"] = m["kv_cache"]["num_layers"] = int64_t{1} << 62; },
     "kv_cache: the KV cache's size overflows int64"},
    {"kv pool with a negative dimension", [](json &m) { m["buffers"][25]["shape"][0] = "NB-2"; },
     "buffers[25].shape: [NB-2,2,1,4] holds 0 bytes for NB=1, kv_cache says 32", true},
    {"kv layer not an integer", [](json &m) { m["buffers"][25]["layer"] = "0"; },
     "buffers[25].layer: expected an integer, got \"0\"", true},
    {"kv twice", [](json &m) { m["buffers"][26]["role"] = "k"; },
     "buffers[26]: a second KV cache buffer for layer 0 role k", true},
    {"kv missing", [](json &m) { m["buffers"][26]["kind"] = "activation"; },
     "buffers: 1 KV cache buffers, expected one per layer and role (2)", true},
    {"kernel listed twice", [](json &m) { m["kernels"][1]["name"] = "add"; },
     "kernels[1].name: kernel 'add' is listed twice"},
    {"kernel without symbol", [](json &m) { m["kernels"][1]["symbol"] = ""; },
     "kernels[1]: empty kernel name or symbol"},
    {"unlisted kernel", [](json &m) { m["entry_points"][0]["dispatches"][0]["kernel"] = "mul"; },
     "entry_points[0].dispatches[0].kernel: kernel 'mul' is not listed in kernels"},
    {"binding out of range", [](json &m) { m["entry_points"][0]["dispatches"][1]["bindings"][2] = 10; },
     "entry_points[0].dispatches[1].bindings[2]: buffer id 10 is out of range (10 buffers)"},
    {"negative binding", [](json &m) { m["entry_points"][0]["dispatches"][1]["bindings"][2] = -1; },
     "entry_points[0].dispatches[1].bindings[2]: buffer id -1 is out of range"},
    {"foreign argument", [](json &m) { m["entry_points"][1]["dispatches"][0]["bindings"][0] = 0; },
     "entry_points[1].dispatches[0].bindings[0]: buffer 0 is of kind argument but not one of "
     "this entry point's arguments"},
    {"argument is a weight", [](json &m) { m["entry_points"][1]["arguments"][0] = 5; },
     "entry_points[1].arguments[0]: buffer 5 is of kind weight, expected argument"},
    {"result is an argument", [](json &m) { m["entry_points"][1]["results"][0] = 4; },
     "entry_points[1].results[0]: buffer 4 is of kind argument, expected result"},
    {"argument twice", [](json &m) { m["entry_points"][0]["arguments"] = {0, 0}; },
     "entry_points[0]: a buffer is listed twice"},
    {"two-dimensional grid", [](json &m) { m["entry_points"][0]["dispatches"][0]["grid"] = {1, 1}; },
     "entry_points[0].dispatches[0].grid: 2 dimensions, expected 3"},
    {"bad push constant", [](json &m) { m["entry_points"][0]["dispatches"][0]["push_constants"][0] = "ceildiv(T"; },
     "entry_points[0].dispatches[0].push_constants[0]: bad expression 'ceildiv(T' at position 9"},
    {"arity differs", [](json &m) { m["entry_points"][0]["dispatches"][1]["push_constants"] = {"T", 1}; },
     "entry_points[0].dispatches[1]: kernel 'add' dispatched with 3 bindings and 2 push constants, "
     "elsewhere with 3 and 1"},
    {"entry listed twice", [](json &m) { m["entry_points"][1]["name"] = "add"; },
     "entry_points[1].name: entry point 'add' is listed twice"},
    {"missing dispatches", [](json &m) { m["entry_points"][0].erase("dispatches"); },
     "entry_points[0]: missing field 'dispatches'"},
    {"step arguments swapped",
     [](json &m) { std::swap(m["entry_points"][0]["arguments"][0], m["entry_points"][0]["arguments"][1]); },
     "entry_points[0].arguments[0]: buffer 'positions' i32 [T], the step contract says 'token_ids' i32 [T]",
     true},
    {"step argument dtype", [](json &m) { m["buffers"][7]["dtype"] = "f16"; },
     "entry_points[0].arguments[7]: buffer 'temperature' f16 [S], the step contract says "
     "'temperature' f32 [S]", true},
    {"step argument shape", [](json &m) { m["buffers"][2]["shape"] = {"S"}; },
     "entry_points[0].arguments[2]: buffer 'query_start' i32 [S], the step contract says "
     "'query_start' i32 [S+1]", true},
    {"step argument missing", [](json &m) { m["entry_points"][0]["arguments"].erase(11); },
     "entry_points[0].arguments: 21 arguments, the step contract has 22", true},
    {"step results missing", [](json &m) { m["entry_points"][0]["results"] = {22}; },
     "entry_points[0].results: 1 results, the step contract has 4", true},
    {"step logprob result", [](json &m) { m["buffers"][31]["shape"] = {"S", 10}; },
     "entry_points[0].results[2]: buffer 'top_logprob_tokens' i32 [S,10], the step contract says "
     "'top_logprob_tokens' i32 [S,20]", true},
    {"step result", [](json &m) { m["buffers"][22]["name"] = "tokens"; },
     "entry_points[0].results[0]: buffer 'tokens' i32 [S], the step contract says 'next_tokens'",
     true},
};

TEST(Manifest, RefusesBrokenManifests) {
  for (const BrokenCase &c : kBroken) {
    json m = c.step ? test::step_manifest() : test::ops_manifest();
    c.breakit(m);
    EXPECT_THAT(parse_error(m.dump()), HasSubstr(std::string("m.json: ") + c.error))
        << c.what;
  }
}

TEST(Manifest, AcceptsOptionalFieldsLeftOut) {
  json m = test::ops_manifest();
  m.erase("weights");
  m["model"].erase("bos_token_id");
  m["buffers"][2].erase("name");
  Manifest parsed = Manifest::parse(m.dump(), "m.json");
  ASSERT_TRUE(parsed.model);
  EXPECT_EQ(parsed.model->bos_token_id, -1);
  EXPECT_TRUE(parsed.weights.embedded.empty());
  EXPECT_EQ(parsed.buffers[5].rows_end, -1);

  // A bundle of single ops has no model and no KV cache.
  m.erase("model");
  m.erase("kv_cache");
  parsed = Manifest::parse(m.dump(), "m.json");
  EXPECT_FALSE(parsed.model);
  EXPECT_FALSE(parsed.kv_cache);
}

TEST(Manifest, ParsesCudaLaunchMetadata) {
  json m = test::ops_manifest();
  m["target"] = "sm_90";
  for (json &k : m["kernels"])
    k["block"] = {128, 2, 1}, k["shared_bytes"] = 49152;
  m["kernels"][0]["programmatic_launch"] = true;
  Manifest parsed = Manifest::parse(m.dump(), "m.json");
  EXPECT_EQ(parsed.target, "sm_90");
  EXPECT_EQ(parsed.kernels[0].block, (std::array<int64_t, 3>{128, 2, 1}));
  EXPECT_EQ(parsed.kernels[0].shared_bytes, 49152);
  EXPECT_TRUE(parsed.kernels[0].programmatic_launch);
  EXPECT_FALSE(parsed.kernels[1].programmatic_launch); // absent: launched after its predecessors

  // CPU kernels have no launch metadata.
  parsed = Manifest::parse(test::ops_manifest().dump(), "m.json");
  EXPECT_EQ(parsed.kernels[0].block, (std::array<int64_t, 3>{1, 1, 1}));
  EXPECT_EQ(parsed.kernels[0].shared_bytes, 0);
}

TEST(Manifest, ParsesWeightRows) {
  json m = test::ops_manifest();
  m["buffers"][8]["rows"] = {1, 5};
  const Manifest parsed = Manifest::parse(m.dump(), "m.json");
  EXPECT_EQ(parsed.buffers[8].rows_begin, 1);
  EXPECT_EQ(parsed.buffers[8].rows_end, 5);
}

} // namespace
} // namespace llmserve
