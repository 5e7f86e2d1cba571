#include "tokenizer/tokenizer.h"

#include "tokenizer/json_fields.h"
#include "tokenizer/unicode.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace llmserve {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot open the file");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json parse_json(const std::string &text, const char *what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) { // a syntax error, or a number out of range
    throw std::invalid_argument(std::string(what) + ": invalid JSON: " + e.what());
  }
}

// A tokenizer_config.json token entry: a string, {"content": ...}, or null.
std::string config_token(const nlohmann::json &config, const char *key) {
  if (!config.contains(key) || config.at(key).is_null())
    return "";
  const auto &v = config.at(key);
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_object())
    return json_string(v, "content", std::string("tokenizer_config.") + key);
  throw std::invalid_argument(std::string("tokenizer_config.") + key +
                              ": expected a string or an object, got " + v.dump());
}

} // namespace

Tokenizer Tokenizer::from_file(const std::string &path,
                               const std::string &config_path) {
  fs::path json_path = path, config = config_path, generation;
  if (fs::is_directory(json_path)) {
    fs::path dir = json_path;
    json_path = dir / "tokenizer.json";
    if (config.empty() && fs::exists(dir / "tokenizer_config.json"))
      config = dir / "tokenizer_config.json";
    if (fs::exists(dir / "generation_config.json"))
      generation = dir / "generation_config.json";
  }
  Tokenizer t;
  const fs::path *current = &json_path;
  try {
    t.load_tokenizer_json(read_file(json_path));
    current = &config;
    if (!config.empty())
      t.load_config(read_file(config));
    current = &generation;
    if (!generation.empty()) {
      auto gen = parse_json(read_file(generation), "generation_config.json");
      if (gen.contains("eos_token_id")) {
        auto eos = gen.at("eos_token_id");
        for (const auto &id : eos.is_array() ? eos : nlohmann::json::array({eos})) {
          if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
              id.get<size_t>() >= t.vocab_size())
            throw std::invalid_argument("eos_token_id: " + id.dump() +
                                        " is not a token id");
          t.add_eos(id.get<int32_t>());
        }
      }
    }
  } catch (const std::exception &e) {
    throw std::invalid_argument(current->string() + ": " + e.what());
  }
  return t;
}

Tokenizer Tokenizer::from_json(const std::string &tokenizer_json,
                               const std::string &config_json) {
  Tokenizer t;
  t.load_tokenizer_json(tokenizer_json);
  if (!config_json.empty())
    t.load_config(config_json);
  return t;
}

void Tokenizer::load_tokenizer_json(const std::string &text) {
  auto j = parse_json(text, "tokenizer.json");
  if (!j.is_object())
    throw std::invalid_argument("tokenizer.json: expected an object");
  normalizer_ = Normalizer::from_json(j.value("normalizer", nlohmann::json()));
  pre_tokenizer_ = PreTokenizer::from_json(j.value("pre_tokenizer", nlohmann::json()));
  load_model(json_field(j, "model", "tokenizer.json"));
  load_added_tokens(j.value("added_tokens", nlohmann::json::array()));
  decoder_ = Decoder::from_json(j.value("decoder", nlohmann::json()));
  load_post_processor(j.value("post_processor", nlohmann::json()));
}

void Tokenizer::load_model(const nlohmann::json &model) {
  std::string type = model.value("type", "BPE");
  if (type != "BPE")
    throw std::invalid_argument("model.type '" + type +
                                "' is not supported (supported: BPE)");
  const auto &vocab = json_field(model, "vocab", "model");
  if (!vocab.is_object())
    throw std::invalid_argument("model.vocab: expected an object");
  token_to_id_.reserve(vocab.size());
  id_to_token_.reserve(vocab.size());
  for (const auto &[token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() > INT32_MAX)
      throw std::invalid_argument("model.vocab['" + token +
                                  "']: invalid id " + id.dump());
    set_token(id.get<int32_t>(), token, false);
  }
  // Until the added tokens are loaded, token_to_id_ is the model's vocab.
  const auto &model_vocab = token_to_id_;

  std::vector<std::pair<std::string, std::string>> merges;
  const auto &merge_list = json_field(model, "merges", "model");
  if (!merge_list.is_array())
    throw std::invalid_argument("model.merges: expected a list");
  merges.reserve(merge_list.size());
  for (const auto &m : merge_list) {
    if (m.is_string()) {
      std::string s = m.get<std::string>();
      size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        throw std::invalid_argument("model.merges: '" + s +
                                    "' is not two tokens separated by a space");
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      throw std::invalid_argument("model.merges: invalid entry " + m.dump());
    }
  }

  auto dropout = model.value("dropout", nlohmann::json());
  if (!dropout.is_null() && !(dropout.is_number() && dropout.get<double>() == 0.0))
    throw std::invalid_argument("model.dropout " + dropout.dump() + " is not supported");
  for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto v = model.value(key, nlohmann::json());
    if (!v.is_null() && v != "")
      throw std::invalid_argument(std::string("model.") + key + " " + v.dump() +
                                  " is not supported");
  }
  BpeOptions options;
  options.byte_level = pre_tokenizer_.byte_level();
  options.byte_fallback = json_bool(model, "byte_fallback", false, "model");
  options.ignore_merges = json_bool(model, "ignore_merges", false, "model");
  options.fuse_unk = json_bool(model, "fuse_unk", false, "model");
  if (!model.value("unk_token", nlohmann::json()).is_null()) {
    std::string unk = json_string(model, "unk_token", "model");
    auto it = model_vocab.find(unk);
    if (it == model_vocab.end())
      throw std::invalid_argument("model.unk_token '" + unk + "' is not in model.vocab");
    options.unk_id = it->second;
  }
  bpe_ = std::make_unique<Bpe>(model_vocab, merges, options);
}

