// Renders chat templates for test/tokenizer/chat_template_parity.py, which
// compares with Python's jinja2 set up as transformers sets it up.
// stdin: {"template", "bos_token", "eos_token",
//         "cases": [{"messages", "add_generation_prompt", "variables"}]}
// stdout: one {"text": ...} or {"error": ...} per case, as a JSON array.
#include "tokenizer/chat_template.h"

#include <iostream>
#include <iterator>
#include <string>

int main() {
  using nlohmann::ordered_json;
  std::string text(std::istreambuf_iterator<char>(std::cin), {});
  auto input = ordered_json::parse(text);
  ordered_json results = ordered_json::array();
  try {
    llmserve::ChatTemplate chat(input.at("template").get<std::string>(),
                                input.at("bos_token").get<std::string>(),
                                input.at("eos_token").get<std::string>());
    for (const auto &c : input.at("cases")) {
      try {
        results.push_back({{"text", chat.render(c.at("messages"),
                                                c.at("add_generation_prompt").get<bool>(),
                                                c.value("variables", ordered_json::object()))}});
      } catch (const llmserve::ChatTemplateError &e) {
        results.push_back({{"error", e.what()}});
      }
    }
  } catch (const llmserve::ChatTemplateError &e) {
    results = {{{"error", e.what()}}};
  }
  std::cout << results.dump() << "\n";
}
