// The chained hash of a KV block that prefix-aware routers compute from a
// prompt's tokens to find the replica that holds its blocks: the last 8 bytes
// (big-endian) of SHA-256 over the canonical CBOR encoding of
//
//   [parent hash, [token ids of the block], null]
//
// where the first block's parent is the same digest of the CBOR text string
// `seed`. This is the key llm-d's KV-cache indexer builds for each whole
// block of a prompt (its HashSeed; vLLM's PYTHONHASHSEED), and that vLLM
// publishes with 64-bit block hashes; docs/scaling.md.
#ifndef LLMSERVE_CORE_BLOCK_HASH_H
#define LLMSERVE_CORE_BLOCK_HASH_H

#include <cstdint>
#include <string_view>

namespace llmserve {

class BlockHasher {
public:
  explicit BlockHasher(std::string_view seed);

  // The parent hash of a sequence's first block.
  uint64_t root() const { return root_; }
  // The hash of the block tokens[0, num_tokens) that follows `parent`.
  uint64_t chain(uint64_t parent, const int32_t *tokens, int32_t num_tokens) const;

private:
  uint64_t root_;
};

} // namespace llmserve

#endif // LLMSERVE_CORE_BLOCK_HASH_H
