#include "core/radix_cache.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace llmserve {

RadixCache::RadixCache(KvPool &pool, KvEventLog *events)
    : pool_(pool), events_(events), block_size_(pool.block_size()) {}

RadixCache::~RadixCache() { for_each_block([&](int32_t b) { pool_.release(b); }); }

uint64_t RadixCache::block_key(const int32_t *tokens) const {
  // FNV-1a over the block's tokens, finished with a 64-bit mixer. Two distinct
  // first blocks colliding costs a cache miss, never a wrong match: matches
  // compare tokens.
  uint64_t h = 1469598103934665603ull;
  for (int32_t i = 0; i < block_size_; ++i) {
    h ^= static_cast<uint32_t>(tokens[i]);
    h *= 1099511628211ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

int32_t RadixCache::matching_blocks(const RadixNode &node,
                                    const int32_t *tokens,
                                    int32_t max_blocks) const {
  int32_t n = std::min(static_cast<int32_t>(node.blocks.size()), max_blocks);
  size_t block_bytes = sizeof(int32_t) * block_size_;
  int32_t i = 0;
  while (i < n && std::memcmp(node.tokens.data() + size_t(i) * block_size_,
                              tokens + size_t(i) * block_size_,
                              block_bytes) == 0)
    ++i;
  return i;
}

RadixNode *RadixCache::match_prefix(const int32_t *tokens, int32_t num_tokens,
                                    std::vector<int32_t> &blocks) {
  num_query_tokens_ += num_tokens;
  int32_t num_blocks = num_tokens / block_size_;
  RadixNode *node = &root_;
  int32_t i = 0;
  while (i < num_blocks) {
    const int32_t *rest = tokens + size_t(i) * block_size_;
    auto it = node->children.find(block_key(rest));
    if (it == node->children.end())
      break;
    RadixNode *child = it->second.get();
    int32_t m = matching_blocks(*child, rest, num_blocks - i);
    if (m == 0)
      break;
    if (m < static_cast<int32_t>(child->blocks.size()))
      child = split(child, m);
    blocks.insert(blocks.end(), child->blocks.begin(), child->blocks.end());
    touch(child);
    node = child;
    i += m;
  }
  num_hit_tokens_ += uint64_t(i) * block_size_;
  return node;
}

RadixNode *RadixCache::insert(const int32_t *tokens, int32_t num_blocks,
                              std::vector<int32_t> &blocks) {
  RadixNode *node = &root_;
  int32_t i = 0;
  while (i < num_blocks) {
    const int32_t *rest = tokens + size_t(i) * block_size_;
    uint64_t key = block_key(rest);
    auto it = node->children.find(key);
    if (it == node->children.end()) {
      auto leaf = std::make_unique<RadixNode>();
      leaf->tokens.assign(rest, tokens + size_t(num_blocks) * block_size_);
      leaf->blocks.assign(blocks.begin() + i, blocks.begin() + num_blocks);
      for (int32_t b : leaf->blocks)
        pool_.retain(b);
      leaf->parent = node;
      leaf->key = key;
      if (events_) {
        leaf->hashes = chain_hashes(node, rest, num_blocks - i);
        events_->stored(leaf->hashes,
                        node == &root_ ? std::nullopt : std::optional(node->hashes.back()),
                        leaf->tokens);
      }
      int32_t added = num_blocks - i;
      num_cached_blocks_ += added;
      num_evictable_blocks_ += added;
      leaf->last_access = ++clock_;
      RadixNode *raw = leaf.get();
      node->children.emplace(key, std::move(leaf));
      update_lru(node);
      update_lru(raw);
      return raw;
    }
    RadixNode *child = it->second.get();
    int32_t m = matching_blocks(*child, rest, num_blocks - i);
    if (m == 0)
      return node; // first-block hash collision: cache no further
    for (int32_t k = 0; k < m; ++k) {
      int32_t cached = child->blocks[k];
      int32_t &own = blocks[i + k];
      if (own != cached) {
        pool_.retain(cached);
        pool_.release(own);
        own = cached;
      }
    }
    if (m < static_cast<int32_t>(child->blocks.size()))
      child = split(child, m);
    touch(child);
    node = child;
    i += m;
  }
  return node;
}

RadixNode *RadixCache::split(RadixNode *node, int32_t num_blocks) {
  RadixNode *parent = node->parent;
  auto head = std::make_unique<RadixNode>();
  size_t head_tokens = size_t(num_blocks) * block_size_;
  head->tokens.assign(node->tokens.begin(), node->tokens.begin() + head_tokens);
  head->blocks.assign(node->blocks.begin(), node->blocks.begin() + num_blocks);
  if (events_) {
    head->hashes.assign(node->hashes.begin(), node->hashes.begin() + num_blocks);
    node->hashes.erase(node->hashes.begin(), node->hashes.begin() + num_blocks);
  }
  head->parent = parent;
  head->key = node->key;
  // Whatever locked `node` locked it through its ancestors, now through head.
  head->lock_count = node->lock_count;
  head->last_access = node->last_access;
  node->tokens.erase(node->tokens.begin(), node->tokens.begin() + head_tokens);
  node->blocks.erase(node->blocks.begin(), node->blocks.begin() + num_blocks);

  auto slot = parent->children.find(node->key);
  std::unique_ptr<RadixNode> tail = std::move(slot->second);
  node->key = block_key(node->tokens.data());
  node->parent = head.get();
  head->children.emplace(node->key, std::move(tail));
  RadixNode *raw = head.get();
  slot->second = std::move(head);
  return raw;
}

void RadixCache::touch(RadixNode *node) {
  if (node->in_lru)
    lru_.erase({node->last_access, node});
  node->last_access = ++clock_;
  if (node->in_lru)
    lru_.emplace(node->last_access, node);
}

void RadixCache::update_lru(RadixNode *node) {
  bool evictable = node != &root_ && node->children.empty() &&
                   node->lock_count == 0;
  if (evictable == node->in_lru)
    return;
  if (evictable)
    lru_.emplace(node->last_access, node);
  else
    lru_.erase({node->last_access, node});
  node->in_lru = evictable;
}

void RadixCache::lock(RadixNode *node) {
  for (; node != &root_; node = node->parent) {
    if (node->lock_count++ == 0) {
      num_evictable_blocks_ -= static_cast<int32_t>(node->blocks.size());
      update_lru(node);
    }
  }
}

void RadixCache::unlock(RadixNode *node) {
  for (; node != &root_; node = node->parent) {
    if (node->lock_count <= 0)
      throw std::logic_error("RadixCache::unlock: node is not locked");
    if (--node->lock_count == 0) {
      num_evictable_blocks_ += static_cast<int32_t>(node->blocks.size());
      update_lru(node);
    }
  }
}

int32_t RadixCache::evict(int32_t num_blocks) {
  int32_t freed = 0;
  while (freed < num_blocks && !lru_.empty()) {
    RadixNode *leaf = lru_.begin()->second;
    int32_t trim = std::min(num_blocks - freed,
                            static_cast<int32_t>(leaf->blocks.size()));
    if (events_) {
      events_->removed({leaf->hashes.end() - trim, leaf->hashes.end()});
      leaf->hashes.resize(leaf->hashes.size() - trim);
    }
    for (int32_t k = 0; k < trim; ++k) {
      pool_.release(leaf->blocks.back());
      leaf->blocks.pop_back();
    }
    leaf->tokens.resize(leaf->blocks.size() * size_t(block_size_));
    freed += trim;
    num_cached_blocks_ -= trim;
    num_evictable_blocks_ -= trim;
    if (leaf->blocks.empty())
      remove_leaf(leaf);
  }
  return freed;
}

std::vector<uint64_t> RadixCache::chain_hashes(const RadixNode *parent, const int32_t *tokens,
                                               int32_t num_blocks) const {
  const BlockHasher &hasher = events_->hasher();
  uint64_t hash = parent == &root_ ? hasher.root() : parent->hashes.back();
  std::vector<uint64_t> hashes;
  for (int32_t k = 0; k < num_blocks; ++k)
    hashes.push_back(hash = hasher.chain(hash, tokens + size_t(k) * block_size_, block_size_));
  return hashes;
}

void RadixCache::remove_leaf(RadixNode *leaf) {
  lru_.erase({leaf->last_access, leaf});
  RadixNode *parent = leaf->parent;
  parent->children.erase(leaf->key);
  update_lru(parent);
}

void RadixCache::check_invariants() const {
  int32_t cached = 0, evictable = 0;
  size_t leaves = 0;
  auto fail = [](const std::string &what) {
    throw std::logic_error("RadixCache: " + what);
  };
  for_each_node(root_, [&](const RadixNode &n) {
    if (&n == &root_)
      return;
    if (n.blocks.empty())
      fail("a node holds no block");
    if (n.tokens.size() != n.blocks.size() * size_t(block_size_))
      fail("a node's tokens do not fill its blocks");
    if (n.key != block_key(n.tokens.data()))
      fail("a node's key is not the hash of its first block");
    if (events_ && n.hashes != chain_hashes(n.parent, n.tokens.data(),
                                            static_cast<int32_t>(n.blocks.size())))
      fail("a node's chained block hashes are wrong");
    int32_t child_locks = 0;
    for (const auto &[key, child] : n.children) {
      if (child->parent != &n)
        fail("a child's parent pointer is wrong");
      child_locks += child->lock_count;
    }
    if (n.lock_count < child_locks)
      fail("a node is locked less than its children together");
    for (int32_t b : n.blocks) {
      if (pool_.ref_count(b) < 1)
        fail("cached block " + std::to_string(b) + " is free in the pool");
      // Requests lock what they hold, so only the cache holds unlocked blocks.
      if (n.lock_count == 0 && pool_.ref_count(b) != 1)
        fail("block " + std::to_string(b) +
             " of an unlocked node is also held outside the cache");
    }
    cached += static_cast<int32_t>(n.blocks.size());
    if (n.lock_count == 0)
      evictable += static_cast<int32_t>(n.blocks.size());
    bool should_be_in_lru = n.children.empty() && n.lock_count == 0;
    if (n.in_lru != should_be_in_lru ||
        (n.in_lru && !lru_.count({n.last_access, const_cast<RadixNode *>(&n)})))
      fail("the LRU set of evictable leaves is out of date");
    leaves += n.in_lru;
  });
  if (lru_.size() != leaves)
    fail("the LRU set holds nodes no longer in the tree");
  if (cached != num_cached_blocks_ || evictable != num_evictable_blocks_)
    fail("block counters are out of date: " + std::to_string(cached) +
         " cached, " + std::to_string(evictable) + " evictable, counted " +
         std::to_string(num_cached_blocks_) + " and " +
         std::to_string(num_evictable_blocks_));
}

} // namespace llmserve
