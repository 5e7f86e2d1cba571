#include "tokenizer/pretokenizer.h"

#include "tokenizer/bpe.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/unicode.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace llmserve {
namespace {

// The character classes of the fixed pre-tokenizers, as Oniguruma regexes of
// the Unicode properties Hugging Face tests. Whitespace uses the Rust regex
// crate's \w (Alphabetic, marks, decimal digits, connector punctuation,
// Join_Control); Punctuation takes ASCII punctuation and \p{P}; Digits and
// WhitespaceSplit take Rust's char::is_numeric and char::is_whitespace.
constexpr char kWords[] =
    R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]+|[^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}\p{White_Space}]+)";
constexpr char kPunctuation[] = R"([\p{P}!-/:-@\[-`{-~])";
constexpr char kNumber[] = R"(\p{N})";
constexpr char kWhiteSpace[] = R"(\p{White_Space})";

SplitBehavior parse_behavior(const std::string &name, const std::string &where) {
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  throw std::invalid_argument(where + ".behavior: unknown value '" + name +
                              "' (expected Removed, Isolated, MergedWithPrevious, "
                              "MergedWithNext or Contiguous)");
}

std::string parse_replacement(const nlohmann::json &config, const std::string &where,
                              const char *key) {
  std::string replacement = json_string(config, key, where);
  size_t first_char_len = 0;
  if (!replacement.empty() && unicode::valid_utf8_prefix(replacement) == replacement.size())
    unicode::decode_at(replacement, 0, &first_char_len);
  if (replacement.empty() || first_char_len != replacement.size())
    throw std::invalid_argument(where + "." + key + ": expected one character, got '" +
                                replacement + "'");
  return replacement;
}

// Hugging Face's NormalizedString::split of a piece: the matches and the
// stretches between them (non-matches; `invert` swaps the two) become pieces
// as the behavior says, appended to out; empty ones are dropped.
void split_at(const Piece &piece, const std::vector<Span> &matches, SplitBehavior behavior,
              bool invert, std::vector<Piece> &out) {
  auto emit = [&](size_t start, size_t end) {
    out.push_back({piece.text.substr(start, end - start), piece.at_start && start == 0});
  };
  if (behavior == SplitBehavior::Isolated || behavior == SplitBehavior::Removed) {
    // Each part stands alone; Removed keeps the non-matches only.
    bool keep_matches = behavior == SplitBehavior::Isolated || invert;
    bool keep_gaps = behavior == SplitBehavior::Isolated || !invert;
    size_t prev = 0;
    for (const Span &m : matches) {
      if (m.start != prev && keep_gaps)
        emit(prev, m.start);
      if (m.start != m.end && keep_matches)
        emit(m.start, m.end);
      prev = m.end;
    }
    if (prev != piece.text.size() && keep_gaps)
      emit(prev, piece.text.size());
    return;
  }
  // The merging behaviors, part by part.
  const size_t first = out.size();
  bool previous_match = false;
  std::optional<Span> pending; // MergedWithNext: a match the next part may join
  auto part = [&](Span s, bool is_match) {
    if (behavior == SplitBehavior::MergedWithNext) {
      // A match joins the part after it when that is no match.
      if (pending && !is_match)
        s.start = pending->start;
      else if (pending)
        emit(pending->start, pending->end);
      pending.reset();
      if (is_match)
        pending = s;
      else
        emit(s.start, s.end);
      return;
    }
    bool merge = behavior == SplitBehavior::Contiguous ? is_match == previous_match
                                                       : is_match && !previous_match;
    if (merge && out.size() > first) {
      Piece &last = out.back();
      last.text = std::string_view(last.text.data(),
                                   piece.text.data() + s.end - last.text.data());
    } else {
      emit(s.start, s.end);
    }
    previous_match = is_match;
  };
  size_t prev = 0;
  for (const Span &m : matches) {
    if (m.start != prev)
      part({prev, m.start}, invert);
    part(m, !invert);
    prev = m.end;
  }
  if (prev != piece.text.size())
    part({prev, piece.text.size()}, invert);
  if (pending)
    emit(pending->start, pending->end);
  // Empty matches, unless a merge has grown them since.
  out.erase(std::remove_if(out.begin() + first, out.end(),
                           [](const Piece &p) { return p.text.empty(); }),
            out.end());
}

} // namespace

