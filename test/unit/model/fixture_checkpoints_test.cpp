// Reads the checkpoints test/fixtures/make_fixtures.py writes (with torch and
// its own Python safetensors writer) and checks them against what their
// config.json implies: the C++ reader and the Python writer agree on the
// format, and torch's f16/bf16 rounding agrees with ours.
#include "model/checkpoint.h"
#include "model/convert.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

namespace llmserve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Shapes = std::map<std::string, std::vector<int64_t>>;

const fs::path kFixtures = LLMSERVE_FIXTURES_DIR;

json read_json(const fs::path &path) {
  std::ifstream in(path);
  return json::parse(in);
}

// Layer `layer`'s MLP: MixtralForCausalLM's experts on every layer;
// Qwen3MoeForCausalLM's on every decoder_sparse_step-th layer not in
// mlp_only_layers; otherwise the dense gate, up and down projections.
void add_mlp_shapes(const json &c, int layer, const std::string &p, Shapes &s) {
  const int64_t hidden = c["hidden_size"];
  const bool mixtral = c["model_type"] == "mixtral";
  const bool sparse =
      mixtral || (c["model_type"] == "qwen3_moe" && c["num_experts"].get<int>() > 0 &&
                  (layer + 1) % c["decoder_sparse_step"].get<int>() == 0 &&
                  std::find(c["mlp_only_layers"].begin(), c["mlp_only_layers"].end(), layer) ==
                      c["mlp_only_layers"].end());
  if (!sparse) {
    const int64_t inter = c["intermediate_size"];
    s[p + "mlp.gate_proj.weight"] = {inter, hidden};
    s[p + "mlp.up_proj.weight"] = {inter, hidden};
    s[p + "mlp.down_proj.weight"] = {hidden, inter};
    return;
  }
  const int64_t experts = mixtral ? c["num_local_experts"] : c["num_experts"];
  const int64_t inter = mixtral ? c["intermediate_size"] : c["moe_intermediate_size"];
  const std::string block = p + (mixtral ? "block_sparse_moe." : "mlp.");
  s[block + "gate.weight"] = {experts, hidden};
  for (int64_t e = 0; e < experts; ++e) {
    const std::string x = block + "experts." + std::to_string(e) + ".";
    s[x + (mixtral ? "w1" : "gate_proj") + ".weight"] = {inter, hidden};
    s[x + (mixtral ? "w3" : "up_proj") + ".weight"] = {inter, hidden};
    s[x + (mixtral ? "w2" : "down_proj") + ".weight"] = {hidden, inter};
  }
}

// The tensors Hugging Face's LlamaForCausalLM (Mistral, Qwen2, Qwen3, and
// the mixtures of experts Mixtral and Qwen3-MoE) saves for `c`.
Shapes llama_shapes(const json &c) {
  const int64_t hidden = c["hidden_size"];
  const int64_t heads = c["num_attention_heads"], kv_heads = c["num_key_value_heads"];
  const int64_t head_dim = c.value("head_dim", hidden / heads), vocab = c["vocab_size"];
  const bool bias = c["model_type"] == "qwen2";
  const bool qk_norm = c["model_type"] == "qwen3" || c["model_type"] == "qwen3_moe";
  Shapes s{{"model.embed_tokens.weight", {vocab, hidden}}, {"model.norm.weight", {hidden}}};
  if (!c["tie_word_embeddings"].get<bool>())
    s["lm_head.weight"] = {vocab, hidden};
  for (int layer = 0; layer < c["num_hidden_layers"].get<int>(); ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    s[p + "input_layernorm.weight"] = {hidden};
    s[p + "post_attention_layernorm.weight"] = {hidden};
    s[p + "self_attn.q_proj.weight"] = {heads * head_dim, hidden};
    s[p + "self_attn.k_proj.weight"] = {kv_heads * head_dim, hidden};
    s[p + "self_attn.v_proj.weight"] = {kv_heads * head_dim, hidden};
    s[p + "self_attn.o_proj.weight"] = {hidden, heads * head_dim};
    if (bias) {
      s[p + "self_attn.q_proj.bias"] = {heads * head_dim};
      s[p + "self_attn.k_proj.bias"] = {kv_heads * head_dim};
      s[p + "self_attn.v_proj.bias"] = {kv_heads * head_dim};
    }
    if (qk_norm) {
      s[p + "self_attn.q_norm.weight"] = {head_dim};
      s[p + "self_attn.k_norm.weight"] = {head_dim};
    }
    add_mlp_shapes(c, layer, p, s);
  }
  return s;
}

