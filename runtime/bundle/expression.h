// Size expressions of the bundle format (docs/bundle.md, "Expressions"):
// integers and the symbols T, S, MB, NB, P, MW combined with +, -, *, ceildiv,
// min and max.
// Parsed once when the manifest is read, evaluated for every step.
#ifndef LLMSERVE_BUNDLE_EXPRESSION_H
#define LLMSERVE_BUNDLE_EXPRESSION_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

// The values of the step's symbolic sizes.
struct Symbols {
  int64_t T = 0;  // tokens in the step
  int64_t S = 0;  // sequences in the step
  int64_t MB = 0; // block_table row width
  int64_t NB = 0; // KV blocks per pool
  int64_t P = 0;  // logit entries (penalty_tokens) in the step
  int64_t MW = 0; // token_mask words in the step

  // Sets the symbol spelled `name`; throws naming it if there is none.
  void set(std::string_view name, int64_t value);
};

class Expression {
public:
  // Throws std::invalid_argument naming the text and the 0-based position of
  // the first character that does not fit the grammar.
  static Expression parse(std::string_view text);
  static Expression constant(int64_t value);

  // Throws std::runtime_error naming the expression and the symbol values on
  // int64 overflow or ceildiv by zero (or by a negative number).
  int64_t evaluate(const Symbols &symbols) const;

  // The source text, without whitespace; a constant's decimal digits.
  const std::string &text() const { return text_; }
  bool is_constant() const;
  // Whether the symbol spelled `name` ("T", "S", "MB", "NB", "P", "MW")
  // appears.
  bool uses(std::string_view name) const;

private:
  // Postfix program: evaluation is one pass over a flat array.
  enum class Op : uint8_t { Constant, Symbol, Add, Sub, Mul, CeilDiv, Min, Max };
  struct Instruction {
    Op op;
    int64_t operand; // Constant: the value; Symbol: its index in the table
  };
  friend class ExpressionParser;

  std::string text_;
  std::vector<Instruction> program_;
};

} // namespace llmserve

#endif // LLMSERVE_BUNDLE_EXPRESSION_H
