// Prefix cache over KV blocks (SGLang's RadixAttention on pages): a radix tree
// whose edges are runs of whole blocks of tokens. A request whose prompt
// starts with a cached prefix reuses those blocks instead of recomputing them.
//
// The cache holds one pool reference on every block in the tree. A request
// using a node locks it, which also locks every ancestor; unlocked nodes are
// therefore whole subtrees that no request holds, and their blocks are
// evictable, least recently used leaf first.
//
// Given a KvEventLog, the cache also keeps each block's chained hash and logs
// the blocks it stores and evicts, for routers that track replicas' caches.
#ifndef LLMSERVE_CORE_RADIX_CACHE_H
#define LLMSERVE_CORE_RADIX_CACHE_H

#include "core/kv_events.h"
#include "core/kv_pool.h"

#include <cstdint>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace llmserve {

struct RadixNode {
  std::vector<int32_t> tokens; // blocks.size() * block_size tokens
  std::vector<int32_t> blocks;
  std::vector<uint64_t> hashes; // chained block hashes, with a KvEventLog
  RadixNode *parent = nullptr;
  uint64_t key = 0; // hash of the first block, the parent's key for this node
  std::unordered_map<uint64_t, std::unique_ptr<RadixNode>> children;
  int32_t lock_count = 0;
  uint64_t last_access = 0;
  bool in_lru = false;
};

class RadixCache {
public:
  // `events`, when given, must outlive the cache.
  explicit RadixCache(KvPool &pool, KvEventLog *events = nullptr);
  ~RadixCache();
  RadixCache(const RadixCache &) = delete;
  RadixCache &operator=(const RadixCache &) = delete;

  // Appends to `blocks` the cached blocks of the longest prefix of
  // tokens[0, num_tokens) made of whole blocks, and returns the node where
  // that prefix ends (the root when nothing matched). Does not lock.
  RadixNode *match_prefix(const int32_t *tokens, int32_t num_tokens,
                          std::vector<int32_t> &blocks);

  // Caches the first `num_blocks` blocks of a sequence: tokens[0,
  // num_blocks * block_size) whose KV is in blocks[0, num_blocks). Where the
  // tree already holds a block for the same tokens, blocks[i] is switched to
  // the cached one and the duplicate released, so equal KV is stored once.
  // Returns the node where the sequence's cached prefix ends. Does not lock.
  RadixNode *insert(const int32_t *tokens, int32_t num_blocks,
                    std::vector<int32_t> &blocks);

  // Locks `node` and its ancestors against eviction (the root never counts).
  void lock(RadixNode *node);
  void unlock(RadixNode *node);

  // Frees up to `num_blocks` unlocked blocks, trimming the least recently
  // used leaves from their ends. Returns the number freed.
  int32_t evict(int32_t num_blocks);

  RadixNode *root() { return &root_; }
  int32_t num_cached_blocks() const { return num_cached_blocks_; }
  int32_t num_evictable_blocks() const { return num_evictable_blocks_; }
  // Tokens asked for and found by match_prefix, for the hit-rate metric.
  uint64_t num_query_tokens() const { return num_query_tokens_; }
  uint64_t num_hit_tokens() const { return num_hit_tokens_; }

  // Calls f(block) for every block in the tree.
  template <typename F> void for_each_block(F &&f) const {
    for_each_node(root_, [&](const RadixNode &n) {
      for (int32_t b : n.blocks)
        f(b);
    });
  }

  // Throws std::logic_error if the tree's shape, counters or LRU order are
  // inconsistent.
  void check_invariants() const;

private:
  template <typename F> static void for_each_node(const RadixNode &n, F &&f) {
    f(n);
    for (const auto &[key, child] : n.children)
      for_each_node(*child, f);
  }
  uint64_t block_key(const int32_t *tokens) const;
  // Whole blocks at the start of `node` equal to tokens, at most max_blocks.
  int32_t matching_blocks(const RadixNode &node, const int32_t *tokens,
                          int32_t max_blocks) const;
  // Cuts `node` after its first `num_blocks` blocks; returns the new head.
  RadixNode *split(RadixNode *node, int32_t num_blocks);
  void touch(RadixNode *node);
  // Puts `node` in or out of the LRU set of evictable leaves as it now is.
  void update_lru(RadixNode *node);
  void remove_leaf(RadixNode *leaf);
  // With a KvEventLog: the chained hashes of `num_blocks` blocks of tokens
  // that follow `parent`'s last block (the root's: the hasher's root).
  std::vector<uint64_t> chain_hashes(const RadixNode *parent, const int32_t *tokens,
                                     int32_t num_blocks) const;

  KvPool &pool_;
  KvEventLog *events_;
  int32_t block_size_;
  RadixNode root_;
  std::set<std::pair<uint64_t, RadixNode *>> lru_; // (last_access, leaf)
  uint64_t clock_ = 0;
  int32_t num_cached_blocks_ = 0;
  int32_t num_evictable_blocks_ = 0;
  uint64_t num_query_tokens_ = 0;
  uint64_t num_hit_tokens_ = 0;
};

} // namespace llmserve

#endif // LLMSERVE_CORE_RADIX_CACHE_H