// compressed-tensors: the config group whose targets (regular expressions
// after "re:", matched from the start, as compressed-tensors matches them,
// or the class name Linear) match the linear `module`, or null.
const json *compressed_group(const json &q, const std::string &module) {
  for (const auto &[name, group] : q["config_groups"].items())
    for (const std::string target : group["targets"])
      if (target == "Linear" ||
          (target.rfind("re:", 0) == 0 &&
           std::regex_search(module, std::regex(target.substr(3)),
                             std::regex_constants::match_continuous)))
        return &group;
  return nullptr;
}

// A quantized checkpoint of `s`'s tensors, and in `dtypes` those stored in
// another type than the config's: each decoder-layer linear [N, K] in 4-bit
// GPTQ or AWQ as qweight, qzeros and scales (and GPTQ's g_idx), groups of
// `group` inputs; in FP8 as the weight and its scales, one per block of 128
// x 128; or in its compressed-tensors config group's format (FP8 or int8
// values and scales per tensor, row, group or block; int4 packed with its
// scales and shape), with each attention layer's KV-cache scales where it
// has a kv_cache_scheme: one, or [kv_heads, 1, 1] (strategy attn_head).
Shapes quantized_shapes(const json &q, int64_t kv_heads, const Shapes &s,
                        std::map<std::string, DType> &dtypes) {
  const bool awq = q["quant_method"] == "awq", fp8 = q["quant_method"] == "fp8";
  const bool compressed = q["quant_method"] == "compressed-tensors";
  const int64_t group = fp8 || compressed ? 0 : q["group_size"].get<int64_t>();
  Shapes out;
  for (const auto &[name, shape] : s) {
    const std::string suffix = "_proj.weight";
    if (name.find(".layers.") == std::string::npos || name.size() < suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      out[name] = shape;
      continue;
    }
    const std::string module = name.substr(0, name.size() - std::string(".weight").size());
    const int64_t n = shape[0], k = shape[1];
    const bool kv_scales = compressed && q.contains("kv_cache_scheme") &&
                           !q["kv_cache_scheme"].is_null();
    if (kv_scales && module.find(".q_proj") != std::string::npos) {
      const std::string attention = module.substr(0, module.size() - std::string(".q_proj").size());
      out[attention + ".k_scale"] = out[attention + ".v_scale"] =
          q["kv_cache_scheme"]["strategy"] == "attn_head" ? std::vector<int64_t>{kv_heads, 1, 1}
                                                        : std::vector<int64_t>{1};
    }
    if (compressed) {
      const json *g = compressed_group(q, module);
      if (!g) {
        out[name] = shape;
        continue;
      }
      const json &w = (*g)["weights"];
      const std::string strategy = w["strategy"];
      const int64_t columns = strategy == "group" ? k / w["group_size"].get<int64_t>() : 1;
      if ((*g)["format"] == "pack-quantized") {
        out[module + ".weight_packed"] = {n, k / 8};
        out[module + ".weight_scale"] = {n, columns};
        out[module + ".weight_shape"] = {2};
        dtypes[module + ".weight_packed"] = DType::I32;
        dtypes[module + ".weight_shape"] = DType::I64;
        continue;
      }
      out[name] = shape;
      dtypes[name] = w["type"] == "float" ? DType::F8E4M3 : DType::I8;
      out[module + ".weight_scale"] = strategy == "tensor"  ? std::vector<int64_t>{1}
                                      : strategy == "block" ? std::vector<int64_t>{(n + 127) / 128,
                                                                                   (k + 127) / 128}
                                                            : std::vector<int64_t>{n, columns};
      continue;
    }
    if (fp8) {
      out[name] = shape;
      out[name + "_scale_inv"] = {(n + 127) / 128, (k + 127) / 128};
      dtypes[name] = DType::F8E4M3;
      continue;
    }
    out[module + ".qweight"] = awq ? std::vector<int64_t>{k, n / 8} : std::vector<int64_t>{k / 8, n};
    out[module + ".qzeros"] = {k / group, n / 8};
    out[module + ".scales"] = {k / group, n};
    for (const char *packed : {".qweight", ".qzeros"})
      dtypes[module + packed] = DType::I32;
    if (!awq) {
      out[module + ".g_idx"] = {k};
      dtypes[module + ".g_idx"] = DType::I32;
    }
  }
  return out;
}