PreTokenizer::Step PreTokenizer::metaspace_step(const nlohmann::json &config,
                                                const std::string &where) {
  Step step{Step::Metaspace, where};
  step.replacement = parse_replacement(config, where, "replacement");
  if (config.contains("prepend_scheme")) {
    std::string scheme = json_string(config, "prepend_scheme", where);
    if (scheme == "always")
      step.prepend = Prepend::Always;
    else if (scheme == "first")
      step.prepend = Prepend::First;
    else if (scheme == "never")
      step.prepend = Prepend::Never;
    else
      throw std::invalid_argument(where + ".prepend_scheme: unknown value '" + scheme +
                                  "' (expected always, first or never)");
  } else {
    // Older files: add_prefix_space.
    step.prepend = json_bool(config, "add_prefix_space", true, where) ? Prepend::Always
                                                                      : Prepend::Never;
  }
  if (json_bool(config, "split", true, where)) {
    step.pattern = Pattern::literal(step.replacement);
    step.behavior = SplitBehavior::MergedWithNext;
  }
  return step;
}

void PreTokenizer::append_steps(const nlohmann::json &config, const std::string &where,
                                std::vector<Step> &steps) {
  std::string type = json_string(config, "type", where);
  auto split = [&](Pattern pattern, SplitBehavior behavior, bool invert = false) {
    Step step{Step::Split, where};
    step.pattern = std::move(pattern);
    step.behavior = behavior;
    step.invert = invert;
    steps.push_back(std::move(step));
  };
  if (type == "Sequence") {
    const auto &children = json_field(config, "pretokenizers", where);
    if (!children.is_array())
      throw std::invalid_argument(where + ".pretokenizers: expected a list");
    for (size_t i = 0; i < children.size(); ++i)
      append_steps(children[i], where + ".pretokenizers[" + std::to_string(i) + "]", steps);
  } else if (type == "Split") {
    auto pattern = Pattern::from_json(json_field(config, "pattern", where), where + ".pattern");
    split(std::move(pattern), parse_behavior(json_string(config, "behavior", where), where),
          json_bool(config, "invert", where));
  } else if (type == "ByteLevel") {
    Step step{Step::ByteLevel, where};
    step.add_prefix_space = json_bool(config, "add_prefix_space", where);
    if (json_bool(config, "use_regex", true, where))
      step.pattern = Pattern::regex(known_pattern_regex(KnownPattern::Gpt2));
    steps.push_back(std::move(step));
  } else if (type == "Metaspace") {
    steps.push_back(metaspace_step(config, where));
  } else if (type == "Whitespace") {
    split(Pattern::regex(kWords), SplitBehavior::Removed, true);
  } else if (type == "WhitespaceSplit") {
    split(Pattern::regex(kWhiteSpace), SplitBehavior::Removed);
  } else if (type == "Punctuation") {
    split(Pattern::regex(kPunctuation),
          config.contains("behavior") ? parse_behavior(json_string(config, "behavior", where), where)
                                      : SplitBehavior::Isolated);
  } else if (type == "Digits") {
    split(Pattern::regex(kNumber), json_bool(config, "individual_digits", where)
                                       ? SplitBehavior::Isolated
                                       : SplitBehavior::Contiguous);
  } else if (type == "BertPreTokenizer") {
    split(Pattern::regex(kWhiteSpace), SplitBehavior::Removed);
    split(Pattern::regex(kPunctuation), SplitBehavior::Isolated);
  } else if (type == "CharDelimiterSplit") {
    split(Pattern::literal(parse_replacement(config, where, "delimiter")),
          SplitBehavior::Removed);
  } else {
    throw std::invalid_argument(
        where + ".type: unsupported pre-tokenizer '" + type +
        "' (supported: Split, ByteLevel, Metaspace, Whitespace, WhitespaceSplit, Punctuation, "
        "Digits, BertPreTokenizer, CharDelimiterSplit, Sequence)");
  }
}