void Tokenizer::load_added_tokens(const nlohmann::json &added) {
  if (!added.is_array())
    throw std::invalid_argument("added_tokens: expected an array");
  std::vector<AddedToken> raw, normalized;
  std::vector<std::string> raw_patterns, normalized_patterns;
  for (const auto &entry : added) {
    AddedToken t;
    const auto &id = json_field(entry, "id", "added_tokens");
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      throw std::invalid_argument("added_tokens: invalid id " + id.dump());
    t.id = id.get<int32_t>();
    t.content = json_string(entry, "content", "added_tokens");
    std::string where = "added_tokens['" + t.content + "']";
    if (t.content.empty())
      throw std::invalid_argument("added_tokens: empty content for id " + id.dump());
    t.special = json_bool(entry, "special", false, where);
    t.lstrip = json_bool(entry, "lstrip", false, where);
    t.rstrip = json_bool(entry, "rstrip", false, where);
    t.normalized = json_bool(entry, "normalized", !t.special, where);
    if (json_bool(entry, "single_word", false, where))
      throw std::invalid_argument(where + ": single_word=true is not supported");
    if (t.normalized) {
      normalized_patterns.push_back(normalizer_.normalize(t.content));
      normalized.push_back(std::move(t));
    } else {
      raw_patterns.push_back(t.content);
      raw.push_back(std::move(t));
    }
  }

  for (const auto *list : {&raw, &normalized})
    for (const auto &t : *list)
      set_token(t.id, t.content, t.special);
  // Hugging Face spells a normalized added token by its normalized content
  // (decode shows it so), though it looks the token up by its content; and as
  // decode skips the tokens spelled like a special token, a special one
  // whose spelling changed is not skipped.
  for (size_t i = 0; i < normalized.size(); ++i) {
    if (normalized_patterns[i] == normalized[i].content)
      continue;
    id_to_token_[normalized[i].id] = normalized_patterns[i];
    special_[normalized[i].id] = false;
  }
  raw_added_ = std::make_unique<AddedTokenMatcher>(std::move(raw), std::move(raw_patterns));
  normalized_added_ = std::make_unique<AddedTokenMatcher>(
      std::move(normalized), std::move(normalized_patterns));
}

void Tokenizer::set_token(int32_t id, const std::string &spelling, bool special) {
  if (static_cast<size_t>(id) >= id_to_token_.size()) {
    id_to_token_.resize(id + 1);
    has_token_.resize(id + 1, false);
    special_.resize(id + 1, false);
  }
  // An added token over a vocab entry: the added token's spelling wins, as in
  // Hugging Face's id_to_token.
  id_to_token_[id] = spelling;
  has_token_[id] = true;
  special_[id] = special;
  token_to_id_[spelling] = id;
}

void Tokenizer::load_post_processor(const nlohmann::json &config) {
  if (config.is_null())
    return;
  std::string type = json_string(config, "type", "post_processor");
  if (type == "Sequence") {
    for (const auto &child : json_field(config, "processors", "post_processor"))
      load_post_processor(child);
  } else if (type == "TemplateProcessing") {
    const auto &specials = json_field(config, "special_tokens", "post_processor");
    bool seen_sequence = false;
    for (const auto &item : json_field(config, "single", "post_processor")) {
      if (item.contains("Sequence")) {
        seen_sequence = true;
        continue;
      }
      std::string name = json_string(json_field(item, "SpecialToken", "post_processor.single"),
                                     "id", "post_processor.single.SpecialToken");
      const auto &entry = json_field(specials, name.c_str(), "post_processor.special_tokens");
      for (const auto &id : json_field(entry, "ids", "post_processor.special_tokens." + name)) {
        if (!id.is_number_integer() || !has_token(id.get<int32_t>()))
          throw std::invalid_argument("post_processor.special_tokens." + name +
                                      ": invalid id " + id.dump());
        (seen_sequence ? suffix_ids_ : prefix_ids_).push_back(id.get<int32_t>());
      }
    }
  } else if (type != "ByteLevel") {
    throw std::invalid_argument("unsupported post_processor type '" + type +
                                "' (supported: TemplateProcessing, ByteLevel, Sequence)");
  }
}

