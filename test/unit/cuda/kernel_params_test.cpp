#include "cuda/kernel_params.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace llmserve::cuda {
namespace {

using ::testing::ElementsAre;

TEST(KernelParams, PointersInBindingOrderThenInt64PushConstants) {
  const std::vector<uint64_t> addresses = {0x7000'0000'0000, 0x7000'0000'0100,
                                           0x7000'0000'0200};
  KernelParams p;
  p.assign({2, 0, 2}, addresses, {-1, 7});
  EXPECT_THAT(p.values(), ElementsAre(0x7000'0000'0200u, 0x7000'0000'0000u, 0x7000'0000'0200u,
                                      0xffff'ffff'ffff'ffffu, 7u));
  // cuLaunchKernelEx reads each parameter through its pointer: an 8-byte
  // device pointer, or an int64 with its sign.
  void **params = p.pointers();
  uint64_t pointer = 0;
  std::memcpy(&pointer, params[1], 8);
  EXPECT_EQ(pointer, 0x7000'0000'0000u);
  int64_t constant = 0;
  std::memcpy(&constant, params[3], 8);
  EXPECT_EQ(constant, -1);
  std::memcpy(&constant, params[4], 8);
  EXPECT_EQ(constant, 7);
  for (size_t i = 1; i < 5; ++i) // consecutive 8-byte slots
    EXPECT_EQ(static_cast<char *>(params[i]) - static_cast<char *>(params[i - 1]), 8);
}

TEST(KernelParams, ReassignReplacesEverything) {
  KernelParams p;
  p.assign({0, 1}, {10, 20}, {1, 2, 3});
  p.assign({1}, {10, 20}, {});
  EXPECT_THAT(p.values(), ElementsAre(20u));
  EXPECT_EQ(*static_cast<uint64_t *>(p.pointers()[0]), 20u);
}

} // namespace
} // namespace llmserve::cuda
