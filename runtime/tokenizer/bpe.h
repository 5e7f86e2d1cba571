// The BPE model of tokenizer.json: turns one pre-tokenized piece into ids by
// applying merges in rank order (lowest rank first, leftmost first among
// equals), exactly as Hugging Face's `BPE` model does.
#ifndef LLMSERVE_TOKENIZER_BPE_H
#define LLMSERVE_TOKENIZER_BPE_H

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace llmserve {

struct BpeOptions {
  // Pieces are raw bytes and tokens spell bytes with GPT-2's byte-to-char
  // map; otherwise pieces are text and a piece starts as one symbol per
  // character.
  bool byte_level = false;
  bool byte_fallback = false; // unknown characters become <0xXX> tokens
  bool ignore_merges = false; // a piece that is a token is that token
  std::optional<int32_t> unk_id;
  bool fuse_unk = false;
};

class Bpe {
public:
  // `vocab` maps spellings (as in tokenizer.json) to ids; merges are pairs of
  // spellings, highest priority first.
  Bpe(const std::unordered_map<std::string, int32_t> &vocab,
      const std::vector<std::pair<std::string, std::string>> &merges,
      const BpeOptions &options);

  // Appends the ids of one piece (raw bytes when byte-level).
  void encode(std::string_view piece, std::vector<int32_t> &ids) const;

private:
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };

  // Open-addressing map from a token pair to its merge.
  class MergeTable {
  public:
    void reserve(size_t n);
    void insert(int32_t left, int32_t right, Merge merge);
    const Merge *find(int32_t left, int32_t right) const;

  private:
    static uint64_t key(int32_t l, int32_t r) {
      return static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32 |
             static_cast<uint32_t>(r);
    }
    size_t slot(uint64_t key) const;
    std::vector<uint64_t> keys_;
    std::vector<Merge> merges_;
    size_t mask_ = 0;
    int shift_ = 64; // 64 - log2(capacity)
  };

  void encode_word(std::string_view word, std::vector<int32_t> &ids) const;
  void initial_symbols(std::string_view word, std::vector<int32_t> &ids) const;
  void merge(std::vector<int32_t> &symbols) const;

  BpeOptions options_;
  // Token ids by spelling in piece space: raw bytes when byte-level.
  std::unordered_map<std::string, int32_t> ids_;
  int32_t byte_ids_[256]; // byte-level: the token of each single byte;
                          // byte fallback: the <0xXX> token (-1 if absent)
  MergeTable merges_;
  // SentencePiece-style pieces are whole texts. A merge can cross the start
  // of a word (a "▁" word marker) only by joining a symbol that ends there to
  // one that starts there: where the text before the marker ends with the
  // left side of no such merge (a "joiner", found at load), the words merge
  // independently, so they are encoded (and cached) apart. (The marker must
  // be a token, or unknown-character runs could fuse across; with more than a
  // few joiners, or one a byte or unknown token, words are not split.)
  bool split_at_word_markers_ = false;
  static constexpr size_t kMaxWordJoiners = 16;
  std::vector<std::string> word_joiners_;

  // Pieces recur (words of a language), so their ids are cached.
  static constexpr size_t kMaxCachedPieces = 1 << 16;
  static constexpr size_t kMaxCachedPieceBytes = 256;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

// The byte a byte-fallback token ("<0xXX>") stands for, or -1.
int byte_fallback_byte(std::string_view spelling);

// GPT-2's reversible map from bytes to printable characters, and back: the
// spelling of byte-level tokens.
const std::string &byte_level_char(uint8_t byte);
// The bytes a byte-level spelling stands for; nullopt when some character is
// not in the map.
std::optional<std::string> byte_level_decode(std::string_view spelling);

} // namespace llmserve

#endif
