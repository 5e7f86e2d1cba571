#include "server/kv_event_publisher.h"

#include <msgpack.hpp>
#include <zmq.hpp>

#include <chrono>
#include <stdexcept>

namespace llmserve {
namespace {

// Messages a slow subscriber may fall behind by before PUB drops (vLLM's).
constexpr int kHighWaterMark = 100000;

bool binds(const std::string &endpoint) {
  return endpoint.find('*') != std::string::npos || endpoint.find("::") != std::string::npos ||
         endpoint.rfind("ipc://", 0) == 0 || endpoint.rfind("inproc://", 0) == 0;
}

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

using Packer = msgpack::packer<msgpack::sbuffer>;

void pack_text(Packer &p, const std::string &text) {
  p.pack_str(static_cast<uint32_t>(text.size()));
  p.pack_str_body(text.data(), static_cast<uint32_t>(text.size()));
}

void pack_hashes(Packer &p, const std::vector<uint64_t> &hashes) {
  p.pack_array(static_cast<uint32_t>(hashes.size()));
  for (uint64_t h : hashes)
    p.pack_uint64(h);
}

void pack_event(Packer &p, const KvEvent &e, int32_t block_size, const std::string &medium) {
  switch (e.kind) {
  case KvEvent::Kind::kBlockStored:
    p.pack_array(7);
    pack_text(p, "BlockStored");
    pack_hashes(p, e.block_hashes);
    if (e.parent_block_hash)
      p.pack_uint64(*e.parent_block_hash);
    else
      p.pack_nil();
    p.pack_array(static_cast<uint32_t>(e.token_ids.size()));
    for (int32_t t : e.token_ids)
      p.pack_uint32(static_cast<uint32_t>(t));
    p.pack_int32(block_size);
    p.pack_nil(); // lora_id
    pack_text(p, medium);
    return;
  case KvEvent::Kind::kBlockRemoved:
    p.pack_array(3);
    pack_text(p, "BlockRemoved");
    pack_hashes(p, e.block_hashes);
    pack_text(p, medium);
    return;
  case KvEvent::Kind::kAllBlocksCleared:
    p.pack_array(1);
    pack_text(p, "AllBlocksCleared");
    return;
  }
}

} // namespace

std::string encode_kv_event_batch(double timestamp, const std::vector<KvEvent> &events,
                                  int32_t block_size, const std::string &medium) {
  msgpack::sbuffer buffer;
  Packer p(&buffer);
  p.pack_array(3);
  p.pack_double(timestamp);
  p.pack_array(static_cast<uint32_t>(events.size()));
  for (const KvEvent &e : events)
    pack_event(p, e, block_size, medium);
  p.pack_int32(0); // data_parallel_rank: one engine
  return {buffer.data(), buffer.size()};
}

struct KvEventPublisher::Socket {
  zmq::context_t context{1};
  zmq::socket_t pub{context, zmq::socket_type::pub};
};

KvEventPublisher::KvEventPublisher(KvEventsConfig config)
    : config_(std::move(config)), socket_(std::make_unique<Socket>()) {
  try {
    socket_->pub.set(zmq::sockopt::sndhwm, kHighWaterMark);
    socket_->pub.set(zmq::sockopt::linger, 1000);
    if (binds(config_.endpoint))
      socket_->pub.bind(config_.endpoint);
    else
      socket_->pub.connect(config_.endpoint);
  } catch (const zmq::error_t &e) {
    throw std::invalid_argument("--kv-events-endpoint '" + config_.endpoint +
                                "': " + e.what());
  }
  publish({KvEvent{KvEvent::Kind::kAllBlocksCleared, {}, std::nullopt, {}}});
}

KvEventPublisher::~KvEventPublisher() = default;

void KvEventPublisher::publish(const std::vector<KvEvent> &events) {
  if (events.empty())
    return;
  const std::string payload =
      encode_kv_event_batch(unix_time(), events, config_.block_size, config_.medium);
  unsigned char sequence[8];
  for (int i = 0; i < 8; ++i)
    sequence[i] = static_cast<unsigned char>(sequence_ >> (8 * (7 - i)));
  ++sequence_;
  zmq::socket_t &pub = socket_->pub;
  pub.send(zmq::buffer(config_.topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  pub.send(zmq::buffer(sequence, sizeof sequence),
           zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  pub.send(zmq::buffer(payload), zmq::send_flags::dontwait);
}

} // namespace llmserve
