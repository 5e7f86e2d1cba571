// The KV cache as the scheduler sees it: `num_blocks` blocks of `block_size`
// token slots, a free list, and a reference count per block so that a prefix
// block shared by several sequences and the radix cache is freed only when
// the last holder lets go. Blocks are handed out one at a time as sequences
// grow, never reserved for a request's max_tokens up front.
#ifndef LLMSERVE_CORE_KV_POOL_H
#define LLMSERVE_CORE_KV_POOL_H

#include <cstdint>
#include <vector>

namespace llmserve {

class KvPool {
public:
  KvPool(int32_t num_blocks, int32_t block_size);

  // How many blocks of `block_size` tokens fit in `budget_bytes` of KV memory
  // at `bytes_per_token` (all layers, K and V). Throws if not even one does.
  static int32_t num_blocks_for_budget(int64_t budget_bytes,
                                       int64_t bytes_per_token,
                                       int32_t block_size);

  // Blocks needed to hold `num_tokens` tokens.
  int32_t blocks_for_tokens(int32_t num_tokens) const {
    return (num_tokens + block_size_ - 1) / block_size_;
  }

  // Takes a free block with reference count 1. Throws std::logic_error when
  // none is free: callers check num_free_blocks() first.
  int32_t allocate();
  void retain(int32_t block);
  // Drops one reference; the block returns to the free list at zero.
  void release(int32_t block);

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t block_size() const { return block_size_; }
  int32_t num_free_blocks() const { return static_cast<int32_t>(free_.size()); }
  int32_t ref_count(int32_t block) const;

  // Throws std::logic_error unless every block is either on the free list
  // exactly once with no reference, or off it with at least one.
  void check_invariants() const;

private:
  void check_block(int32_t block, const char *what) const;

  int32_t block_size_;
  std::vector<int32_t> ref_counts_;
  std::vector<int32_t> free_; // a stack: recently freed blocks are reused first
};

} // namespace llmserve

#endif // LLMSERVE_CORE_KV_POOL_H
