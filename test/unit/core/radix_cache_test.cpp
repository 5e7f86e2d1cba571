#include "core/radix_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

namespace llmserve {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

constexpr int32_t kBlock = 4;

std::vector<int32_t> seq(int32_t first, int32_t n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A sequence as a request holds it: its tokens and one block per 4 tokens.
struct Holder {
  Holder(KvPool &pool, std::vector<int32_t> tokens) : pool(pool), tokens(std::move(tokens)) {
    for (size_t i = 0; i < this->tokens.size() / kBlock; ++i)
      blocks.push_back(pool.allocate());
  }
  ~Holder() { release_all(); }
  // The request finished: only the cache may still hold its blocks.
  void release_all() {
    for (int32_t b : blocks)
      pool.release(b);
    blocks.clear();
  }
  int32_t num_blocks() const { return static_cast<int32_t>(blocks.size()); }
  KvPool &pool;
  std::vector<int32_t> tokens;
  std::vector<int32_t> blocks;
};

class RadixCacheTest : public ::testing::Test {
protected:
  KvPool pool{64, kBlock};
  RadixCache cache{pool};

  std::vector<int32_t> match(const std::vector<int32_t> &tokens) {
    std::vector<int32_t> blocks;
    cache.match_prefix(tokens.data(), static_cast<int32_t>(tokens.size()), blocks);
    return blocks;
  }
  // Unlocked, unlike the scheduler: check_invariants() holds again once the
  // holder releases its blocks.
  RadixNode *insert(Holder &h) {
    return cache.insert(h.tokens.data(), h.num_blocks(), h.blocks);
  }
};

TEST_F(RadixCacheTest, EmptyCacheMatchesNothing) {
  EXPECT_THAT(match(seq(0, 12)), IsEmpty());
  EXPECT_EQ(cache.num_query_tokens(), 12u);
  EXPECT_EQ(cache.num_hit_tokens(), 0u);
}

TEST_F(RadixCacheTest, MatchesLongestWholeBlockPrefix) {
  Holder a(pool, seq(0, 12));
  insert(a);
  EXPECT_EQ(cache.num_cached_blocks(), 3);
  EXPECT_THAT(match(seq(0, 12)), ElementsAreArray(a.blocks));
  // A partial last block is never matched.
  EXPECT_THAT(match(seq(0, 11)), ElementsAre(a.blocks[0], a.blocks[1]));
  // Diverging inside the third block matches the first two.
  std::vector<int32_t> diverging = seq(0, 12);
  diverging[9] = 99;
  EXPECT_THAT(match(diverging), ElementsAre(a.blocks[0], a.blocks[1]));
  EXPECT_THAT(match(concat(seq(0, 12), seq(50, 8))), ElementsAreArray(a.blocks));
  EXPECT_THAT(match(seq(1, 12)), IsEmpty());
  a.release_all();
  cache.check_invariants();
  EXPECT_EQ(cache.num_hit_tokens(), 12u + 8u + 8u + 12u);
}

TEST_F(RadixCacheTest, BranchesShareTheirCommonPrefix) {
  Holder a(pool, concat(seq(0, 8), seq(100, 8)));
  Holder b(pool, concat(seq(0, 8), seq(200, 8)));
  insert(a);
  insert(b);
  // b's first two blocks were already cached: b now holds a's.
  EXPECT_EQ(b.blocks[0], a.blocks[0]);
  EXPECT_EQ(b.blocks[1], a.blocks[1]);
  EXPECT_EQ(cache.num_cached_blocks(), 6);
  EXPECT_THAT(match(b.tokens), ElementsAreArray(b.blocks));
  EXPECT_THAT(match(a.tokens), ElementsAreArray(a.blocks));
  EXPECT_THAT(match(concat(seq(0, 8), seq(300, 8))), ElementsAre(a.blocks[0], a.blocks[1]));
}

TEST_F(RadixCacheTest, InsertingTwiceStoresEqualKvOnce) {
  Holder a(pool, seq(0, 8));
  Holder b(pool, seq(0, 8)); // computed the same prefix concurrently
  insert(a);
  int32_t free_before = pool.num_free_blocks();
  std::vector<int32_t> duplicates = b.blocks;
  RadixNode *node = insert(b);
  EXPECT_EQ(b.blocks, a.blocks);
  EXPECT_EQ(pool.num_free_blocks(), free_before + 2) << "b's duplicates were freed";
  for (int32_t d : duplicates)
    EXPECT_EQ(pool.ref_count(d), 0);
  EXPECT_EQ(pool.ref_count(a.blocks[0]), 3); // a, b and the cache
  EXPECT_EQ(node->blocks, a.blocks);
}

TEST_F(RadixCacheTest, EvictsLeastRecentlyUsedLeafFromItsEnd) {
  Holder a(pool, seq(0, 8));
  Holder b(pool, seq(100, 8));
  insert(a);
  insert(b);
  std::vector<int32_t> a_blocks = a.blocks, b_blocks = b.blocks;
  a.release_all();
  b.release_all();
  match(seq(0, 8)); // a is now the most recently used
  EXPECT_EQ(cache.num_evictable_blocks(), 4);
  EXPECT_EQ(cache.evict(1), 1);
  EXPECT_EQ(pool.ref_count(b_blocks[1]), 0) << "b's last block went first";
  EXPECT_THAT(match(seq(100, 8)), ElementsAre(b_blocks[0]));
  EXPECT_THAT(match(seq(0, 8)), ElementsAreArray(a_blocks));
  EXPECT_EQ(cache.evict(10), 3);
  EXPECT_EQ(cache.num_cached_blocks(), 0);
  EXPECT_EQ(pool.num_free_blocks(), 64);
  cache.check_invariants();
}

TEST_F(RadixCacheTest, EvictionWalksUpThroughEmptiedParents) {
  Holder a(pool, concat(seq(0, 4), seq(100, 4)));
  Holder b(pool, concat(seq(0, 4), seq(200, 4)));
  insert(a);
  insert(b);
  int32_t shared = a.blocks[0];
  a.release_all();
  b.release_all();
  EXPECT_EQ(cache.num_evictable_blocks(), 3);
  EXPECT_EQ(cache.evict(2), 2); // the two leaves
  EXPECT_THAT(match(a.tokens), ElementsAre(shared));
  EXPECT_EQ(cache.evict(5), 1); // their parent, a leaf now
  EXPECT_EQ(pool.num_free_blocks(), 64);
  EXPECT_TRUE(cache.root()->children.empty());
  cache.check_invariants();
}

TEST_F(RadixCacheTest, LockedPathsAreNotEvicted) {
  Holder a(pool, seq(0, 12));
  RadixNode *node = insert(a);
  cache.lock(node);
  std::vector<int32_t> blocks = a.blocks;
  a.release_all();
  EXPECT_EQ(cache.num_evictable_blocks(), 0);
  EXPECT_EQ(cache.evict(3), 0);
  // Matching a shorter prefix splits the node; the lock covers both halves.
  EXPECT_THAT(match(seq(0, 4)), ElementsAre(blocks[0]));
  EXPECT_EQ(cache.evict(3), 0);
  cache.check_invariants();
  cache.unlock(node);
  EXPECT_EQ(cache.num_evictable_blocks(), 3);
  EXPECT_EQ(cache.evict(3), 3);
  EXPECT_EQ(pool.num_free_blocks(), 64);
}

TEST_F(RadixCacheTest, UnlockingAnUnlockedNodeThrows) {
  Holder a(pool, seq(0, 4));
  RadixNode *node = insert(a);
  EXPECT_THROW(cache.unlock(node), std::logic_error);
}

TEST_F(RadixCacheTest, DestructionReturnsItsBlocksToThePool) {
  {
    RadixCache scoped(pool);
    Holder a(pool, seq(0, 8));
    scoped.insert(a.tokens.data(), a.num_blocks(), a.blocks);
    EXPECT_EQ(pool.ref_count(a.blocks[0]), 2);
  }
  EXPECT_EQ(pool.num_free_blocks(), 64);
}

// Random inserts, matches, locks and evictions against a plain model of
// which prefixes are cached.
TEST_F(RadixCacheTest, RandomOperationsKeepTheTreeConsistent) {
  std::mt19937 rng(7);
  std::vector<std::vector<int32_t>> prefixes;
  for (int i = 0; i < 4; ++i)
    prefixes.push_back(seq(1000 * i, 4 * (1 + i)));
  struct Locked {
    RadixNode *node;
    std::vector<int32_t> blocks;
  };
  std::vector<Locked> locked;
  for (int step = 0; step < 2000; ++step) {
    int op = rng() % 4;
    if (op == 0 && pool.num_free_blocks() >= 8) {
      auto tokens = prefixes[rng() % prefixes.size()];
      for (int i = 0, n = 4 * (rng() % 3); i < n; ++i)
        tokens.push_back(rng() % 3);
      tokens.resize(tokens.size() / kBlock * kBlock);
      Holder h(pool, tokens);
      RadixNode *node = cache.insert(h.tokens.data(), h.num_blocks(), h.blocks);
      ASSERT_THAT(match(h.tokens), ElementsAreArray(h.blocks));
      if (rng() % 2) {
        cache.lock(node);
        for (int32_t b : h.blocks)
          pool.retain(b);
        locked.push_back({node, h.blocks});
      }
    } else if (op == 1 && !locked.empty()) {
      size_t i = rng() % locked.size();
      cache.unlock(locked[i].node);
      for (int32_t b : locked[i].blocks)
        pool.release(b);
      locked.erase(locked.begin() + i);
    } else if (op == 2) {
      int32_t want = rng() % 6;
      int32_t evictable = cache.num_evictable_blocks();
      ASSERT_EQ(cache.evict(want), std::min(want, evictable));
    } else {
      match(prefixes[rng() % prefixes.size()]);
    }
    cache.check_invariants();
    pool.check_invariants();
    int32_t held = pool.num_blocks() - pool.num_free_blocks();
    ASSERT_GE(held, cache.num_cached_blocks());
  }
}

// With a KvEventLog: what the cache logs, replayed, is what it holds.
class RadixCacheEventsTest : public ::testing::Test {
protected:
  KvPool pool{64, kBlock};
  KvEventLog log{"seed"};
  RadixCache cache{pool, &log};

  RadixNode *insert(Holder &h) {
    return cache.insert(h.tokens.data(), h.num_blocks(), h.blocks);
  }
  uint64_t chain(uint64_t parent, const std::vector<int32_t> &tokens, size_t block) {
    return log.hasher().chain(parent, tokens.data() + block * kBlock, kBlock);
  }
};

TEST_F(RadixCacheEventsTest, StoredBlocksCarryChainedHashesAndTheirParent) {
  Holder a(pool, seq(0, 8));
  insert(a);
  std::vector<KvEvent> events = log.take();
  ASSERT_EQ(events.size(), 1u);
  uint64_t h0 = chain(log.hasher().root(), a.tokens, 0), h1 = chain(h0, a.tokens, 1);
  EXPECT_EQ(events[0].kind, KvEvent::Kind::kBlockStored);
  EXPECT_THAT(events[0].block_hashes, ElementsAre(h0, h1));
  EXPECT_EQ(events[0].parent_block_hash, std::nullopt);
  EXPECT_THAT(events[0].token_ids, ElementsAreArray(a.tokens));

  // A branch after the first block splits the node (no event) and stores
  // one block whose parent is the shared one.
  Holder b(pool, concat(seq(0, 4), seq(50, 4)));
  insert(b);
  events = log.take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_THAT(events[0].block_hashes, ElementsAre(chain(h0, b.tokens, 1)));
  EXPECT_EQ(events[0].parent_block_hash, h0);
  EXPECT_THAT(events[0].token_ids, ElementsAreArray(seq(50, 4)));

  // Inserting what is cached already logs nothing.
  Holder again(pool, seq(0, 8));
  insert(again);
  EXPECT_THAT(log.take(), IsEmpty());
  a.release_all();
  b.release_all();
  again.release_all();
  cache.check_invariants();
}

TEST_F(RadixCacheEventsTest, EvictionLogsTheRemovedBlocks) {
  Holder a(pool, seq(0, 12));
  insert(a);
  a.release_all();
  log.take();
  uint64_t h0 = chain(log.hasher().root(), a.tokens, 0), h1 = chain(h0, a.tokens, 1),
           h2 = chain(h1, a.tokens, 2);
  ASSERT_EQ(cache.evict(2), 2);
  std::vector<KvEvent> events = log.take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, KvEvent::Kind::kBlockRemoved);
  EXPECT_THAT(events[0].block_hashes, ElementsAre(h1, h2));
  cache.check_invariants();
}

TEST_F(RadixCacheEventsTest, ReplayedEventsGiveTheCachedBlocks) {
  std::mt19937 rng(11);
  std::set<uint64_t> replayed;
  for (int step = 0; step < 1000; ++step) {
    if (rng() % 3 && pool.num_free_blocks() >= 8) {
      std::vector<int32_t> tokens = seq(0, 4 * int32_t(rng() % 3));
      for (int i = 0, n = 4 * (1 + rng() % 3); i < n; ++i)
        tokens.push_back(rng() % 3);
      Holder h(pool, tokens);
      insert(h);
    } else {
      cache.evict(rng() % 5);
    }
    for (const KvEvent &e : log.take())
      for (uint64_t hash : e.block_hashes) {
        if (e.kind == KvEvent::Kind::kBlockStored)
          ASSERT_TRUE(replayed.insert(hash).second) << "stored twice";
        else
          ASSERT_EQ(replayed.erase(hash), 1u) << "removed but never stored";
      }
    ASSERT_EQ(replayed.size(), size_t(cache.num_cached_blocks()));
    cache.check_invariants();
  }
}

} // namespace
} // namespace llmserve
