#include "bench/workload.h"

#include "cli/command_line.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <random>
#include <stdexcept>

namespace llmserve::bench {
namespace {

int32_t parse_length(const std::string &flag, const std::string &text) {
  const std::optional<int64_t> value = cli::to_integer(text);
  if (!value || *value < 1 || *value > INT32_MAX)
    throw std::invalid_argument(flag + " '" + text + "': expected a length >= 1");
  return static_cast<int32_t>(*value);
}

// Draws prompts: random token ids, made into text that encodes back to the
// wanted number of tokens when there is a tokenizer (vLLM's
// gen_prompt_decode_to_target_len: decoding random ids and encoding the text
// merges or splits tokens, so adjust and retry).
class PromptMaker {
public:
  PromptMaker(const TokenSource &source, uint64_t seed) : source_(source), rng_(seed) {
    if (source.tokenizer) {
      const Tokenizer &t = *source.tokenizer;
      // Draw from tokens that are text on their own: a byte-fallback token
      // alone is a piece of a UTF-8 character, decodes to U+FFFD, and
      // encodes back to three tokens, so prompts would never meet their
      // length.
      for (size_t id = 0; id < t.vocab_size(); ++id) {
        const auto token = static_cast<int32_t>(id);
        if (t.is_special(token) || t.token_to_id(t.id_to_token(token)) != token)
          continue;
        const std::string text = t.decode({token}, false);
        if (!text.empty() && text.find("\xEF\xBF\xBD") == std::string::npos)
          ordinary_ids_.push_back(token);
      }
      if (ordinary_ids_.empty())
        throw std::invalid_argument("the tokenizer has no ordinary tokens to draw prompts from");
      num_special_ = static_cast<int32_t>(t.encode("", true).size());
    } else if (source.vocab_size <= 0) {
      throw std::invalid_argument("random prompts need a tokenizer or a vocabulary size");
    }
  }

  // Tokens the server adds to every prompt (BOS).
  int32_t num_special() const { return num_special_; }

  // `length` tokens of random text (ids only without a tokenizer).
  std::pair<std::string, std::vector<int32_t>> text(int32_t length) {
    std::vector<int32_t> ids = draw(length);
    if (!source_.tokenizer)
      return {std::string(), ids};
    const Tokenizer &t = *source_.tokenizer;
    std::string text = t.decode(ids, false);
    for (int attempt = 0; attempt < 10; ++attempt) {
      std::vector<int32_t> again = t.encode(text, false);
      if (static_cast<int32_t>(again.size()) == length)
        return {text, again};
      if (static_cast<int32_t>(again.size()) > length) {
        again.resize(length);
      } else {
        const std::vector<int32_t> more = draw(length - static_cast<int32_t>(again.size()));
        again.insert(again.end(), more.begin(), more.end());
      }
      text = t.decode(again, false);
    }
    return {text, t.encode(text, false)};
  }

  // The prompt of `text` as the server tokenizes it, or `ids` itself.
  std::vector<int32_t> prompt_tokens(const std::string &text, std::vector<int32_t> ids) const {
    return source_.tokenizer ? source_.tokenizer->encode(text, true) : ids;
  }

  std::mt19937_64 &rng() { return rng_; }

private:
  std::vector<int32_t> draw(int32_t n) {
    std::vector<int32_t> ids(std::max(n, 0));
    if (source_.tokenizer) {
      std::uniform_int_distribution<size_t> pick(0, ordinary_ids_.size() - 1);
      for (int32_t &id : ids)
        id = ordinary_ids_[pick(rng_)];
    } else {
      std::uniform_int_distribution<int32_t> pick(0, source_.vocab_size - 1);
      for (int32_t &id : ids)
        id = pick(rng_);
    }
    return ids;
  }

