#include "tokenizer/decoder.h"

#include "tokenizer/bpe.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/unicode.h"

#include <stdexcept>

namespace llmserve {

void Decoder::append_steps(const nlohmann::json &config, std::vector<Step> &steps) {
  std::string type = json_string(config, "type", "decoder");
  if (type == "Sequence") {
    for (const auto &child : json_field(config, "decoders", "decoder"))
      append_steps(child, steps);
  } else if (type == "ByteLevel") {
    steps.push_back({Step::ByteLevel});
  } else if (type == "ByteFallback") {
    steps.push_back({Step::ByteFallback});
  } else if (type == "Fuse") {
    steps.push_back({Step::Fuse});
  } else if (type == "Replace") {
    steps.push_back({Step::Replace,
                     Pattern::from_json(json_field(config, "pattern", "decoder.Replace"),
                                        "decoder.Replace.pattern"),
                     json_string(config, "content", "decoder.Replace")});
  } else if (type == "Strip") {
    Step step{Step::Strip, {}, json_string(config, "content", "decoder.Strip")};
    const auto &start = json_field(config, "start", "decoder.Strip");
    const auto &stop = json_field(config, "stop", "decoder.Strip");
    if (!start.is_number_unsigned() || !stop.is_number_unsigned())
      throw std::invalid_argument("decoder.Strip: start and stop must be counts");
    step.start = start.get<size_t>();
    step.stop = stop.get<size_t>();
    steps.push_back(std::move(step));
  } else if (type == "Metaspace") {
    std::string replacement = json_string(config, "replacement", "decoder.Metaspace");
    if (replacement.empty())
      throw std::invalid_argument("decoder.Metaspace: empty replacement");
    Step step{Step::Metaspace, Pattern::literal(replacement), " "};
    std::string scheme = config.value("prepend_scheme", "");
    bool prepends = scheme.empty() ? json_bool(config, "add_prefix_space", true, "decoder.Metaspace")
                                   : scheme != "never";
    step.start = prepends ? 1 : 0;
    steps.push_back(std::move(step));
  } else {
    throw std::invalid_argument(
        "unsupported decoder type '" + type +
        "' (supported: ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence)");
  }
}

Decoder Decoder::from_json(const nlohmann::json &config) {
  Decoder d;
  d.none_ = config.is_null();
  if (!d.none_)
    append_steps(config, d.steps_);
  return d;
}

void Decoder::apply(const Step &step, std::vector<std::string> &tokens) {
  switch (step.kind) {
  case Step::ByteLevel: {
    std::string bytes;
    for (const auto &t : tokens) {
      // A spelling outside the byte map (an added token) stands for itself.
      auto decoded = byte_level_decode(t);
      bytes += decoded ? *decoded : t;
    }
    tokens.assign(1, unicode::utf8_lossy(bytes));
    break;
  }
  case Step::Replace:
    for (auto &t : tokens)
      t = step.pattern->replace(t, step.content);
    break;
  case Step::ByteFallback: {
    std::vector<std::string> out;
    std::string pending; // consecutive <0xXX> bytes
    auto flush = [&] {
      if (pending.empty())
        return;
      if (unicode::valid_utf8_prefix(pending) == pending.size())
        out.push_back(pending);
      else
        for (size_t i = 0; i < pending.size(); ++i)
          out.push_back("\xEF\xBF\xBD"); // one U+FFFD per byte
      pending.clear();
    };
    for (auto &t : tokens) {
      int b = byte_fallback_byte(t);
      if (b >= 0) {
        pending += static_cast<char>(b);
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens = std::move(out);
    break;
  }
  case Step::Fuse: {
    std::string joined;
    for (const auto &t : tokens)
      joined += t;
    tokens.assign(1, std::move(joined));
    break;
  }
  case Step::Metaspace:
    // The replacement is a space, except in the first token, where the
    // prepended one (and, as in Hugging Face, any other) is dropped.
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = step.pattern->replace(tokens[i], i == 0 && step.start ? "" : step.content);
    break;
  case Step::Strip:
    for (auto &t : tokens) {
      const std::string &c = step.content;
      size_t begin = 0, end = t.size();
      for (size_t i = 0; i < step.start && !c.empty() &&
                         t.compare(begin, c.size(), c) == 0;
           ++i)
        begin += c.size();
      for (size_t i = 0; i < step.stop && !c.empty() && end >= begin + c.size() &&
                         t.compare(end - c.size(), c.size(), c) == 0;
           ++i)
        end -= c.size();
      t = t.substr(begin, end - begin);
    }
    break;
  }
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
  std::string text;
  if (none_) {
    for (size_t i = 0; i < tokens.size(); ++i)
      text += (i ? " " : "") + tokens[i];
    return text;
  }
  for (const Step &step : steps_)
    apply(step, tokens);
  for (const auto &t : tokens)
    text += t;
  return text;
}

std::string Decoder::token_bytes(std::string spelling) const {
  if (none_)
    return " " + spelling; // decode joins spellings with spaces
  for (const Step &step : steps_) {
    switch (step.kind) {
    case Step::ByteLevel:
      if (auto decoded = byte_level_decode(spelling))
        spelling = std::move(*decoded);
      break;
    case Step::Replace:
    case Step::Metaspace: // mid-sequence, its replacement is always a space
      spelling = step.pattern->replace(spelling, step.content);
      break;
    case Step::ByteFallback:
      if (int b = byte_fallback_byte(spelling); b >= 0)
        spelling.assign(1, static_cast<char>(b));
      break;
    case Step::Fuse:
    case Step::Strip:
      break;
    }
  }
  return spelling;
}

} // namespace llmserve
