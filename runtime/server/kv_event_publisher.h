// Publishes the prefix cache's KV events (core/kv_events.h) the way vLLM
// does, for KV-cache-aware routers such as llm-d's indexer: a ZeroMQ PUB
// socket sending three-part messages [topic, sequence number (8 bytes,
// big-endian), msgpack payload], the payload vLLM's EventBatch
//
//   [timestamp, [event, ...], data_parallel_rank]
//   ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium]
//   ["BlockRemoved", block_hashes, medium]
//   ["AllBlocksCleared"]
//
// The first batch clears everything, since a (re)started replica holds no
// blocks. docs/scaling.md.
#ifndef LLMSERVE_SERVER_KV_EVENT_PUBLISHER_H
#define LLMSERVE_SERVER_KV_EVENT_PUBLISHER_H

#include "core/kv_events.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llmserve {

struct KvEventsConfig {
  // ZeroMQ endpoint: bound when it has a wildcard ("tcp://*:5557") or is
  // ipc:// or inproc://, else connected to ("tcp://indexer:5557"), as vLLM.
  std::string endpoint;
  std::string topic;
  int32_t block_size = 0;
  std::string medium; // where the blocks live: "GPU" or "CPU"
};

// The msgpack payload of one batch.
std::string encode_kv_event_batch(double timestamp, const std::vector<KvEvent> &events,
                                  int32_t block_size, const std::string &medium);

class KvEventPublisher {
public:
  // Opens the socket and sends the first batch (AllBlocksCleared). Throws
  // std::invalid_argument naming the endpoint when ZeroMQ refuses it.
  explicit KvEventPublisher(KvEventsConfig config);
  ~KvEventPublisher();
  KvEventPublisher(const KvEventPublisher &) = delete;
  KvEventPublisher &operator=(const KvEventPublisher &) = delete;

  // One thread at a time (the engine thread): sends `events` as one batch,
  // nothing when empty. PUB never blocks: with no subscriber, or one that
  // lags by the high-water mark, batches are dropped, as in vLLM.
  void publish(const std::vector<KvEvent> &events);

private:
  struct Socket;
  KvEventsConfig config_;
  std::unique_ptr<Socket> socket_;
  uint64_t sequence_ = 0;
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_KV_EVENT_PUBLISHER_H
