#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

namespace llmserve::unicode {
namespace {

TEST(Unicode, Properties) {
  EXPECT_EQ(category('A'), Lu);
  EXPECT_EQ(category(0x4E2D), Lo);   // 中
  EXPECT_EQ(category(0x0301), Mn);   // combining acute
  EXPECT_EQ(category(0x0663), Nd);   // Arabic-Indic three
  EXPECT_EQ(category(0x216B), Nl);   // Roman numeral twelve
  EXPECT_EQ(category(0x1F600), So);  // emoji
  EXPECT_EQ(category(0x10FFFF), Cn); // unassigned
  EXPECT_TRUE(is_letter(0x017F));
  EXPECT_TRUE(is_number(0x00B2));
  EXPECT_TRUE(is_mark(0x20DD));
  for (uint32_t cp : {0x09u, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x200Au, 0x2028u,
                      0x2029u, 0x202Fu, 0x205Fu, 0x3000u})
    EXPECT_TRUE(is_white_space(cp)) << cp;
  for (uint32_t cp : {0x1Cu, 0x200Bu, 0xFEFFu, 0x180Eu})
    EXPECT_FALSE(is_white_space(cp)) << cp;
}

TEST(Unicode, LossyDecodingReplacesMaximalInvalidSubparts) {
  EXPECT_EQ(utf8_lossy("ok"), "ok");
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98"), "\ufffd");            // truncated 4-byte
  EXPECT_EQ(utf8_lossy("\xC0\x80"), "\ufffd\ufffd");          // overlong
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), "\ufffd\ufffd\ufffd"); // surrogate
  EXPECT_EQ(utf8_lossy("a\xE2\x82z"), "a\ufffdz");
  EXPECT_EQ(utf8_lossy("\xF4\x90\x80\x80"), "\ufffd\ufffd\ufffd\ufffd"); // > U+10FFFF
}

TEST(Unicode, Validation) {
  EXPECT_EQ(valid_utf8_prefix("ab\xC3\xA9\xC3"), 4u);
  EXPECT_NO_THROW(require_utf8("\xF0\x9F\x98\x80", "x"));
  try {
    require_utf8("abc\x80", "input");
    FAIL();
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "input: invalid UTF-8 at byte offset 3");
  }
}

TEST(Unicode, Nfc) {
  EXPECT_EQ(nfc("e\u0301"), "\u00e9");
  EXPECT_EQ(nfc("A\u030a"), "\u00c5");
  EXPECT_EQ(nfc("\u212b"), "\u00c5");                  // Angstrom sign: singleton
  EXPECT_EQ(nfc("\u1100\u1161\u11a8"), "\uac01");      // Hangul LVT
  EXPECT_EQ(nfc("a\u0302\u0323"), "\u1ead");           // reordered, then composed
  EXPECT_EQ(nfc("\u0344"), "\u0308\u0301");            // excluded from composition
  EXPECT_EQ(nfc("\ufb01"), "\ufb01");                  // compatibility only
  EXPECT_EQ(nfc("plain ascii"), "plain ascii");
}

} // namespace
} // namespace llmserve::unicode