PreTokenizer PreTokenizer::from_json(const nlohmann::json &config) {
  PreTokenizer p;
  if (config.is_null())
    return p;
  append_steps(config, "pre_tokenizer", p.steps_);
  // ByteLevel maps bytes to the characters its tokens spell them with. Later
  // steps split the mapped text; what would rewrite it again is refused, so
  // the pieces can be mapped back to bytes for the model.
  for (size_t i = 0; i < p.steps_.size() && !p.byte_level_; ++i) {
    Step &step = p.steps_[i];
    if (step.kind != Step::ByteLevel)
      continue;
    for (size_t j = i + 1; j < p.steps_.size(); ++j)
      if (p.steps_[j].kind != Step::Split)
        throw std::invalid_argument(p.steps_[j].where + ": a ByteLevel or Metaspace step after " +
                                    step.where + " (ByteLevel) is not supported");
    step.map_bytes = i + 1 < p.steps_.size();
    p.byte_level_ = true;
  }
  // One that neither prefixes, splits nor maps leaves the pieces as they are.
  p.steps_.erase(std::remove_if(p.steps_.begin(), p.steps_.end(),
                                [](const Step &s) {
                                  return s.kind == Step::ByteLevel && !s.add_prefix_space &&
                                         !s.pattern && !s.map_bytes;
                                }),
                 p.steps_.end());
  return p;
}

void PreTokenizer::apply(const Step &step, const Piece &piece, Pieces &work) {
  Piece p = piece;
  if (step.kind == Step::ByteLevel && step.add_prefix_space && p.text.substr(0, 1) != " ")
    p.text = work.rewritten.emplace_front(" " + std::string(p.text));
  if (step.kind == Step::Metaspace) {
    std::string replaced;
    bool prepend = step.prepend == Prepend::Always || (step.prepend == Prepend::First && p.at_start);
    if (prepend && p.text.substr(0, 1) != " " &&
        p.text.substr(0, step.replacement.size()) != step.replacement)
      replaced = step.replacement;
    for (char c : p.text) {
      if (c == ' ')
        replaced += step.replacement;
      else
        replaced += c;
    }
    p.text = work.rewritten.emplace_front(std::move(replaced));
  }
  if (!step.pattern) {
    work.next.push_back(p);
    return;
  }
  work.matches.clear();
  step.pattern->find(p.text, work.matches);
  split_at(p, work.matches, step.behavior, step.invert, work.next);
}

void PreTokenizer::split(std::string_view text, bool at_start, Pieces &out) const {
  out.list.clear();
  out.rewritten.clear();
  if (text.empty())
    return;
  out.list.push_back({text, at_start});
  if (steps_.empty())
    return;
  // Pieces average a few bytes: one allocation per text rather than a series.
  size_t expected = text.size() / 2 + 1;
  out.next.reserve(expected);
  out.matches.reserve(expected);
  bool mapped = false;
  for (const Step &step : steps_) {
    out.next.clear();
    for (const Piece &piece : out.list)
      apply(step, piece, out);
    out.list.swap(out.next);
    if (step.map_bytes) {
      for (Piece &piece : out.list) {
        std::string spelled;
        for (unsigned char b : piece.text)
          spelled += byte_level_char(b);
        piece.text = out.rewritten.emplace_front(std::move(spelled));
      }
      mapped = true;
    }
  }
  if (mapped) // back to the bytes the model takes; every character is in the map
    for (Piece &piece : out.list)
      piece.text = out.rewritten.emplace_front(*byte_level_decode(piece.text));
}

} // namespace llmserve
