#include "tokenizer/chat_template.h"

#include "test_tokenizers.h"
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

namespace llmserve {
namespace {

using nlohmann::ordered_json;

const ordered_json kMessages = ordered_json::array(
    {{{"role", "user"}, {"content", "Hi"}}, {{"role", "assistant"}, {"content", "Yo"}}});

std::string render_error(const std::string &source, const ordered_json &messages = kMessages) {
  try {
    ChatTemplate(source, "<s>", "</s>").render(messages, true);
  } catch (const ChatTemplateError &e) {
    return e.what();
  }
  return "";
}

std::string render(const std::string &source,
                   const ordered_json &variables = ordered_json::object()) {
  return ChatTemplate(source, "<s>", "</s>").render(kMessages, false, variables);
}

TEST(ChatTemplate, RendersWithTrimBlocksAndLstripBlocks) {
  ChatTemplate t("{{ bos_token }}\n{% for m in messages %}\n  {% if m.role == 'user' %}\n"
                 "[{{ m.content }}]\n  {% else %}\n{{ m.content + eos_token }}\n  {% endif %}\n"
                 "{% endfor %}\n{% if add_generation_prompt %}>{% endif %}",
                 "<s>", "</s>");
  EXPECT_EQ(t.render(kMessages, true), "<s>\n[Hi]\nYo</s>\n>");
  EXPECT_EQ(t.render(kMessages, false), "<s>\n[Hi]\nYo</s>\n");
}

TEST(ChatTemplate, ExtraVariables) {
  ChatTemplate t("{% if enable_thinking is defined and enable_thinking is false %}off{% endif %}",
                 "", "");
  EXPECT_EQ(t.render(kMessages, false, {{"enable_thinking", false}}), "off");
  EXPECT_EQ(t.render(kMessages, false), "");
}

TEST(ChatTemplate, FromTokenizer) {
  auto with = Tokenizer::from_json(testing::sentencepiece_json().dump(),
                                   R"({"bos_token": "<s>", "chat_template": "{{ bos_token }}!"})");
  EXPECT_EQ(ChatTemplate::from_tokenizer(with).render(kMessages, false), "<s>!");
  auto without = Tokenizer::from_json(testing::sentencepiece_json().dump());
  EXPECT_THROW(ChatTemplate::from_tokenizer(without), ChatTemplateError);
}

// Python's str.isspace() whitespace: Unicode White_Space and U+001C..U+001F.
TEST(ChatTemplate, StripsAndSplitsPythonWhitespace) {
  const ordered_json text = {{"s", "\x1c\u3000 a\u00a0b\u2028\n"}};
  EXPECT_EQ(render("[{{ s | trim }}]", text), "[a\u00a0b]");
  EXPECT_EQ(render("[{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip(none) }}]", text),
            "[a\u00a0b|a\u00a0b\u2028\n|\x1c\u3000 a\u00a0b]");
  EXPECT_EQ(render("{{ s.split() }}", text), "['a', 'b']");
  EXPECT_EQ(render("{{ '\u200b'.strip() | length }}"), "1"); // not White_Space
}

TEST(ChatTemplate, StripsCharactersByCodePoint) {
  // 'é' and 'è' share their first UTF-8 byte; Python strips whole code points.
  EXPECT_EQ(render("{{ 'èéè'.strip('è') }}|{{ 'xxaxx'.lstrip('x') }}|"
                   "{{ 'ab\n\n'.rstrip('\n') }}"),
            "é|axx|ab");
  EXPECT_EQ(render("{{ '--a--' | trim('-') }}"), "a");
}

TEST(ChatTemplate, TrimPrintsItsValueFirst) { // jinja2 trims str(value)
  EXPECT_EQ(render("[{{ 5 | trim }}|{{ none | trim }}|{{ missing | trim }}]"), "[5|None|]");
}

TEST(ChatTemplate, FailedLookupsAreUndefined) { // as jinja2's getitem
  EXPECT_EQ(render("[{{ none['x'] }}|{{ 'abc'['x'] }}|{{ [1]['x'] }}|{{ 7['x'] }}|{{ [1][5] }}]"),
            "[||||]");
  EXPECT_EQ(render("{{ 'yes' if parts[0]['text'] is undefined }}",
                   {{"parts", ordered_json::array({"bare string"})}}),
            "yes");
}

TEST(ChatTemplate, PrintsFloatsAsPython) { // repr(): positional for exponents -4..15
  const ordered_json numbers = {
      {"x", {1e15, 1e16, 1e-4, 1e-5, 0.1, 2.5, -0.0, 3.0, 1.5e300, 5e-324, 123456789.125}}};
  const std::string python = "[1000000000000000.0, 1e+16, 0.0001, 1e-05, 0.1, 2.5, -0.0, 3.0, "
                             "1.5e+300, 5e-324, 123456789.125]";
  EXPECT_EQ(render("{{ x }}", numbers), python);
  EXPECT_EQ(render("{{ x | tojson }}", numbers), python);
  EXPECT_EQ(render("{{ 7 / 2 }} {{ 4 / 4 }}"), "3.5 1.0");
}

TEST(ChatTemplate, TojsonIndent) {
  EXPECT_EQ(render("{{ [1, {'a': 2}] | tojson(indent=2) }}"), "[\n  1,\n  {\n    \"a\": 2\n  }\n]");
  EXPECT_EQ(render("{{ [1] | tojson(indent=-3) }}"), "[\n1\n]"); // Python: no indentation
}

TEST(ChatTemplate, BytesThatAreNotUtf8DoNotCrash) {
  const ordered_json bad = {{"s", std::string("a\xF0", 2)}};
  EXPECT_EQ(render("{{ s | length }} {{ s.strip() | length }} {{ s[-1] | length }}", bad),
            "2 2 1");
}

TEST(ChatTemplateErrors, NameTheFeatureAndLine) {
  EXPECT_NE(render_error("line one\n{% macro f() %}{% endmacro %}").find("line 2: unsupported tag '{% macro"),
            std::string::npos);
  EXPECT_NE(render_error("{{ messages | unique }}").find("unsupported filter 'unique'"), std::string::npos);
  EXPECT_NE(render_error("{{ x is odd }}").find("unsupported test 'odd'"), std::string::npos);
  EXPECT_NE(render_error("{{ cycler() }}").find("unsupported function call"), std::string::npos);
  EXPECT_NE(render_error("{{ 'a'.zfill(3) }}").find("unsupported method 'zfill' on string"),
            std::string::npos);
  EXPECT_NE(render_error("{{ 2 ** 3 }}").find("'**' is not supported"), std::string::npos);
  EXPECT_NE(render_error("{% set a, b = 1, 2 %}").find("only '{% set name = value %}'"),
            std::string::npos);
  EXPECT_NE(render_error("{{ (1, 2) }}").find("tuples are not supported"), std::string::npos);
}

TEST(ChatTemplateErrors, SyntaxErrors) {
  EXPECT_NE(render_error("{{ 'abc }}").find("unterminated string"), std::string::npos);
  EXPECT_NE(render_error("{% if true %}x").find("missing {% elif %}"), std::string::npos);
  EXPECT_NE(render_error("{{ 1 +").find("unterminated tag"), std::string::npos);
  EXPECT_NE(render_error("{# open").find("unterminated comment"), std::string::npos);
  EXPECT_NE(render_error("{{ a ; b }}").find("unexpected character ';'"), std::string::npos);
  EXPECT_NE(render_error("{% for x %}{% endfor %}").find("expected 'in'"), std::string::npos);
}

TEST(ChatTemplateErrors, RuntimeErrors) {
  EXPECT_NE(render_error("{{ raise_exception('roles must alternate') }}")
                .find("raised an exception: roles must alternate"),
            std::string::npos);
  EXPECT_NE(render_error("{{ nothing.field }}").find("attribute 'field' of an undefined value"),
            std::string::npos);
  EXPECT_NE(render_error("{{ 1 // 0 }}").find("division by zero"), std::string::npos);
  EXPECT_NE(render_error("{{ 'a' - 1 }}").find("unsupported operand types for -"), std::string::npos);
  EXPECT_NE(render_error("{% for x in 5 %}{% endfor %}").find("cannot iterate over int"),
            std::string::npos);
  EXPECT_NE(render_error("{% set n = 1 %}{% set n.a = 2 %}").find("not a namespace"), std::string::npos);
  EXPECT_NE(render_error("{{ messages }}", ordered_json::object()).find("messages must be a list"),
            std::string::npos);
}

std::string repeat(const std::string &s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += s;
  return out;
}

// Templates come from model files: bad ones must fail with a message, never
// exhaust the stack, trap or run away.
TEST(ChatTemplateErrors, BadTemplatesFailInsteadOfCrashing) {
  const std::string too_deep = "line 1: nested more than 100 levels deep";
  EXPECT_NE(render_error("{{ " + repeat("(", 100000) + "1" + repeat(")", 100000) + " }}")
                .find(too_deep), std::string::npos);
  EXPECT_NE(render_error("{{ " + repeat("[", 200) + repeat("]", 200) + " }}").find(too_deep),
            std::string::npos);
  EXPECT_NE(render_error("{{ " + repeat("not ", 100000) + "x }}").find(too_deep),
            std::string::npos);
  EXPECT_NE(render_error("{{ " + repeat("- ", 100000) + "1 }}").find(too_deep), std::string::npos);
  EXPECT_NE(render_error(repeat("{% if true %}", 100000) + repeat("{% endif %}", 100000))
                .find(too_deep), std::string::npos);
  EXPECT_EQ(render(repeat("(", 90) + "{{ " + repeat("(", 90) + "'ok'" + repeat(")", 90) + " }}"),
            repeat("(", 90) + "ok");
  EXPECT_NE(render_error("\n{{ 99999999999999999999 }}")
                .find("line 2: number 99999999999999999999 is out of range"),
            std::string::npos);
  EXPECT_NE(render_error("{{ 1" + repeat("0", 400) + ".5 }}").find("is out of range"),
            std::string::npos);
}

TEST(ChatTemplateErrors, IntegersDoNotOverflow) { // Python's integers are unbounded
  for (const char *source :
       {"{{ 9223372036854775807 + 1 }}", "{{ -9223372036854775807 - 2 }}",
        "{{ 4294967296 * 4294967296 }}", "{{ (-9223372036854775807 - 1) // -1 }}",
        "{{ -(-9223372036854775807 - 1) }}"})
    EXPECT_NE(render_error(source).find("integer overflow"), std::string::npos) << source;
  EXPECT_EQ(render("{{ (-9223372036854775807 - 1) % -1 }} {{ 5 % 9223372036854775807 }} "
                   "{{ -7 % 3 }}"),
            "0 5 2");
  try {
    render("{{ x + 1 }}", {{"x", uint64_t{1} << 63}});
    ADD_FAILURE();
  } catch (const ChatTemplateError &e) {
    EXPECT_NE(std::string(e.what()).find("integer out of range: 9223372036854775808"),
              std::string::npos);
  }
}

TEST(ChatTemplateErrors, LimitsOfTheSandbox) {
  EXPECT_EQ(render("{{ range(100000) | length }}"), "100000");
  EXPECT_NE(render_error("{{ range(100001) | length }}").find("range() of more than 100000 items"),
            std::string::npos);
  // The last step would pass INT64_MAX.
  EXPECT_EQ(render("{% for i in range(9223372036854775800, 9223372036854775807, 5) %}"
                   "{{ i }} {% endfor %}"),
            "9223372036854775800 9223372036854775805 ");
  EXPECT_NE(render_error("{{ [] | tojson(indent=65) }}")
                .find("tojson: indent above 64 is not supported"),
            std::string::npos);
}

// A render is untrusted code with a budget: steps, and the size of what it
// builds, so nested loops and doubling strings stop with a message.
TEST(ChatTemplateErrors, RendersHaveAStepAndSizeBudget) {
  const std::string steps = "took more than 1000000 steps to render";
  EXPECT_NE(render_error("{% for i in range(100000) %}{% for j in range(100000) %}"
                         "{% endfor %}{% endfor %}")
                .find(steps),
            std::string::npos);
  const std::string size = "built a value or output of more than 33554432 bytes";
  const std::string in_all = "built more than 268435456 bytes in all";
  for (const char *doubling :
       {"{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}"
        "{% endfor %}",
        "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
        "{% endfor %}",
        "{% set ns = namespace(s=[1, 2]) %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}"
        "{% endfor %}",
        "{% set ns = namespace(s='ab') %}{% for i in range(40) %}"
        "{% set ns.s = ns.s.replace('a', 'aa').replace('b', 'bb') %}{% endfor %}",
        "{% set ns = namespace(s=['ab', 'cd']) %}{% for i in range(40) %}"
        "{% set ns.s = [ns.s | join(ns.s | join), 'x'] %}{% endfor %}"})
    EXPECT_NE(render_error(doubling).find(size), std::string::npos) << doubling;
  // The output itself: 1,000 bytes a step.
  EXPECT_NE(render_error("{% for i in range(100000) %}" + repeat("0123456789", 100) +
                         "{% endfor %}")
                .find(size),
            std::string::npos);
  // Copies of a large value, each within the size limit, add up.
  EXPECT_NE(render_error("{% set ns = namespace(s='a') %}{% for i in range(24) %}"
                         "{% set ns.s = ns.s + ns.s %}{% endfor %}"
                         "{% for i in range(100) %}{% set x = ns.s.upper() %}{% endfor %}")
                .find(in_all),
            std::string::npos);
  EXPECT_NE(render_error("{% for i in range(100) %}{% for j in range(100000) %}{% endfor %}"
                         "{% endfor %}")
                .find(steps),
            std::string::npos);
  // Within the budget, the same constructs render.
  EXPECT_EQ(render("{% set ns = namespace(s='ab') %}{% for i in range(10) %}"
                   "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s | length }}"),
            "2048");
}

TEST(ChatTemplateErrors, StripArguments) {
  EXPECT_NE(render_error("{{ 'a'.strip(1) }}").find("strip(): expected a string argument"),
            std::string::npos);
  EXPECT_NE(render_error("{{ 'a'.rstrip('a', 'b') }}").find("rstrip() takes at most one argument"),
            std::string::npos);
  EXPECT_NE(render_error("{{ 'a' | trim(none, 2) }}").find("trim takes at most one argument"),
            std::string::npos);
}

} // namespace
} // namespace llmserve
