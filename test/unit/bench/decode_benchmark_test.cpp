#include "bench/decode_benchmark.h"

#include <gtest/gtest.h>

#include <cmath>

namespace llmserve::bench {
namespace {

Buffer weight(std::vector<int64_t> shape, int64_t stacked = 0) {
  Buffer b{BufferKind::Weight, "w", DType::F32, {}};
  for (int64_t d : shape)
    b.shape.push_back(Expression::constant(d));
  b.stacked = stacked;
  return b;
}

// A dense [4, 8] weight (128 bytes), 4 stacked experts of [2, 8] (256), and
// a KV cache of 10 bytes a token.
Manifest moe_manifest(int64_t experts_per_token) {
  Manifest m;
  m.model = ModelConfig{};
  m.model->num_experts = 4;
  m.model->num_experts_per_tok = experts_per_token;
  m.kv_cache = KvCacheLayout{};
  m.kv_cache->bytes_per_token = 10;
  m.buffers = {weight({4, 8}), weight({4, 2, 8}, 4)};
  return m;
}

TEST(DecodeStepBytes, ReadsTheChosenExpertsAndTheKvCache) {
  // Batch 1: k of the 4 experts, exactly.
  EXPECT_EQ(decode_step_bytes(moe_manifest(1), 1, 0), 128 + 64);
  EXPECT_EQ(decode_step_bytes(moe_manifest(2), 1, 3), 128 + 128 + 30);
  // Batch 2, one expert each: 4 (1 - (3/4)^2) = 1.75 experts on average.
  EXPECT_EQ(decode_step_bytes(moe_manifest(1), 2, 0), 128 + 112);
  // Every expert, whatever the batch.
  EXPECT_EQ(decode_step_bytes(moe_manifest(4), 3, 0), 128 + 256);
  // A dense model reads all of every weight.
  Manifest dense = moe_manifest(1);
  dense.model->num_experts = dense.model->num_experts_per_tok = 0;
  dense.buffers[1].stacked = 0;
  EXPECT_EQ(decode_step_bytes(dense, 5, 2), 128 + 256 + 100);
}

TEST(DecodeStepBytes, ReadsTheRowsOfAnEmbeddingTableItsTokensLookUp) {
  Manifest m;
  m.kv_cache = KvCacheLayout{};
  // A [100, 8] table (3200 bytes) that only an embedding dispatch reads, and
  // a [4, 8] weight that a linear reads.
  m.buffers = {weight({100, 8}), weight({4, 8})};
  m.kernels = {Kernel{"d0_embedding", "llmserve_d0_embedding"},
               Kernel{"d1_linear", "llmserve_d1_linear"}};
  m.entry_points = {EntryPoint{"step", {}, {}, {Dispatch{0, {0}, {}, {}}, Dispatch{1, {1}, {}, {}}}}};
  EXPECT_EQ(weight_bytes(m), 3200 + 128);
  EXPECT_EQ(decode_step_bytes(m, 1, 0), 32 + 128);
  EXPECT_EQ(decode_step_bytes(m, 5, 0), 160 + 128);
  // Tied: the LM head's linear reads the whole table.
  m.entry_points[0].dispatches[1].bindings = {0, 1};
  EXPECT_EQ(decode_step_bytes(m, 1, 0), 3200 + 128);
}

} // namespace
} // namespace llmserve::bench
