#include "grammar/token_set.h"

#include <algorithm>

namespace llmserve::grammar {

TokenSet::TokenSet(const std::vector<int32_t> &members, size_t vocab_size)
    : size_(members.size()), vocab_size_(vocab_size) {
  const size_t words = (vocab_size + 31) / 32;
  const size_t non_members = vocab_size - members.size();
  std::vector<uint32_t> bits(words, 0);
  for (int32_t id : members)
    bits[id / 32] |= 1u << (id % 32);
  if (members.size() > words && non_members > words) {
    kind_ = Bits;
    words_ = std::move(bits);
    return;
  }
  // A list, ascending: the members, or the ids that are not.
  kind_ = members.size() <= non_members ? Members : NonMembers;
  const uint32_t flip = kind_ == Members ? 0u : ~0u;
  ids_.reserve(std::min(members.size(), non_members));
  for (size_t w = 0; w < words; ++w)
    for (uint32_t rest = bits[w] ^ flip; rest; rest &= rest - 1) {
      size_t id = w * 32 + static_cast<size_t>(__builtin_ctz(rest));
      if (id < vocab_size)
        ids_.push_back(static_cast<int32_t>(id));
    }
}

uint64_t TokenSet::hash() const {
  uint64_t h = 0xcbf29ce484222325ull ^ kind_;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  for (int32_t id : ids_)
    mix(static_cast<uint32_t>(id));
  for (uint32_t w : words_)
    mix(w);
  return h;
}

void TokenSet::add_to(uint32_t *mask) const {
  const size_t words = (vocab_size_ + 31) / 32;
  switch (kind_) {
  case Members:
    for (int32_t id : ids_)
      mask[id / 32] |= 1u << (id % 32);
    break;
  case Bits:
    for (size_t w = 0; w < words; ++w)
      mask[w] |= words_[w];
    break;
  case NonMembers: {
    size_t next = 0;
    for (size_t w = 0; w < words; ++w) {
      uint32_t bits = ~0u;
      for (; next < ids_.size() && static_cast<size_t>(ids_[next]) / 32 == w; ++next)
        bits &= ~(1u << (ids_[next] % 32));
      if (w + 1 == words && vocab_size_ % 32) // no bits past the vocabulary
        bits &= (1u << (vocab_size_ % 32)) - 1;
      mask[w] |= bits;
    }
    break;
  }
  }
}

} // namespace llmserve::grammar