void Tokenizer::load_config(const std::string &text) {
  auto config = parse_json(text, "tokenizer_config.json");
  if (!config.is_object())
    throw std::invalid_argument("tokenizer_config.json: expected an object");
  bos_token_ = config_token(config, "bos_token");
  eos_token_ = config_token(config, "eos_token");
  auto id_of = [&](const std::string &token, const char *key) -> std::optional<int32_t> {
    if (token.empty())
      return std::nullopt;
    auto id = token_to_id(token);
    if (!id)
      throw std::invalid_argument(std::string("tokenizer_config.") + key + " '" +
                                  token + "' is not a token");
    return id;
  };
  bos_id_ = id_of(bos_token_, "bos_token");
  if (auto eos = id_of(eos_token_, "eos_token"))
    add_eos(*eos);
  // Like transformers' Llama tokenizers: these flags, when given, decide
  // whether encoding with special tokens adds BOS / EOS.
  auto flag = [&](const char *key, const std::optional<int32_t> &id,
                  std::vector<int32_t> &ids) {
    if (!config.contains(key))
      return;
    ids.clear();
    if (!json_bool(config, key, false, "tokenizer_config"))
      return;
    if (!id)
      throw std::invalid_argument(std::string("tokenizer_config.") + key +
                                  " is true but there is no such token");
    ids.push_back(*id);
  };
  flag("add_bos_token", bos_id_, prefix_ids_);
  flag("add_eos_token", eos_ids_.empty() ? std::nullopt : std::optional<int32_t>(eos_ids_[0]),
       suffix_ids_);

  if (config.contains("chat_template") && !config.at("chat_template").is_null()) {
    const auto &t = config.at("chat_template");
    if (t.is_string()) {
      chat_template_ = t.get<std::string>();
    } else if (t.is_array()) {
      // Named templates: the one called "default".
      for (const auto &named : t)
        if (named.is_object() && named.value("name", "") == "default")
          chat_template_ = json_string(named, "template", "tokenizer_config.chat_template");
      if (chat_template_.empty())
        throw std::invalid_argument("tokenizer_config.chat_template: no template named 'default'");
    } else {
      throw std::invalid_argument("tokenizer_config.chat_template: expected a string or a list");
    }
  }
}

void Tokenizer::add_eos(int32_t id) {
  if (std::find(eos_ids_.begin(), eos_ids_.end(), id) == eos_ids_.end())
    eos_ids_.push_back(id);
}

void Tokenizer::encode_text(std::string_view text, bool at_start, Pieces &pieces,
                            std::vector<int32_t> &ids) const {
  std::string normalized;
  if (!normalizer_.is_identity()) {
    normalized = normalizer_.normalize(text);
    text = normalized;
  }
  std::vector<Segment> segments;
  if (normalized_added_->empty())
    segments.push_back({text, -1});
  else
    normalized_added_->split(text, segments);
  for (const Segment &segment : segments) {
    if (segment.token >= 0) {
      ids.push_back(segment.token);
      continue;
    }
    pre_tokenizer_.split(segment.text, at_start && segment.text.data() == text.data(), pieces);
    for (const Piece &piece : pieces.list)
      bpe_->encode(piece.text, ids);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text,
                                       bool add_special_tokens) const {
  unicode::require_utf8(text, "encode: text");
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + prefix_ids_.size() + suffix_ids_.size());
  if (add_special_tokens)
    ids.insert(ids.end(), prefix_ids_.begin(), prefix_ids_.end());
  Pieces pieces;
  if (raw_added_->empty()) {
    encode_text(text, true, pieces, ids);
  } else {
    std::vector<Segment> segments;
    raw_added_->split(text, segments);
    for (const Segment &segment : segments) {
      if (segment.token >= 0)
        ids.push_back(segment.token);
      else
        encode_text(segment.text, segment.text.data() == text.data(), pieces, ids);
    }
  }
  if (add_special_tokens)
    ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids,
                              bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string &token = id_to_token(id);
    if (!(skip_special_tokens && special_[id]))
      tokens.push_back(token);
  }
  return decoder_.decode(std::move(tokens));
}

bool Tokenizer::has_token(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < has_token_.size() && has_token_[id];
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  auto it = token_to_id_.find(std::string(token));
  if (it == token_to_id_.end())
    return std::nullopt;
  return it->second;
}

const std::string &Tokenizer::id_to_token(int32_t id) const {
  if (!has_token(id))
    throw std::out_of_range("token id " + std::to_string(id) +
                            " is not in the vocabulary (size " +
                            std::to_string(vocab_size()) + ")");
  return id_to_token_[id];
}

bool Tokenizer::is_special(int32_t id) const { return has_token(id) && special_[id]; }

std::string Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= vocab_size())
    throw std::out_of_range("token id " + std::to_string(id) +
                            " is not in the vocabulary (size " +
                            std::to_string(vocab_size()) + ")");
  if (!has_token_[id] || special_[id])
    return "";
  return decoder_.token_bytes(id_to_token_[id]);
}

} // namespace llmserve
