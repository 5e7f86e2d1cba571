#include "core/kv_pool.h"

#include <stdexcept>
#include <string>

namespace llmserve {

KvPool::KvPool(int32_t num_blocks, int32_t block_size)
    : block_size_(block_size) {
  if (num_blocks < 1)
    throw std::invalid_argument("KvPool: num_blocks = " +
                                std::to_string(num_blocks) + ", must be >= 1");
  if (block_size < 1)
    throw std::invalid_argument("KvPool: block_size = " +
                                std::to_string(block_size) + ", must be >= 1");
  ref_counts_.assign(num_blocks, 0);
  free_.reserve(num_blocks);
  // Highest first so that allocation hands out block 0 first.
  for (int32_t b = num_blocks - 1; b >= 0; --b)
    free_.push_back(b);
}

int32_t KvPool::num_blocks_for_budget(int64_t budget_bytes,
                                      int64_t bytes_per_token,
                                      int32_t block_size) {
  if (bytes_per_token < 1 || block_size < 1)
    throw std::invalid_argument(
        "KV cache sizing: bytes_per_token = " + std::to_string(bytes_per_token) +
        " and block_size = " + std::to_string(block_size) +
        " must both be >= 1");
  int64_t block_bytes = bytes_per_token * block_size;
  int64_t blocks = budget_bytes / block_bytes;
  if (blocks < 1)
    throw std::invalid_argument(
        "KV cache budget of " + std::to_string(budget_bytes) +
        " bytes holds no block of " + std::to_string(block_bytes) + " bytes");
  if (blocks > INT32_MAX)
    blocks = INT32_MAX;
  return static_cast<int32_t>(blocks);
}

int32_t KvPool::allocate() {
  if (free_.empty())
    throw std::logic_error("KvPool::allocate: no free block");
  int32_t block = free_.back();
  free_.pop_back();
  ref_counts_[block] = 1;
  return block;
}

void KvPool::retain(int32_t block) {
  check_block(block, "retain");
  if (ref_counts_[block] == 0)
    throw std::logic_error("KvPool::retain: block " + std::to_string(block) +
                           " is free");
  ++ref_counts_[block];
}

void KvPool::release(int32_t block) {
  check_block(block, "release");
  if (ref_counts_[block] == 0)
    throw std::logic_error("KvPool::release: block " + std::to_string(block) +
                           " is already free");
  if (--ref_counts_[block] == 0)
    free_.push_back(block);
}

int32_t KvPool::ref_count(int32_t block) const {
  check_block(block, "ref_count");
  return ref_counts_[block];
}

void KvPool::check_block(int32_t block, const char *what) const {
  if (block < 0 || block >= num_blocks())
    throw std::out_of_range("KvPool::" + std::string(what) + ": block " +
                            std::to_string(block) + " outside [0, " +
                            std::to_string(num_blocks()) + ")");
}

void KvPool::check_invariants() const {
  std::vector<bool> on_free_list(ref_counts_.size(), false);
  for (int32_t b : free_) {
    check_block(b, "check_invariants");
    if (on_free_list[b])
      throw std::logic_error("KvPool: block " + std::to_string(b) +
                             " is on the free list twice");
    on_free_list[b] = true;
  }
  for (int32_t b = 0; b < num_blocks(); ++b) {
    if (ref_counts_[b] < 0 || (ref_counts_[b] == 0) != on_free_list[b])
      throw std::logic_error(
          "KvPool: block " + std::to_string(b) + " has reference count " +
          std::to_string(ref_counts_[b]) +
          (on_free_list[b] ? " but is on the free list"
                           : " but is not on the free list"));
  }
}

} // namespace llmserve
