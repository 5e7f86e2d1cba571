// A Hugging Face tokenizer (tokenizer.json) with exact parity: byte-level BPE
// (GPT-2, Llama 3, Qwen2) and SentencePiece-style BPE with byte fallback
// (Llama 2, Mistral, Gemma 3), behind Hugging Face's normalizers and
// pre-tokenizers (normalizer.h and pretokenizer.h list them; regexes are
// Oniguruma's), added and special tokens, and the BOS/EOS rules of
// tokenizer_config.json. Thread-safe: encode and decode may run concurrently.
#ifndef LLMSERVE_TOKENIZER_TOKENIZER_H
#define LLMSERVE_TOKENIZER_TOKENIZER_H

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace llmserve {

class Tokenizer {
public:
  // `path` is a tokenizer.json file, or a directory (a model directory or a
  // bundle) holding tokenizer.json and optionally tokenizer_config.json and
  // generation_config.json. `config_path` names a tokenizer_config.json
  // explicitly. Throws std::runtime_error / std::invalid_argument naming the
  // file and field on any problem.
  static Tokenizer from_file(const std::string &path,
                             const std::string &config_path = "");
  // From the contents of tokenizer.json and (optionally) tokenizer_config.json.
  static Tokenizer from_json(const std::string &tokenizer_json,
                             const std::string &config_json = "");

  // Ids of valid UTF-8 text (std::invalid_argument otherwise, or when a regex
  // exceeds its backtracking limits on it). Added tokens in the text are
  // always recognized; add_special_tokens adds BOS/EOS as the post-processor
  // (or tokenizer_config.json) says.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
  // Text of ids, as Hugging Face decodes it (invalid UTF-8 becomes U+FFFD).
  // Throws std::out_of_range for an id that is no token.
  std::string decode(const std::vector<int32_t> &ids, bool skip_special_tokens) const;

  // One past the highest token id.
  size_t vocab_size() const { return id_to_token_.size(); }
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // Throws std::out_of_range for an id that is no token.
  const std::string &id_to_token(int32_t id) const;
  bool is_special(int32_t id) const;
  // The raw bytes token `id` adds to decoded text in the middle of a
  // sequence (what constrained decoding matches grammars against): not
  // necessarily valid UTF-8 on its own, without the space SentencePiece
  // decoders strip at the start; "" for special tokens and unused ids.
  // Throws std::out_of_range for an id >= vocab_size().
  std::string token_bytes(int32_t id) const;

  std::optional<int32_t> bos_token_id() const { return bos_id_; }
  // EOS of tokenizer_config.json plus those of generation_config.json.
  const std::vector<int32_t> &eos_token_ids() const { return eos_ids_; }
  const std::string &bos_token() const { return bos_token_; }
  const std::string &eos_token() const { return eos_token_; }
  // tokenizer_config.json's chat_template ("" when there is none).
  const std::string &chat_template() const { return chat_template_; }

private:
  Tokenizer() = default;
  void load_tokenizer_json(const std::string &text);
  void load_model(const nlohmann::json &model);
  void load_added_tokens(const nlohmann::json &added);
  void load_post_processor(const nlohmann::json &config);
  void load_config(const std::string &text);
  void set_token(int32_t id, const std::string &spelling, bool special);
  void add_eos(int32_t id);
  bool has_token(int32_t id) const;
  // `at_start`: the text begins the input (Metaspace's "first" scheme);
  // `pieces`: the pre-tokenizer's storage, reused.
  void encode_text(std::string_view text, bool at_start, Pieces &pieces,
                   std::vector<int32_t> &ids) const;

  std::vector<std::string> id_to_token_;
  std::vector<bool> has_token_;
  std::vector<bool> special_;
  std::unordered_map<std::string, int32_t> token_to_id_;

  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  std::unique_ptr<Bpe> bpe_;
  Decoder decoder_;
  std::unique_ptr<AddedTokenMatcher> raw_added_;        // matched before normalizing
  std::unique_ptr<AddedTokenMatcher> normalized_added_; // matched after
  std::vector<int32_t> prefix_ids_, suffix_ids_; // added by add_special_tokens

  std::optional<int32_t> bos_id_;
  std::vector<int32_t> eos_ids_;
  std::string bos_token_, eos_token_, chat_template_;
};

} // namespace llmserve

#endif
