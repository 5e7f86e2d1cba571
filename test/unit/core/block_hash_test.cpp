#include "core/block_hash.h"

#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <vector>

namespace llmserve {
namespace {

// Known answers from an independent implementation, Debian's python3-cbor2
// and hashlib:
//   h = lambda x: int.from_bytes(
//       hashlib.sha256(cbor2.dumps(x, canonical=True)).digest()[-8:], "big")
//   root = h(seed); first = h([root, list(range(16)), None]); ...
std::vector<int32_t> first_block() {
  std::vector<int32_t> tokens(16);
  std::iota(tokens.begin(), tokens.end(), 0);
  return tokens;
}
// Token ids that take every CBOR integer width up to 4 bytes.
const std::vector<int32_t> kWideBlock = {100000, 7, 300, 65536, 2147483647, 23, 24, 255,
                                         256,    65535, 1, 2, 3, 4, 5, 6};

TEST(BlockHashTest, MatchesCborSha256KnownAnswers) {
  struct Case {
    const char *seed;
    uint64_t root, first, second;
  };
  for (const Case &c : {Case{"", 0x0ad38662763f13d3, 0x9d58b66ac86a175a, 0xb0d1f3d5613cc7a7},
                        Case{"0", 0xf8b55adff2e61c3e, 0xb39a5ee36b409fdc, 0x19bcdde5f72e215f},
                        Case{"llmserve", 0x60b202c036320a07, 0x7432457ce22aef1f,
                             0xbaf77ca9a6de7ec0}}) {
    BlockHasher hasher(c.seed);
    EXPECT_EQ(hasher.root(), c.root) << c.seed;
    std::vector<int32_t> block = first_block();
    uint64_t first = hasher.chain(hasher.root(), block.data(), 16);
    EXPECT_EQ(first, c.first) << c.seed;
    EXPECT_EQ(hasher.chain(first, kWideBlock.data(), 16), c.second) << c.seed;
  }
}

TEST(BlockHashTest, DependsOnTheParentAndEveryToken) {
  BlockHasher hasher("");
  std::vector<int32_t> block = first_block();
  uint64_t a = hasher.chain(hasher.root(), block.data(), 16);
  EXPECT_NE(hasher.chain(a, block.data(), 16), a);
  block[15] = 16;
  EXPECT_NE(hasher.chain(hasher.root(), block.data(), 16), a);
  EXPECT_NE(hasher.chain(hasher.root(), block.data(), 15), a);
}

TEST(BlockHashTest, RefusesNegativeTokenIds) {
  BlockHasher hasher("");
  const int32_t tokens[] = {1, -2};
  EXPECT_THROW(hasher.chain(hasher.root(), tokens, 2), std::invalid_argument);
}

} // namespace
} // namespace llmserve