// Gemma2ForCausalLM's and Gemma3ForCausalLM's tensors: four norms a layer,
// and Gemma 3's per-head q/k norms.
Shapes gemma_shapes(const json &c) {
  const int64_t hidden = c["hidden_size"], inter = c["intermediate_size"];
  const int64_t heads = c["num_attention_heads"], kv_heads = c["num_key_value_heads"];
  const int64_t head_dim = c["head_dim"], vocab = c["vocab_size"];
  Shapes s{{"model.embed_tokens.weight", {vocab, hidden}}, {"model.norm.weight", {hidden}}};
  if (!c.value("tie_word_embeddings", true))
    s["lm_head.weight"] = {vocab, hidden};
  for (int layer = 0; layer < c["num_hidden_layers"].get<int>(); ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    for (const char *norm : {"input_layernorm", "post_attention_layernorm",
                             "pre_feedforward_layernorm", "post_feedforward_layernorm"})
      s[p + norm + ".weight"] = {hidden};
    s[p + "self_attn.q_proj.weight"] = {heads * head_dim, hidden};
    s[p + "self_attn.k_proj.weight"] = {kv_heads * head_dim, hidden};
    s[p + "self_attn.v_proj.weight"] = {kv_heads * head_dim, hidden};
    s[p + "self_attn.o_proj.weight"] = {hidden, heads * head_dim};
    if (c["model_type"] == "gemma3_text") {
      s[p + "self_attn.q_norm.weight"] = {head_dim};
      s[p + "self_attn.k_norm.weight"] = {head_dim};
    }
    s[p + "mlp.gate_proj.weight"] = {inter, hidden};
    s[p + "mlp.up_proj.weight"] = {inter, hidden};
    s[p + "mlp.down_proj.weight"] = {hidden, inter};
  }
  return s;
}

// GPT2LMHeadModel's tensors: Conv1D weights are [in, out]; lm_head is tied.
Shapes gpt2_shapes(const json &c, const std::string &prefix) {
  const int64_t n = c["n_embd"], positions = c["n_positions"], vocab = c["vocab_size"];
  Shapes s{{"wte.weight", {vocab, n}}, {"wpe.weight", {positions, n}},
           {"ln_f.weight", {n}}, {"ln_f.bias", {n}}};
  for (int layer = 0; layer < c["n_layer"].get<int>(); ++layer) {
    const std::string p = "h." + std::to_string(layer) + ".";
    for (const char *norm : {"ln_1", "ln_2"}) {
      s[p + norm + ".weight"] = {n};
      s[p + norm + ".bias"] = {n};
    }
    s[p + "attn.c_attn.weight"] = {n, 3 * n};
    s[p + "attn.c_attn.bias"] = {3 * n};
    s[p + "attn.c_proj.weight"] = {n, n};
    s[p + "attn.c_proj.bias"] = {n};
    s[p + "mlp.c_fc.weight"] = {n, 4 * n};
    s[p + "mlp.c_fc.bias"] = {4 * n};
    s[p + "mlp.c_proj.weight"] = {4 * n, n};
    s[p + "mlp.c_proj.bias"] = {n};
  }
  Shapes prefixed;
  for (auto &[name, shape] : s)
    prefixed[prefix + name] = shape;
  return prefixed;
}

// Phi3ForCausalLM's tensors: q, k and v fused in qkv_proj, gate and up in
// gate_up_proj.
Shapes phi3_shapes(const json &c) {
  const int64_t hidden = c["hidden_size"], inter = c["intermediate_size"];
  const int64_t heads = c["num_attention_heads"], kv_heads = c["num_key_value_heads"];
  const int64_t head_dim = c.value("head_dim", hidden / heads), vocab = c["vocab_size"];
  Shapes s{{"model.embed_tokens.weight", {vocab, hidden}}, {"model.norm.weight", {hidden}}};
  if (!c["tie_word_embeddings"].get<bool>())
    s["lm_head.weight"] = {vocab, hidden};
  for (int layer = 0; layer < c["num_hidden_layers"].get<int>(); ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    s[p + "input_layernorm.weight"] = {hidden};
    s[p + "post_attention_layernorm.weight"] = {hidden};
    s[p + "self_attn.qkv_proj.weight"] = {(heads + 2 * kv_heads) * head_dim, hidden};
    s[p + "self_attn.o_proj.weight"] = {hidden, heads * head_dim};
    s[p + "mlp.gate_up_proj.weight"] = {2 * inter, hidden};
    s[p + "mlp.down_proj.weight"] = {hidden, inter};
  }
  return s;
}

