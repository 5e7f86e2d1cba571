#include "grammar/utf8_ranges.h"

#include <algorithm>
#include <map>

namespace llmserve::grammar {
namespace {

using gbnf::CodePointRange;

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

int utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

std::vector<uint8_t> encode(uint32_t cp) {
  int n = utf8_length(cp);
  if (n == 1)
    return {static_cast<uint8_t>(cp)};
  std::vector<uint8_t> bytes(n);
  for (int i = n - 1; i > 0; --i, cp >>= 6)
    bytes[i] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  static constexpr uint8_t kLead[] = {0, 0, 0xC0, 0xE0, 0xF0};
  bytes[0] = static_cast<uint8_t>(kLead[n] | cp);
  return bytes;
}

// Splits [first, last] (one encoded length) until every continuation byte
// either ranges fully over 80-BF or is fixed, so that the range is the
// product of per-byte ranges.
using Piece = std::vector<std::pair<uint8_t, uint8_t>>; // a byte range per position

void split(uint32_t first, uint32_t last, std::vector<Piece> &out) {
  int n = utf8_length(first);
  for (int i = 1; i < n; ++i) {
    uint32_t m = (1u << (6 * i)) - 1;
    if ((first & ~m) != (last & ~m)) {
      if ((first & m) != 0) {
        split(first, first | m, out);
        split((first | m) + 1, last, out);
        return;
      }
      if ((last & m) != m) {
        split(first, (last & ~m) - 1, out);
        split(last & ~m, last, out);
        return;
      }
    }
  }
  std::vector<uint8_t> lo = encode(first), hi = encode(last);
  Piece piece(n);
  for (int i = 0; i < n; ++i)
    piece[i] = {lo[i], hi[i]};
  out.push_back(std::move(piece));
}

} // namespace

std::vector<CodePointRange> class_code_points(const std::vector<CodePointRange> &ranges,
                                              bool negated) {
  std::vector<CodePointRange> sorted = ranges;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<CodePointRange> merged;
  for (const auto &r : sorted) {
    if (!merged.empty() && r.first <= merged.back().last + 1)
      merged.back().last = std::max(merged.back().last, r.last);
    else
      merged.push_back(r);
  }
  if (negated) {
    std::vector<CodePointRange> complement;
    uint32_t next = 0;
    for (const auto &r : merged) {
      if (r.first > next)
        complement.push_back({next, r.first - 1});
      next = r.last + 1;
    }
    if (next <= kMaxCodePoint)
      complement.push_back({next, kMaxCodePoint});
    merged = std::move(complement);
  }
  std::vector<CodePointRange> out;
  for (const auto &r : merged) {
    if (r.first < 0xD800 && r.last >= 0xD800)
      out.push_back({r.first, 0xD7FF});
    if (r.last > 0xDFFF && r.first <= 0xDFFF)
      out.push_back({0xE000, r.last});
    if (r.last < 0xD800 || r.first > 0xDFFF)
      out.push_back(r);
  }
  return out;
}

std::vector<std::vector<ByteSet>> utf8_sequences(const std::vector<CodePointRange> &code_points) {
  std::vector<Piece> pieces;
  for (const auto &r : code_points) {
    // One encoded length at a time.
    for (uint32_t first = r.first; first <= r.last;) {
      static constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};
      uint32_t last = std::min(r.last, kLengthEnds[utf8_length(first) - 1]);
      split(first, last, pieces);
      first = last + 1;
    }
  }
  // Merge the pieces with equal tails into one, keeping the first-seen order.
  std::vector<std::vector<ByteSet>> merged;
  std::map<Piece, size_t> by_tail;
  for (const Piece &piece : pieces) {
    auto [it, inserted] = by_tail.emplace(Piece(piece.begin() + 1, piece.end()), merged.size());
    if (inserted) {
      merged.emplace_back(piece.size());
      for (size_t i = 1; i < piece.size(); ++i)
        for (int b = piece[i].first; b <= piece[i].second; ++b)
          merged.back()[i].set(b);
    }
    for (int b = piece[0].first; b <= piece[0].second; ++b)
      merged[it->second][0].set(b);
  }
  return merged;
}

} // namespace llmserve::grammar
