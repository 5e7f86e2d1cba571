#include "tokenizer/unicode.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace llmserve::unicode {
namespace {

#include "tokenizer/unicode_tables.inc"

constexpr uint16_t kCategoryMask = 0x1F;

uint16_t properties(uint32_t cp) {
  if (cp >= 0x110000)
    return Cn;
  return kPropertyBlocks[kPropertyBlockOf[cp >> 8]][cp & 0xFF];
}

// Length of the UTF-8 sequence at p (at most `avail` bytes) and whether it is
// valid; an invalid one's length is that of its maximal valid prefix (>= 1),
// as Rust's Utf8Chunks counts it.
size_t sequence_length(const unsigned char *p, size_t avail, bool *valid) {
  *valid = false;
  unsigned char b = p[0];
  if (b < 0x80) {
    *valid = true;
    return 1;
  }
  size_t width;
  unsigned char lo = 0x80, hi = 0xBF; // allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    width = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    width = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    width = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 1;
  }
  if (avail < 2 || p[1] < lo || p[1] > hi)
    return 1;
  for (size_t i = 2; i < width; ++i)
    if (avail <= i || (p[i] & 0xC0) != 0x80)
      return i;
  *valid = true;
  return width;
}

constexpr uint32_t kHangulBase = 0xAC00, kJamoL = 0x1100, kJamoV = 0x1161,
                   kJamoT = 0x11A7, kJamoVCount = 21, kJamoTCount = 28,
                   kHangulCount = 11172;

uint8_t combining_class(uint32_t cp) {
  if (!(properties(cp) & kNonzeroCombiningClassBit))
    return 0;
  auto it = std::lower_bound(
      std::begin(kCombiningClasses), std::end(kCombiningClasses), cp,
      [](const CombiningClass &c, uint32_t v) { return c.cp < v; });
  return it->ccc;
}

// Appends the full decomposition of cp: canonical, or with `compatibility`
// also the compatibility mappings.
void decompose(uint32_t cp, bool compatibility, std::vector<uint32_t> &out) {
  if (cp >= kHangulBase && cp < kHangulBase + kHangulCount) {
    uint32_t s = cp - kHangulBase;
    out.push_back(kJamoL + s / (kJamoVCount * kJamoTCount));
    out.push_back(kJamoV + s % (kJamoVCount * kJamoTCount) / kJamoTCount);
    if (s % kJamoTCount)
      out.push_back(kJamoT + s % kJamoTCount);
    return;
  }
  auto it = std::lower_bound(
      std::begin(kDecompositions), std::end(kDecompositions), cp,
      [](const Decomposition &d, uint32_t v) { return d.cp < v; });
  if (it == std::end(kDecompositions) || it->cp != cp ||
      (it->compatibility && !compatibility)) {
    out.push_back(cp);
    return;
  }
  for (size_t i = 0; i < it->length; ++i)
    decompose(kDecompositionChars[it->offset + i], compatibility, out);
}

// The primary composite of (a, b), or 0.
uint32_t compose(uint32_t a, uint32_t b) {
  if (a >= kJamoL && a < kJamoL + 19 && b >= kJamoV && b < kJamoV + kJamoVCount)
    return kHangulBase + ((a - kJamoL) * kJamoVCount + (b - kJamoV)) * kJamoTCount;
  if (a >= kHangulBase && a < kHangulBase + kHangulCount &&
      (a - kHangulBase) % kJamoTCount == 0 && b > kJamoT &&
      b < kJamoT + kJamoTCount)
    return a + (b - kJamoT);
  auto it = std::lower_bound(
      std::begin(kCompositions), std::end(kCompositions), std::make_pair(a, b),
      [](const Composition &c, std::pair<uint32_t, uint32_t> v) {
        return std::make_pair(c.first, c.second) < v;
      });
  if (it != std::end(kCompositions) && it->first == a && it->second == b)
    return it->composite;
  return 0;
}

uint16_t maybe_changes_bit(NormalForm form) {
  switch (form) {
  case NormalForm::C: return kNfcMaybeChangesBit;
  case NormalForm::D: return kNfdMaybeChangesBit;
  case NormalForm::KC: return kNfkcMaybeChangesBit;
  case NormalForm::KD: return kNfkdMaybeChangesBit;
  }
  return 0;
}

// The quick check: true when s is certainly in the form already (every
// character's quick-check value is Yes and the marks are in canonical order).
bool is_quick(std::string_view s, NormalForm form) {
  uint16_t maybe_changes = maybe_changes_bit(form);
  uint8_t last_ccc = 0;
  for (size_t i = 0, len; i < s.size(); i += len) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      len = 1;
      last_ccc = 0;
      continue;
    }
    uint32_t cp = decode_at(s, i, &len);
    uint16_t props = properties(cp);
    if (props & maybe_changes)
      return false;
    uint8_t ccc = props & kNonzeroCombiningClassBit ? combining_class(cp) : 0;
    if (ccc && last_ccc > ccc)
      return false;
    last_ccc = ccc;
  }
  return true;
}

