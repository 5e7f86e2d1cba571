// Chat templates: renders the Jinja templates of tokenizer_config.json
// ("chat_template") for a list of messages, as transformers'
// apply_chat_template does (trim_blocks, lstrip_blocks, its tojson). Supports
// the Jinja subset that the Llama 3, Qwen, Gemma 3, Mistral and Phi-4-mini
// templates use; anything else is a ChatTemplateError naming the feature and
// template line.
#ifndef LLMSERVE_TOKENIZER_CHAT_TEMPLATE_H
#define LLMSERVE_TOKENIZER_CHAT_TEMPLATE_H

#include <nlohmann/json.hpp>

#include <memory>
#include <stdexcept>
#include <string>

namespace llmserve {

class Tokenizer;

struct ChatTemplateError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace jinja {
struct Template;
}

class ChatTemplate {
public:
  // Parses the template; throws ChatTemplateError on a syntax error or an
  // unsupported feature.
  ChatTemplate(const std::string &source, std::string bos_token, std::string eos_token);
  // The tokenizer's chat template and BOS/EOS; throws ChatTemplateError when
  // its tokenizer_config.json has no template.
  static ChatTemplate from_tokenizer(const Tokenizer &tokenizer);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate &&) noexcept;
  ChatTemplate &operator=(ChatTemplate &&) noexcept;

  // `messages`: [{"role": ..., "content": ...}, ...] (ordered_json keeps key
  // order, which tojson output shows). `variables` are further template
  // variables (tools, enable_thinking, ...). Throws ChatTemplateError,
  // including for raise_exception() in the template.
  std::string render(const nlohmann::ordered_json &messages, bool add_generation_prompt,
                     const nlohmann::ordered_json &variables =
                         nlohmann::ordered_json::object()) const;

private:
  std::unique_ptr<jinja::Template> template_;
  std::string bos_token_, eos_token_;
};

} // namespace llmserve

#endif
