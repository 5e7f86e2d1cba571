#include "tokenizer/normalizer.h"

#include "tokenizer/json_fields.h"
#include "tokenizer/unicode.h"

#include <stdexcept>

namespace llmserve {

void Normalizer::append_steps(const nlohmann::json &config,
                              std::vector<Step> &steps) {
  std::string type = json_string(config, "type", "normalizer");
  if (type == "Sequence") {
    for (const auto &child : json_field(config, "normalizers", "normalizer"))
      append_steps(child, steps);
  } else if (type == "NFC") {
    steps.push_back({Step::Nfc, {}, {}});
  } else if (type == "Prepend") {
    steps.push_back({Step::Prepend, {}, json_string(config, "prepend", "normalizer")});
  } else if (type == "Replace") {
    const auto &pattern = json_field(config, "pattern", "normalizer.Replace");
    if (!pattern.is_object() || !pattern.contains("String"))
      throw std::invalid_argument(
          "normalizer.Replace: only String patterns are supported, got " +
          pattern.dump());
    std::string from = json_string(pattern, "String", "normalizer.Replace.pattern");
    if (from.empty())
      throw std::invalid_argument("normalizer.Replace: empty pattern");
    steps.push_back({Step::Replace, from, json_string(config, "content", "normalizer.Replace")});
  } else {
    throw std::invalid_argument("unsupported normalizer type '" + type +
                                "' (supported: NFC, Prepend, Replace, Sequence)");
  }
}

Normalizer Normalizer::from_json(const nlohmann::json &config) {
  Normalizer n;
  if (!config.is_null())
    append_steps(config, n.steps_);
  return n;
}

std::string Normalizer::normalize(std::string_view text) const {
  std::string s(text);
  for (const Step &step : steps_) {
    switch (step.kind) {
    case Step::Nfc:
      s = unicode::normalize(s, unicode::NormalForm::C);
      break;
    case Step::Prepend:
      if (!s.empty())
        s.insert(0, step.content);
      break;
    case Step::Replace: {
      std::string out;
      out.reserve(s.size());
      size_t pos = 0;
      for (size_t hit; (hit = s.find(step.pattern, pos)) != std::string::npos;
           pos = hit + step.pattern.size())
        out.append(s, pos, hit - pos).append(step.content);
      out.append(s, pos, std::string::npos);
      s = std::move(out);
      break;
    }
    }
  }
  return s;
}

} // namespace llmserve