  TokenSource source_;
  std::mt19937_64 rng_;
  std::vector<int32_t> ordinary_ids_;
  int32_t num_special_ = 0;
};

int32_t uniform(LengthRange range, std::mt19937_64 &rng) {
  return std::uniform_int_distribution<int32_t>(range.min, range.max)(rng);
}

} // namespace

LengthRange parse_length_range(const std::string &flag, const std::string &text,
                               double range_ratio) {
  const size_t colon = text.find(':');
  LengthRange range;
  if (colon != std::string::npos) {
    range.min = parse_length(flag, text.substr(0, colon));
    range.max = parse_length(flag, text.substr(colon + 1));
    if (range.min > range.max)
      throw std::invalid_argument(flag + " '" + text + "': MIN is above MAX");
    return range;
  }
  if (!(range_ratio >= 0 && range_ratio < 1))
    throw std::invalid_argument("--random-range-ratio " + std::to_string(range_ratio) +
                                ": expected a value in [0, 1)");
  const int32_t n = parse_length(flag, text);
  range.min = std::max<int32_t>(1, static_cast<int32_t>(n * (1 - range_ratio)));
  range.max = static_cast<int32_t>(n * (1 + range_ratio));
  return range;
}

std::vector<BenchRequest> random_workload(int32_t num_prompts, LengthRange input,
                                          LengthRange output, const TokenSource &source,
                                          uint64_t seed) {
  // Lengths come from their own generator, so a seed gives the same lengths
  // with or without a tokenizer: offline and served runs see one workload.
  std::mt19937_64 lengths(seed);
  PromptMaker maker(source, seed + 1);
  std::vector<BenchRequest> requests(std::max(num_prompts, 0));
  for (BenchRequest &r : requests) {
    const int32_t length = std::max(1, uniform(input, lengths) - maker.num_special());
    r.output_len = uniform(output, lengths);
    auto [text, ids] = maker.text(length);
    r.prompt_tokens = maker.prompt_tokens(text, std::move(ids));
    r.prompt = std::move(text);
  }
  return requests;
}

std::vector<BenchRequest> shared_prefix_workload(const SharedPrefixSpec &spec,
                                                 const TokenSource &source,
                                                 uint64_t seed) {
  for (auto [name, value] : {std::pair{"--gsp-num-groups", spec.num_groups},
                             {"--gsp-prompts-per-group", spec.prompts_per_group},
                             {"--gsp-system-prompt-len", spec.system_prompt_len},
                             {"--gsp-question-len", spec.question_len},
                             {"--gsp-output-len", spec.output_len}})
    if (value < 1)
      throw std::invalid_argument(std::string(name) + " " + std::to_string(value) +
                                  ": expected a value >= 1");
  PromptMaker maker(source, seed);
  std::vector<BenchRequest> requests;
  for (int32_t g = 0; g < spec.num_groups; ++g) {
    auto [system, system_ids] = maker.text(spec.system_prompt_len);
    for (int32_t q = 0; q < spec.prompts_per_group; ++q) {
      auto [question, question_ids] = maker.text(spec.question_len);
      BenchRequest r;
      r.prompt = source.tokenizer ? system + "\n\n" + question : std::string();
      std::vector<int32_t> ids = system_ids;
      ids.insert(ids.end(), question_ids.begin(), question_ids.end());
      r.prompt_tokens = maker.prompt_tokens(r.prompt, std::move(ids));
      r.output_len = spec.output_len;
      requests.push_back(std::move(r));
    }
  }
  std::shuffle(requests.begin(), requests.end(), maker.rng());
  return requests;
}

std::vector<BenchRequest> jsonl_workload(const std::string &path, int32_t num_prompts,
                                         int32_t default_output_len,
                                         const Tokenizer &tokenizer) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error(path + ": cannot open the prompt file");
  std::vector<BenchRequest> requests;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (num_prompts > 0 && static_cast<int32_t>(requests.size()) == num_prompts)
      break;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception &e) { // a syntax error, or a number out of range
      throw std::runtime_error(where + "not JSON: " + e.what());
    }
    if (!j.is_object() || !j.contains("prompt") || !j["prompt"].is_string() ||
        j["prompt"].get<std::string>().empty())
      throw std::runtime_error(where + "expected an object with a non-empty string \"prompt\"");
    BenchRequest r;
    r.prompt = j["prompt"].get<std::string>();
    r.output_len = default_output_len;
    if (j.contains("output_len")) {
      const nlohmann::json &n = j["output_len"];
      if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > INT32_MAX)
        throw std::runtime_error(where + "\"output_len\" must be an integer >= 1, got " +
                                 n.dump());
      r.output_len = n.get<int32_t>();
    }
    try {
      r.prompt_tokens = tokenizer.encode(r.prompt, true);
    } catch (const std::exception &e) {
      throw std::runtime_error(where + "\"prompt\": " + e.what());
    }
    requests.push_back(std::move(r));
  }
  if (requests.empty())
    throw std::runtime_error(path + ": no prompts");
  return requests;
}

} // namespace llmserve::bench
