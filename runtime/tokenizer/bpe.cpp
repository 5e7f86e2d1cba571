#include "tokenizer/bpe.h"

#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <functional>
#include <queue>
#include <stdexcept>

namespace llmserve {
namespace {

struct ByteLevelMap {
  std::array<std::string, 256> char_of;
  std::unordered_map<uint32_t, uint8_t> byte_of;
  ByteLevelMap() {
    // Printable bytes stand for themselves; the others take code points from
    // U+0100 on, in byte order.
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      uint32_t cp = printable ? b : next++;
      unicode::append_utf8(char_of[b], cp);
      byte_of[cp] = static_cast<uint8_t>(b);
    }
  }
};

const ByteLevelMap &byte_level_map() {
  static const ByteLevelMap map;
  return map;
}

constexpr std::string_view kWordMarker = "\u2581";

std::string byte_fallback_spelling(uint8_t b) {
  static const char kHex[] = "0123456789ABCDEF";
  return std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
}

} // namespace

int byte_fallback_byte(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>')
    return -1;
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

const std::string &byte_level_char(uint8_t byte) {
  return byte_level_map().char_of[byte];
}

std::optional<std::string> byte_level_decode(std::string_view spelling) {
  const auto &byte_of = byte_level_map().byte_of;
  std::string bytes;
  bytes.reserve(spelling.size());
  for (size_t i = 0, len; i < spelling.size(); i += len) {
    auto it = byte_of.find(unicode::decode_at(spelling, i, &len));
    if (it == byte_of.end())
      return std::nullopt;
    bytes += static_cast<char>(it->second);
  }
  return bytes;
}

void Bpe::MergeTable::reserve(size_t n) {
  size_t capacity = 16;
  shift_ = 60;
  while (capacity < 2 * n) {
    capacity *= 2;
    --shift_;
  }
  keys_.assign(capacity, UINT64_MAX);
  merges_.assign(capacity, Merge{});
  mask_ = capacity - 1;
}

size_t Bpe::MergeTable::slot(uint64_t k) const {
  // Fibonacci hashing: the product's top bits mix all of the key's bits.
  size_t i = (k * 0x9E3779B97F4A7C15ull) >> shift_;
  while (keys_[i] != k && keys_[i] != UINT64_MAX)
    i = (i + 1) & mask_;
  return i;
}

void Bpe::MergeTable::insert(int32_t left, int32_t right, Merge merge) {
  size_t i = slot(key(left, right));
  keys_[i] = key(left, right);
  merges_[i] = merge;
}

const Bpe::Merge *Bpe::MergeTable::find(int32_t left, int32_t right) const {
  size_t i = slot(key(left, right));
  return keys_[i] == UINT64_MAX ? nullptr : &merges_[i];
}

Bpe::Bpe(const std::unordered_map<std::string, int32_t> &vocab,
         const std::vector<std::pair<std::string, std::string>> &merges,
         const BpeOptions &options)
    : options_(options) {
  std::fill(std::begin(byte_ids_), std::end(byte_ids_), -1);
  if (!options.byte_level) {
    ids_ = vocab;
  } else {
    ids_.reserve(vocab.size());
    // Tokens a byte-level input cannot produce stay out of piece space.
    for (const auto &[spelling, id] : vocab)
      if (auto bytes = byte_level_decode(spelling))
        ids_.emplace(std::move(*bytes), id);
  }
  for (int b = 0; b < 256; ++b) {
    std::string spelling = options.byte_level
                               ? std::string(1, static_cast<char>(b))
                               : byte_fallback_spelling(static_cast<uint8_t>(b));
    auto it = ids_.find(spelling);
    if (it != ids_.end())
      byte_ids_[b] = it->second;
  }

  merges_.reserve(merges.size());
  auto piece_of = [&](const std::string &spelling) {
    if (!options.byte_level)
      return std::optional<std::string>(spelling);
    return byte_level_decode(spelling);
  };
  auto id_of = [&](const std::optional<std::string> &piece,
                   const std::string &spelling) {
    auto it = piece ? ids_.find(*piece) : ids_.end();
    if (it == ids_.end())
      throw std::invalid_argument("model.merges: token '" + spelling +
                                  "' is not in model.vocab");
    return it->second;
  };
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto &[left, right] = merges[rank];
    auto left_piece = piece_of(left), right_piece = piece_of(right);
    int32_t left_id = id_of(left_piece, left);
    int32_t right_id = id_of(right_piece, right);
    int32_t merged_id = id_of(
        left_piece && right_piece
            ? std::optional<std::string>(*left_piece + *right_piece)
            : std::nullopt,
        left + right);
    merges_.insert(left_id, right_id, Merge{static_cast<int32_t>(rank), merged_id});
  }
  // The merges that join a symbol to a following word (a symbol starting
  // with the marker); their left sides, when few and plain text, mark the
  // word starts that cannot be split at.
  auto ends_with = [](std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
  };
  bool few_plain_joiners = true;
  for (const auto &[left, right] : merges) {
    if (right.rfind(kWordMarker, 0) != 0 || ends_with(left, kWordMarker))
      continue;
    bool plain = !(options.byte_fallback && byte_fallback_byte(left) >= 0) &&
                 !(options.unk_id && ids_.at(left) == *options.unk_id);
    few_plain_joiners = plain && word_joiners_.size() < kMaxWordJoiners;
    if (!few_plain_joiners)
      break;
    word_joiners_.push_back(left);
  }
  split_at_word_markers_ = !options.byte_level && !options.ignore_merges &&
                           ids_.count(std::string(kWordMarker)) && few_plain_joiners;
}

