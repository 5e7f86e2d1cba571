#include "tokenizer/normalizer.h"

#include "tokenizer/json_fields.h"

#include <stdexcept>

namespace llmserve {
namespace {

std::string strip(std::string_view s, bool left, bool right) {
  size_t begin = 0, end = s.size(), len;
  while (left && begin < end && unicode::is_white_space(unicode::decode_at(s, begin, &len)))
    begin += len;
  while (right && end > begin) {
    size_t start = end - 1;
    while ((static_cast<unsigned char>(s[start]) & 0xC0) == 0x80)
      --start;
    if (!unicode::is_white_space(unicode::decode_at(s, start, &len)))
      break;
    end = start;
  }
  return std::string(s.substr(begin, end - begin));
}

std::optional<unicode::NormalForm> normal_form(const std::string &type) {
  if (type == "NFC") return unicode::NormalForm::C;
  if (type == "NFD") return unicode::NormalForm::D;
  if (type == "NFKC") return unicode::NormalForm::KC;
  if (type == "NFKD") return unicode::NormalForm::KD;
  return std::nullopt;
}

// Drops combining marks (\p{M}), as Hugging Face's StripAccents.
std::string strip_accents(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0, len; i < s.size(); i += len)
    if (!unicode::is_mark(unicode::decode_at(s, i, &len)))
      out.append(s, i, len);
  return out;
}

} // namespace

void Normalizer::append_steps(const nlohmann::json &config, const std::string &where,
                              std::vector<Step> &steps) {
  std::string type = json_string(config, "type", where);
  if (auto form = normal_form(type)) {
    Step step{Step::Unicode};
    step.form = *form;
    steps.push_back(std::move(step));
  } else if (type == "Sequence") {
    const auto &children = json_field(config, "normalizers", where);
    if (!children.is_array())
      throw std::invalid_argument(where + ".normalizers: expected a list");
    for (size_t i = 0; i < children.size(); ++i)
      append_steps(children[i], where + ".normalizers[" + std::to_string(i) + "]", steps);
  } else if (type == "Lowercase") {
    steps.push_back({Step::Lowercase});
  } else if (type == "Strip") {
    Step step{Step::Strip};
    step.left = json_bool(config, "strip_left", where);
    step.right = json_bool(config, "strip_right", where);
    steps.push_back(std::move(step));
  } else if (type == "StripAccents") {
    steps.push_back({Step::StripAccents});
  } else if (type == "Prepend") {
    Step step{Step::Prepend};
    step.content = json_string(config, "prepend", where);
    steps.push_back(std::move(step));
  } else if (type == "Replace") {
    Step step{Step::Replace};
    step.pattern = Pattern::from_json(json_field(config, "pattern", where), where + ".pattern");
    step.content = json_string(config, "content", where);
    steps.push_back(std::move(step));
  } else {
    throw std::invalid_argument(where + ".type: unsupported normalizer '" + type +
                                "' (supported: NFC, NFD, NFKC, NFKD, Lowercase, Strip, "
                                "StripAccents, Replace, Prepend, Sequence)");
  }
}

Normalizer Normalizer::from_json(const nlohmann::json &config) {
  Normalizer n;
  if (!config.is_null())
    append_steps(config, "normalizer", n.steps_);
  return n;
}

std::string Normalizer::apply(const Step &step, std::string s) {
  switch (step.kind) {
  case Step::Unicode:
    return unicode::normalize(s, step.form);
  case Step::Lowercase:
    return unicode::lowercase(s);
  case Step::Strip:
    return strip(s, step.left, step.right);
  case Step::StripAccents:
    return strip_accents(s);
  case Step::Prepend:
    if (!s.empty())
      s.insert(0, step.content);
    return s;
  case Step::Replace:
    return step.pattern->replace(s, step.content);
  }
  return s;
}

std::string Normalizer::normalize(std::string_view text) const {
  std::string s(text);
  for (const Step &step : steps_)
    s = apply(step, std::move(s));
  return s;
}

} // namespace llmserve
