#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

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

std::string nfc(std::string_view s) { return normalize(s, NormalForm::C); }

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

TEST(Unicode, OtherForms) {
  EXPECT_EQ(normalize("\u00e9\uac01", NormalForm::D), "e\u0301\u1100\u1161\u11a8");
  EXPECT_EQ(normalize("\ufb01", NormalForm::D), "\ufb01");
  EXPECT_EQ(normalize("\ufb01 \u2460 x\u00b2", NormalForm::KC), "fi 1 x2");
  EXPECT_EQ(normalize("\u1e9b\u0323", NormalForm::KC), "\u1e69");  // long s: compat, then composed
  EXPECT_EQ(normalize("\u1e9b\u0323", NormalForm::KD), "s\u0323\u0307");
  EXPECT_EQ(normalize("\ufdfa", NormalForm::KD).size(), 33u);     // 18 code points
}

// Every line of the Unicode Character Database's NormalizationTest.txt:
// c2 = NFC(c1), c3 = NFD(c1), c4 = NFKC(c1), c5 = NFKD(c1).
TEST(Unicode, NormalizationConformance) {
  FILE *in = popen("bzcat /usr/share/unicode/NormalizationTest.txt.bz2 2>/dev/null", "r");
  ASSERT_NE(in, nullptr);
  char line[1024];
  size_t checked = 0;
  while (fgets(line, sizeof line, in)) {
    if (line[0] == '#' || line[0] == '@' || line[0] == '\n')
      continue;
    std::string columns[5];
    const char *p = line;
    for (std::string &column : columns) {
      while (*p != ';') {
        char *end;
        append_utf8(column, static_cast<uint32_t>(strtoul(p, &end, 16)));
        p = *end == ' ' ? end + 1 : end;
      }
      ++p;
    }
    const std::pair<NormalForm, int> expected[] = {
        {NormalForm::C, 1}, {NormalForm::D, 2}, {NormalForm::KC, 3}, {NormalForm::KD, 4}};
    for (const auto &[form, column] : expected)
      ASSERT_EQ(normalize(columns[0], form), columns[column]) << line;
    ++checked;
  }
  pclose(in);
  if (checked == 0)
    GTEST_SKIP() << "no NormalizationTest.txt.bz2 (Debian unicode-data) or no bzcat";
  EXPECT_GT(checked, 19000u);
}

TEST(Unicode, Lowercase) {
  EXPECT_EQ(lowercase("ABC xyz \u00c9\u0130\u03a3\u1e9e\u01c5"),
            "abc xyz \u00e9i\u0307\u03c3\u00df\u01c6"); // İ has two code points; no final sigma
  EXPECT_EQ(lowercase("\U00010400"), "\U00010428");    // Deseret
}

} // namespace
} // namespace llmserve::unicode
