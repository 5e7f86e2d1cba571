// Unicode support for the tokenizer: UTF-8 coding, the character properties the
// pre-tokenizer patterns test (\p{L}, \p{N}, \s), the normalization forms,
// lowercasing, and Rust's lossy UTF-8 decoding (what Hugging Face decoders
// apply to byte sequences).
#ifndef LLMSERVE_TOKENIZER_UNICODE_H
#define LLMSERVE_TOKENIZER_UNICODE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace llmserve::unicode {

// General categories, in the order of gen_unicode_tables.py's CATEGORIES.
enum GeneralCategory : uint8_t {
  Cn, Lu, Ll, Lt, Lm, Lo, Mn, Mc, Me, Nd, Nl, No, Pc, Pd, Ps, Pe, Pi, Pf, Po,
  Sm, Sc, Sk, So, Zs, Zl, Zp, Cc, Cf, Cs, Co
};

GeneralCategory category(uint32_t cp);
bool is_letter(uint32_t cp);     // \p{L}
bool is_number(uint32_t cp);     // \p{N}
bool is_mark(uint32_t cp);       // \p{M}
bool is_white_space(uint32_t cp); // \s (Unicode White_Space)

// Decodes the code point at s[pos] of valid UTF-8; stores its length in *len.
inline uint32_t decode_at(std::string_view s, size_t pos, size_t *len) {
  const auto *p = reinterpret_cast<const unsigned char *>(s.data()) + pos;
  if (p[0] < 0x80) { *len = 1; return p[0]; }
  if (p[0] < 0xE0) { *len = 2; return (p[0] & 0x1Fu) << 6 | (p[1] & 0x3Fu); }
  if (p[0] < 0xF0) {
    *len = 3;
    return (p[0] & 0x0Fu) << 12 | (p[1] & 0x3Fu) << 6 | (p[2] & 0x3Fu);
  }
  *len = 4;
  return (p[0] & 0x07u) << 18 | (p[1] & 0x3Fu) << 12 | (p[2] & 0x3Fu) << 6 |
         (p[3] & 0x3Fu);
}

void append_utf8(std::string &out, uint32_t cp);

// Length of the longest valid UTF-8 prefix of s.
size_t valid_utf8_prefix(std::string_view s);

// Throws std::invalid_argument naming `what` and the byte offset when s is not
// valid UTF-8.
void require_utf8(std::string_view s, const char *what);

// Like Rust's String::from_utf8_lossy: each maximal invalid subsequence becomes
// one U+FFFD.
std::string utf8_lossy(std::string_view bytes);

enum class NormalForm { C, D, KC, KD };

// A Unicode normalization form of valid UTF-8.
std::string normalize(std::string_view s, NormalForm form);

// Valid UTF-8 lowercased code point by code point, as Rust's char::to_lowercase
// does: the simple mappings plus SpecialCasing's unconditional ones (no final
// sigma, no language rules).
std::string lowercase(std::string_view s);

} // namespace llmserve::unicode

#endif
