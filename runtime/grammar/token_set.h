// A set of token ids stored as whichever is smallest: a list of its members,
// a list of the tokens it lacks, or a bitset.
#ifndef LLMSERVE_GRAMMAR_TOKEN_SET_H
#define LLMSERVE_GRAMMAR_TOKEN_SET_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace llmserve::grammar {

class TokenSet {
public:
  TokenSet() = default;
  // `members` in any order, each below vocab_size, none twice.
  TokenSet(const std::vector<int32_t> &members, size_t vocab_size);

  size_t size() const { return size_; }
  uint64_t hash() const;
  bool operator==(const TokenSet &o) const {
    return kind_ == o.kind_ && size_ == o.size_ && ids_ == o.ids_ && words_ == o.words_;
  }
  size_t memory_bytes() const { return ids_.size() * sizeof(int32_t) + words_.size() * sizeof(uint32_t); }
  // Sets the members' bits in a mask of ceil(vocab_size / 32) words.
  void add_to(uint32_t *mask) const;

private:
  enum Kind : uint8_t { Members, NonMembers, Bits };
  Kind kind_ = Members;
  size_t size_ = 0, vocab_size_ = 0;
  std::vector<int32_t> ids_;     // Members or NonMembers, ascending
  std::vector<uint32_t> words_;  // Bits
};

} // namespace llmserve::grammar

#endif