void Bpe::initial_symbols(std::string_view word,
                          std::vector<int32_t> &symbols) const {
  if (options_.byte_level) {
    for (unsigned char b : word) {
      // A byte without a token is dropped, as Hugging Face does without an
      // unknown token.
      if (byte_ids_[b] >= 0)
        symbols.push_back(byte_ids_[b]);
      else if (options_.unk_id)
        symbols.push_back(*options_.unk_id);
    }
    return;
  }
  bool pending_unk = false;
  std::string character;
  for (size_t i = 0, len; i < word.size(); i += len) {
    unicode::decode_at(word, i, &len);
    character.assign(word.data() + i, len);
    auto it = ids_.find(character);
    if (it != ids_.end()) {
      if (pending_unk)
        symbols.push_back(*options_.unk_id);
      pending_unk = false;
      symbols.push_back(it->second);
      continue;
    }
    if (options_.byte_fallback &&
        std::all_of(character.begin(), character.end(), [&](char c) {
          return byte_ids_[static_cast<unsigned char>(c)] >= 0;
        })) {
      for (unsigned char c : character)
        symbols.push_back(byte_ids_[c]);
      continue;
    }
    if (!options_.unk_id)
      continue;
    if (pending_unk && !options_.fuse_unk)
      symbols.push_back(*options_.unk_id);
    pending_unk = true;
  }
  if (pending_unk)
    symbols.push_back(*options_.unk_id);
}

void Bpe::merge(std::vector<int32_t> &symbols) const {
  if (symbols.size() < 2)
    return;
  // Candidate merges as (rank << 32 | position): the lowest pops first, so
  // the leftmost of equal ranks, as in Hugging Face's BPE.
  using Candidate = uint64_t;
  auto candidate = [](int32_t rank, int32_t pos) {
    return static_cast<uint64_t>(rank) << 32 | static_cast<uint32_t>(pos);
  };
  const int32_t n = static_cast<int32_t>(symbols.size());
  std::vector<int32_t> prev(n), next(n);
  std::vector<Candidate> heap;
  heap.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
    if (i + 1 < n)
      if (const Merge *m = merges_.find(symbols[i], symbols[i + 1]))
        heap.push_back(candidate(m->rank, i));
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  constexpr int32_t kMerged = -1;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    Candidate top = heap.back();
    heap.pop_back();
    int32_t left = static_cast<int32_t>(top & 0xFFFFFFFF);
    if (symbols[left] == kMerged || next[left] < 0)
      continue;
    int32_t right = next[left];
    const Merge *current = merges_.find(symbols[left], symbols[right]);
    if (!current || current->rank != static_cast<int32_t>(top >> 32))
      continue; // a stale candidate: one side has merged since
    symbols[left] = current->merged_id;
    symbols[right] = kMerged;
    next[left] = next[right];
    if (next[right] >= 0)
      prev[next[right]] = left;
    auto push = [&](int32_t l) {
      if (l < 0 || next[l] < 0)
        return;
      if (const Merge *m = merges_.find(symbols[l], symbols[next[l]])) {
        heap.push_back(candidate(m->rank, l));
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
    };
    push(prev[left]);
    push(left);
  }
  symbols.erase(std::remove(symbols.begin(), symbols.end(), kMerged),
                symbols.end());
}

void Bpe::encode(std::string_view piece, std::vector<int32_t> &ids) const {
  if (piece.empty())
    return;
  if (options_.ignore_merges) {
    auto it = ids_.find(std::string(piece));
    if (it != ids_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  if (!split_at_word_markers_) {
    encode_word(piece, ids);
    return;
  }
  // Words begin at a marker that follows something other than a marker, or
  // than the left side of a merge onto a following word.
  size_t start = 0;
  for (size_t p = piece.find(kWordMarker, 1); p != std::string_view::npos;
       p = piece.find(kWordMarker, p + kWordMarker.size())) {
    std::string_view before = piece.substr(0, p);
    auto ends_with = [&](std::string_view suffix) {
      return before.size() >= suffix.size() && before.substr(before.size() - suffix.size()) == suffix;
    };
    if (ends_with(kWordMarker) || std::any_of(word_joiners_.begin(), word_joiners_.end(), ends_with))
      continue;
    encode_word(piece.substr(start, p - start), ids);
    start = p;
  }
  encode_word(piece.substr(start), ids);
}

void Bpe::encode_word(std::string_view word, std::vector<int32_t> &ids) const {
  bool cacheable = word.size() <= kMaxCachedPieceBytes;
  std::string key;
  if (cacheable) {
    key.assign(word);
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> symbols;
  symbols.reserve(word.size());
  initial_symbols(word, symbols);
  merge(symbols);
  ids.insert(ids.end(), symbols.begin(), symbols.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() < kMaxCachedPieces)
      cache_.emplace(std::move(key), std::move(symbols));
  }
}

} // namespace llmserve
