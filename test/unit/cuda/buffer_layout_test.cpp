#include "cuda/buffer_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace llmserve::cuda {
namespace {

using ::testing::ElementsAre;

TEST(BufferLayout, ArraysBackToBackOn256Bytes) {
  const BufferLayout l = BufferLayout::of({12, 0, 256, 1, 300});
  EXPECT_THAT(l.offsets, ElementsAre(0u, 256u, 256u, 512u, 768u));
  EXPECT_THAT(l.sizes, ElementsAre(12u, 0u, 256u, 1u, 300u));
  EXPECT_EQ(l.total, 768u + 300u);
  EXPECT_EQ(BufferLayout::of({}).total, 0u);
}

TEST(BufferLayout, PacksEachArrayAtItsOffset) {
  const std::vector<int32_t> a = {1, 2, 3};
  const std::vector<float> b = {0.5f};
  const std::vector<int64_t> c = {-7, 8};
  const BufferLayout l = BufferLayout::of({12, 4, 0, 16});
  const void *sources[] = {a.data(), b.data(), nullptr, c.data()};
  std::vector<uint8_t> staging(l.total, 0xee);
  pack_arrays(l, sources, staging.data());
  EXPECT_EQ(std::memcmp(staging.data(), a.data(), 12), 0);
  EXPECT_EQ(staging[12], 0xee); // the gap is left alone
  EXPECT_EQ(std::memcmp(staging.data() + 256, b.data(), 4), 0);
  EXPECT_EQ(std::memcmp(staging.data() + 512, c.data(), 16), 0);
}

} // namespace
} // namespace llmserve::cuda
