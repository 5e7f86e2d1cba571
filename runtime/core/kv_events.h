// What the prefix cache stores and evicts, as the events vLLM publishes for
// KV-cache-aware routers (BlockStored, BlockRemoved, AllBlocksCleared). The
// radix cache records them as blocks enter and leave the tree; the engine's
// owner takes them after each step and publishes them (server/kv_event_publisher).
#ifndef LLMSERVE_CORE_KV_EVENTS_H
#define LLMSERVE_CORE_KV_EVENTS_H

#include "core/block_hash.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace llmserve {

struct KvEvent {
  enum class Kind { kBlockStored, kBlockRemoved, kAllBlocksCleared };
  Kind kind;
  // Chained block hashes (core/block_hash.h), in sequence order.
  std::vector<uint64_t> block_hashes;
  // kBlockStored: the hash of the block before the first one, none when the
  // first block starts the sequence; and the tokens of all the blocks.
  std::optional<uint64_t> parent_block_hash;
  std::vector<int32_t> token_ids;
};

class KvEventLog {
public:
  explicit KvEventLog(std::string_view hash_seed) : hasher_(hash_seed) {}

  const BlockHasher &hasher() const { return hasher_; }

  void stored(std::vector<uint64_t> hashes, std::optional<uint64_t> parent,
              std::vector<int32_t> tokens) {
    events_.push_back({KvEvent::Kind::kBlockStored, std::move(hashes), parent, std::move(tokens)});
  }
  void removed(std::vector<uint64_t> hashes) {
    events_.push_back({KvEvent::Kind::kBlockRemoved, std::move(hashes), std::nullopt, {}});
  }

  // The events since the last call, oldest first.
  std::vector<KvEvent> take() { return std::exchange(events_, {}); }

private:
  BlockHasher hasher_;
  std::vector<KvEvent> events_;
};

} // namespace llmserve

#endif // LLMSERVE_CORE_KV_EVENTS_H
