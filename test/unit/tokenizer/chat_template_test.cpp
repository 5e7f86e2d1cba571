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

} // namespace
} // namespace llmserve