// Canonical ordering: a stable sort of each run of non-starters by class.
void reorder(std::vector<uint32_t> &cps) {
  for (size_t i = 1; i < cps.size(); ++i) {
    uint8_t ccc = combining_class(cps[i]);
    if (!ccc)
      continue;
    for (size_t j = i; j > 0; --j) {
      uint8_t prev = combining_class(cps[j - 1]);
      if (!prev || prev <= ccc)
        break;
      std::swap(cps[j - 1], cps[j]);
    }
  }
}

// Canonical composition of a decomposed, reordered sequence.
std::vector<uint32_t> compose_all(const std::vector<uint32_t> &cps) {
  std::vector<uint32_t> composed;
  composed.reserve(cps.size());
  ptrdiff_t starter = -1;
  uint8_t last_ccc = 0;
  for (uint32_t cp : cps) {
    uint8_t ccc = combining_class(cp);
    if (starter >= 0) {
      bool adjacent = static_cast<size_t>(starter) + 1 == composed.size();
      bool blocked = !adjacent && (last_ccc == 0 || last_ccc >= ccc);
      if (!blocked) {
        if (uint32_t c = compose(composed[starter], cp)) {
          composed[starter] = c;
          continue;
        }
      }
    }
    if (ccc == 0) {
      starter = static_cast<ptrdiff_t>(composed.size());
      last_ccc = 0;
    } else {
      last_ccc = ccc;
    }
    composed.push_back(cp);
  }
  return composed;
}

uint32_t simple_lowercase(uint32_t cp) {
  auto it = std::lower_bound(std::begin(kLowercases), std::end(kLowercases), cp,
                             [](const Lowercase &l, uint32_t v) { return l.cp < v; });
  return it != std::end(kLowercases) && it->cp == cp ? it->lower : cp;
}

} // namespace

GeneralCategory category(uint32_t cp) {
  return static_cast<GeneralCategory>(properties(cp) & kCategoryMask);
}

bool is_letter(uint32_t cp) {
  auto c = category(cp);
  return c >= Lu && c <= Lo;
}

bool is_number(uint32_t cp) {
  auto c = category(cp);
  return c >= Nd && c <= No;
}

bool is_mark(uint32_t cp) {
  auto c = category(cp);
  return c >= Mn && c <= Me;
}

bool is_white_space(uint32_t cp) { return properties(cp) & kWhiteSpaceBit; }

void append_utf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | cp >> 6);
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | cp >> 12);
    out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | cp >> 18);
    out += static_cast<char>(0x80 | (cp >> 12 & 0x3F));
    out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

size_t valid_utf8_prefix(std::string_view s) {
  const auto *p = reinterpret_cast<const unsigned char *>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    bool valid;
    size_t len = sequence_length(p + i, s.size() - i, &valid);
    if (!valid)
      break;
    i += len;
  }
  return i;
}

void require_utf8(std::string_view s, const char *what) {
  size_t valid = valid_utf8_prefix(s);
  if (valid != s.size())
    throw std::invalid_argument(std::string(what) +
                                ": invalid UTF-8 at byte offset " +
                                std::to_string(valid));
}

std::string utf8_lossy(std::string_view bytes) {
  const auto *p = reinterpret_cast<const unsigned char *>(bytes.data());
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    bool valid;
    size_t len = sequence_length(p + i, bytes.size() - i, &valid);
    if (valid)
      out.append(bytes.data() + i, len);
    else
      out += "\xEF\xBF\xBD";
    i += len;
  }
  return out;
}

std::string normalize(std::string_view s, NormalForm form) {
  if (is_quick(s, form))
    return std::string(s);
  bool compatibility = form == NormalForm::KC || form == NormalForm::KD;
  std::vector<uint32_t> cps;
  for (size_t i = 0, len; i < s.size(); i += len)
    decompose(decode_at(s, i, &len), compatibility, cps);
  reorder(cps);
  if (form == NormalForm::C || form == NormalForm::KC)
    cps = compose_all(cps);
  std::string out;
  out.reserve(s.size());
  for (uint32_t cp : cps)
    append_utf8(out, cp);
  return out;
}

std::string lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0, len; i < s.size(); i += len) {
    auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      len = 1;
      out += static_cast<char>(b >= 'A' && b <= 'Z' ? b | 0x20 : b);
      continue;
    }
    uint32_t cp = decode_at(s, i, &len);
    if (!(properties(cp) & kChangesWhenLowercasedBit)) {
      out.append(s.data() + i, len);
      continue;
    }
    auto multi = std::find_if(std::begin(kMultiLowercases), std::end(kMultiLowercases),
                              [&](const MultiLowercase &m) { return m.cp == cp; });
    if (multi != std::end(kMultiLowercases)) {
      append_utf8(out, multi->first);
      append_utf8(out, multi->second);
    } else {
      append_utf8(out, simple_lowercase(cp));
    }
  }
  return out;
}

} // namespace llmserve::unicode