std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  for (const auto &entry : fs::directory_iterator(kFixtures))
    if (fs::exists(entry.path() / "config.json"))
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class FixtureCheckpoints : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(fs::is_directory(kFixtures))
        << kFixtures << " is missing: ctest writes it first (model_fixtures_generate), or run "
        << "/usr/bin/python3 test/fixtures/make_fixtures.py " << kFixtures;
  }
};

TEST_F(FixtureCheckpoints, HoldExactlyTheTensorsTheirConfigImplies) {
  std::vector<std::string> names = fixture_names();
  ASSERT_GE(names.size(), 10u) << kFixtures;
  for (const std::string &name : names) {
    SCOPED_TRACE(name);
    const fs::path dir = kFixtures / name;
    const json config = read_json(dir / "config.json");
    Checkpoint ckpt = Checkpoint::open(dir.string());
    Shapes expected;
    if (config["model_type"] == "gpt2")
      expected = gpt2_shapes(config, ckpt.find("transformer.wte.weight") ? "transformer." : "");
    else if (config["model_type"] == "phi3")
      expected = phi3_shapes(config);
    else if (config["model_type"] == "gemma2" || config["model_type"] == "gemma3_text")
      expected = gemma_shapes(config);
    else
      expected = llama_shapes(config);
    std::map<std::string, DType> dtypes; // those not in the config's type
    if (config.contains("quantization_config"))
      expected = quantized_shapes(config["quantization_config"],
                                  config.value("num_key_value_heads", int64_t{0}), expected,
                                  dtypes);
    const DType dtype = *parse_dtype(std::map<std::string, std::string>{
        {"float32", "f32"}, {"float16", "f16"}, {"bfloat16", "bf16"}}[config["torch_dtype"]]);

    size_t matched = 0;
    for (const TensorView *t : ckpt.tensors()) {
      auto it = expected.find(t->name);
      if (it == expected.end()) {
        // The hub's GPT-2 checkpoints also store each layer's causal mask.
        EXPECT_NE(t->name.find(".attn.bias"), std::string::npos) << t->name;
        continue;
      }
      ++matched;
      EXPECT_EQ(t->shape, it->second) << t->name;
      // Quantized values are in their own types; scales in the config's.
      EXPECT_EQ(t->dtype, dtypes.count(t->name) ? dtypes[t->name] : dtype) << t->name;
    }
    EXPECT_EQ(matched, expected.size());
  }
}

TEST_F(FixtureCheckpoints, ShardedEqualsSingleFile) {
  Checkpoint single = Checkpoint::open((kFixtures / "llama").string());
  Checkpoint sharded = Checkpoint::open((kFixtures / "llama_sharded").string());
  ASSERT_EQ(single.tensors().size(), sharded.tensors().size());
  for (const TensorView *t : single.tensors()) {
    const TensorView &s = sharded.tensor(t->name);
    ASSERT_EQ(s.nbytes, t->nbytes) << t->name;
    EXPECT_EQ(std::memcmp(s.data, t->data, t->nbytes), 0) << t->name;
  }
}

// llama_f16 and llama_bf16 hold llama's f32 weights rounded by torch; reading
// them through convert_tensor must give exactly our own rounding of llama's.
TEST_F(FixtureCheckpoints, TorchRoundingMatchesOurs) {
  const int seed = read_json(kFixtures / "llama" / "reference.json")["seed"];
  Checkpoint f32 = Checkpoint::open((kFixtures / "llama").string());
  for (const char *variant : {"llama_f16", "llama_bf16"}) {
    SCOPED_TRACE(variant);
    if (read_json(kFixtures / variant / "reference.json")["seed"] != seed)
      GTEST_SKIP() << variant << " was generated from a different seed";
    Checkpoint rounded = Checkpoint::open((kFixtures / variant).string());
    for (const TensorView *t : f32.tensors()) {
      const TensorView &r = rounded.tensor(t->name);
      std::vector<float> original(t->numel()), widened(t->numel());
      convert_tensor(*t, DType::F32, false, original.data());
      convert_tensor(r, DType::F32, false, widened.data());
      for (size_t i = 0; i < original.size(); ++i) {
        const float ours = r.dtype == DType::F16 ? f16_to_f32(f32_to_f16(original[i]))
                                                 : bf16_to_f32(f32_to_bf16(original[i]));
        ASSERT_EQ(widened[i], ours) << t->name << "[" << i << "]";
      }
    }
  }
}

} // namespace
} // namespace llmserve
