#include "core/kv_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

namespace llmserve {
namespace {

using ::testing::HasSubstr;

template <typename F> std::string error_of(F &&f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "no exception";
}

TEST(KvPool, HandsOutEveryBlockOnceThenRefuses) {
  KvPool pool(4, 16);
  std::set<int32_t> blocks;
  for (int i = 0; i < 4; ++i)
    blocks.insert(pool.allocate());
  EXPECT_EQ(blocks, (std::set<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(pool.num_free_blocks(), 0);
  EXPECT_THAT(error_of([&] { pool.allocate(); }), HasSubstr("no free block"));
  pool.check_invariants();
}

TEST(KvPool, SharedBlockIsFreedByItsLastHolder) {
  KvPool pool(2, 16);
  int32_t b = pool.allocate();
  pool.retain(b);
  EXPECT_EQ(pool.ref_count(b), 2);
  pool.release(b);
  EXPECT_EQ(pool.num_free_blocks(), 1);
  pool.release(b);
  EXPECT_EQ(pool.num_free_blocks(), 2);
  EXPECT_EQ(pool.ref_count(b), 0);
  EXPECT_EQ(pool.allocate(), b) << "the most recently freed block is reused first";
  pool.check_invariants();
}

TEST(KvPool, RejectsMisuseWithTheBlockNamed) {
  KvPool pool(2, 16);
  EXPECT_THAT(error_of([&] { pool.release(1); }),
              HasSubstr("block 1 is already free"));
  EXPECT_THAT(error_of([&] { pool.retain(0); }), HasSubstr("block 0 is free"));
  EXPECT_THAT(error_of([&] { pool.retain(2); }),
              HasSubstr("block 2 outside [0, 2)"));
  EXPECT_THAT(error_of([&] { pool.ref_count(-1); }),
              HasSubstr("block -1 outside"));
  EXPECT_THAT(error_of([] { KvPool(0, 16); }), HasSubstr("num_blocks = 0"));
  EXPECT_THAT(error_of([] { KvPool(8, 0); }), HasSubstr("block_size = 0"));
}

TEST(KvPool, SizesFromMemoryBudget) {
  // TinyLlama: 2 * 22 layers * 4 kv heads * 64 dims * 4 bytes.
  int64_t bytes_per_token = 2 * 22 * 4 * 64 * 4;
  int64_t block_bytes = bytes_per_token * 16;
  EXPECT_EQ(KvPool::num_blocks_for_budget(1ll << 30, bytes_per_token, 16),
            (1ll << 30) / block_bytes);
  EXPECT_EQ(KvPool::num_blocks_for_budget(block_bytes * 3 - 1, bytes_per_token, 16), 2);
  EXPECT_THAT(error_of([&] {
                KvPool::num_blocks_for_budget(block_bytes - 1, bytes_per_token, 16);
              }),
              HasSubstr("holds no block of 720896 bytes"));
  EXPECT_THAT(error_of([] { KvPool::num_blocks_for_budget(1 << 20, 0, 16); }),
              HasSubstr("bytes_per_token = 0"));
}

TEST(KvPool, BlocksForTokensRoundsUp) {
  KvPool pool(8, 16);
  EXPECT_EQ(pool.blocks_for_tokens(0), 0);
  EXPECT_EQ(pool.blocks_for_tokens(1), 1);
  EXPECT_EQ(pool.blocks_for_tokens(16), 1);
  EXPECT_EQ(pool.blocks_for_tokens(17), 2);
}

} // namespace
} // namespace llmserve
