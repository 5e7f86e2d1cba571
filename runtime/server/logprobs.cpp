#include "server/logprobs.h"

#include <algorithm>
#include <cmath>

using nlohmann::json;

namespace llmserve {
namespace {

// JSON has no infinity: like vLLM, an impossible token gets -9999.
double finite(float logprob) {
  return std::isfinite(logprob) ? double(logprob) : -9999.0;
}

json utf8_bytes(const std::string &s) {
  json bytes = json::array();
  for (unsigned char c : s)
    bytes.push_back(int(c));
  return bytes;
}

} // namespace

int64_t num_characters(const std::string &text) {
  return std::count_if(text.begin(), text.end(),
                       [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

json completion_logprobs(const std::vector<TokenLogprob> &tokens) {
  json out = {{"tokens", json::array()},
              {"token_logprobs", json::array()},
              {"top_logprobs", json::array()},
              {"text_offset", json::array()}};
  for (const TokenLogprob &t : tokens) {
    out["tokens"].push_back(t.token);
    out["token_logprobs"].push_back(finite(t.logprob));
    // As vLLM: the top tokens and the sampled one, by text.
    json top = json::object();
    for (const auto &[token, logprob] : t.top)
      top[token] = finite(logprob);
    top[t.token] = finite(t.logprob);
    out["top_logprobs"].push_back(std::move(top));
    out["text_offset"].push_back(t.text_offset);
  }
  return out;
}

json chat_logprobs(const std::vector<TokenLogprob> &tokens) {
  json content = json::array();
  for (const TokenLogprob &t : tokens) {
    json top = json::array();
    for (const auto &[token, logprob] : t.top)
      top.push_back({{"token", token},
                     {"logprob", finite(logprob)},
                     {"bytes", utf8_bytes(token)}});
    content.push_back({{"token", t.token},
                       {"logprob", finite(t.logprob)},
                       {"bytes", utf8_bytes(t.token)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

} // namespace llmserve
