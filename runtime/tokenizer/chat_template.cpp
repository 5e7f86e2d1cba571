#include "tokenizer/chat_template.h"

#include "tokenizer/jinja.h"
#include "tokenizer/tokenizer.h"

namespace llmserve {

ChatTemplate::ChatTemplate(const std::string &source, std::string bos_token,
                           std::string eos_token)
    : template_(std::make_unique<jinja::Template>(jinja::parse(source))),
      bos_token_(std::move(bos_token)), eos_token_(std::move(eos_token)) {}

ChatTemplate ChatTemplate::from_tokenizer(const Tokenizer &tokenizer) {
  if (tokenizer.chat_template().empty())
    throw ChatTemplateError("the tokenizer has no chat template (tokenizer_config.json "
                            "has no chat_template)");
  return ChatTemplate(tokenizer.chat_template(), tokenizer.bos_token(), tokenizer.eos_token());
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate &&) noexcept = default;
ChatTemplate &ChatTemplate::operator=(ChatTemplate &&) noexcept = default;

std::string ChatTemplate::render(const nlohmann::ordered_json &messages,
                                 bool add_generation_prompt,
                                 const nlohmann::ordered_json &variables) const {
  if (!messages.is_array())
    throw ChatTemplateError("chat template: messages must be a list");
  if (!variables.is_object())
    throw ChatTemplateError("chat template: variables must be an object");
  nlohmann::ordered_json context = variables;
  context["messages"] = messages;
  context["add_generation_prompt"] = add_generation_prompt;
  context["bos_token"] = bos_token_;
  context["eos_token"] = eos_token_;
  return jinja::render(*template_, context);
}

} // namespace llmserve
