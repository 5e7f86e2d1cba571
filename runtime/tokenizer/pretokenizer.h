// The pre-tokenizer of tokenizer.json: splits a normalized stretch of text
// (between added tokens) into the pieces the model encodes one by one, as
// Hugging Face's pre-tokenizers do: Split (at a literal or any Oniguruma
// regex, with every delimiter behavior and invert), ByteLevel, Metaspace,
// Whitespace, WhitespaceSplit, Punctuation, Digits, BertPreTokenizer,
// CharDelimiterSplit, and Sequences of them.
#ifndef LLMSERVE_TOKENIZER_PRETOKENIZER_H
#define LLMSERVE_TOKENIZER_PRETOKENIZER_H

#include "tokenizer/pattern.h"

#include <nlohmann/json.hpp>

#include <forward_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

// What a split keeps of each delimiter (a match), as in Hugging Face.
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// A piece of text and whether it begins the input.
struct Piece {
  std::string_view text;
  bool at_start;
};

// The pieces PreTokenizer::split gives, views of the text or of strings it
// rewrote, and its working storage, reused from text to text.
struct Pieces {
  std::vector<Piece> list;
  std::forward_list<std::string> rewritten; // what views may point into
  std::vector<Piece> next;
  std::vector<Span> matches;
};

class PreTokenizer {
public:
  // From tokenizer.json's "pre_tokenizer" (null: the text is one piece).
  // Throws std::invalid_argument naming the field of a bad or unsupported
  // part (pre_tokenizer.pretokenizers[1].pattern.Regex: ...).
  static PreTokenizer from_json(const nlohmann::json &config);

  // With a ByteLevel step the model's tokens spell bytes; pieces are given to
  // it as the raw bytes.
  bool byte_level() const { return byte_level_; }

  // The non-empty pieces of valid UTF-8 text, into out.list. `at_start`: the
  // text begins the input (Metaspace's "first" scheme). Throws
  // std::invalid_argument when a regex exceeds its backtracking limits.
  void split(std::string_view text, bool at_start, Pieces &out) const;

private:
  enum class Prepend { Always, First, Never };
  struct Step {
    enum Kind { Split, ByteLevel, Metaspace } kind;
    std::string where; // its field in tokenizer.json, for errors
    // Split: where to split. ByteLevel: GPT-2's pattern when use_regex.
    // Metaspace: the replacement when it splits.
    std::optional<Pattern> pattern;
    SplitBehavior behavior = SplitBehavior::Isolated;
    bool invert = false;
    bool add_prefix_space = false; // ByteLevel
    bool map_bytes = false;        // ByteLevel: later steps see the byte map
    std::string replacement;       // Metaspace
    Prepend prepend = Prepend::Always;
  };

  static void append_steps(const nlohmann::json &config, const std::string &where,
                           std::vector<Step> &steps);
  static Step metaspace_step(const nlohmann::json &config, const std::string &where);
  static void apply(const Step &step, const Piece &piece, Pieces &work);

  std::vector<Step> steps_;
  bool byte_level_ = false;
};

} // namespace llmserve

#endif
