#include "bundle/expression.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace llmserve {

namespace {

// Evaluation uses a fixed stack and parsing recurses per parenthesis; deeper
// expressions are refused at parse time (no compiler writes them).
constexpr int kMaxStackDepth = 32;
constexpr int kMaxNesting = 32;

// Every symbol, by its spelling; an instruction names one by its index here.
struct SymbolEntry {
  std::string_view name;
  int64_t Symbols::*value;
};
constexpr SymbolEntry kSymbolTable[] = {
    {"T", &Symbols::T},   {"S", &Symbols::S}, {"MB", &Symbols::MB},
    {"NB", &Symbols::NB}, {"P", &Symbols::P}, {"MW", &Symbols::MW},
};
constexpr int64_t kNumSymbols = sizeof(kSymbolTable) / sizeof(kSymbolTable[0]);

// The index of the symbol spelled `name`, or -1.
int64_t symbol_index(std::string_view name) {
  for (int64_t i = 0; i < kNumSymbols; ++i)
    if (kSymbolTable[i].name == name)
      return i;
  return -1;
}

std::string symbols_text(const Symbols &s) {
  std::string text;
  for (const SymbolEntry &symbol : kSymbolTable)
    text += (text.empty() ? "" : " ") + std::string(symbol.name) + "=" +
            std::to_string(s.*symbol.value);
  return text;
}

} // namespace

void Symbols::set(std::string_view name, int64_t value) {
  const int64_t index = symbol_index(name);
  if (index < 0)
    throw std::invalid_argument("unknown symbol '" + std::string(name) +
                                "' (expected T, S, MB, NB, P or MW)");
  this->*kSymbolTable[index].value = value;
}

// Recursive descent over the grammar of docs/bundle.md, emitting postfix.
class ExpressionParser {
public:
  explicit ExpressionParser(std::string_view text) : text_(text) {}

  Expression parse() {
    expr();
    skip_space();
    if (pos_ != text_.size())
      fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    Expression e;
    e.program_ = std::move(program_);
    for (char c : text_)
      if (!std::isspace(static_cast<unsigned char>(c)))
        e.text_ += c;
    return e;
  }

private:
  using Op = Expression::Op;

  void expr() {
    term();
    for (;;) {
      if (accept('+')) {
        term();
        emit(Op::Add);
      } else if (accept('-')) {
        term();
        emit(Op::Sub);
      } else {
        return;
      }
    }
  }

  void term() {
    factor();
    while (accept('*')) {
      factor();
      emit(Op::Mul);
    }
  }

  void factor() {
    skip_space();
    if (pos_ == text_.size())
      fail("expected a number, a symbol, a function or '('");
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      number();
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      const size_t start = pos_;
      while (pos_ < text_.size() &&
             std::isalnum(static_cast<unsigned char>(text_[pos_])))
        ++pos_;
      const std::string_view word = text_.substr(start, pos_ - start);
      if (const int64_t symbol = symbol_index(word); symbol >= 0) {
        program_.push_back({Op::Symbol, symbol});
        push();
      } else if (word == "ceildiv")
        binary_function(Op::CeilDiv);
      else if (word == "min")
        binary_function(Op::Min);
      else if (word == "max")
        binary_function(Op::Max);
      else {
        pos_ = start;
        fail("unknown symbol '" + std::string(word) + "'");
      }
    } else if (accept('(')) {
      nested([&] { expr(); });
      expect(')');
    } else {
      fail("expected a number, a symbol, a function or '('");
    }
  }

  // `name(expr, expr)`, the name already read.
  void binary_function(Op op) {
    expect('(');
    nested([&] {
      expr();
      expect(',');
      expr();
    });
    expect(')');
    emit(op);
  }

  void number() {
    const size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() &&
           std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (__builtin_mul_overflow(value, 10, &value) ||
          __builtin_add_overflow(value, text_[pos_] - '0', &value)) {
        pos_ = start;
        fail("integer does not fit in int64");
      }
      ++pos_;
    }
    program_.push_back({Op::Constant, value});
    push();
  }

  void emit(Op op) {
    program_.push_back({op, 0});
    if (op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::CeilDiv ||
        op == Op::Min || op == Op::Max)
      --depth_; // two operands become one result
    else
      push();
  }

  template <typename Parse> void nested(Parse parse) {
    if (++nesting_ > kMaxNesting)
      fail("expression is nested too deeply");
    parse();
    --nesting_;
  }

  void push() {
    if (++depth_ > kMaxStackDepth)
      fail("expression is nested too deeply");
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }

  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!accept(c))
      fail(std::string("expected '") + c + "'");
  }

  [[noreturn]] void fail(const std::string &what) const {
    throw std::invalid_argument("bad expression '" + std::string(text_) +
                                "' at position " + std::to_string(pos_) + ": " +
                                what);
  }

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;   // values on the evaluation stack after program_
  int nesting_ = 0; // open parentheses
  std::vector<Expression::Instruction> program_;
};

Expression Expression::parse(std::string_view text) {
  return ExpressionParser(text).parse();
}

Expression Expression::constant(int64_t value) {
  Expression e;
  e.text_ = std::to_string(value);
  e.program_.push_back({Op::Constant, value});
  return e;
}

bool Expression::is_constant() const {
  return std::none_of(program_.begin(), program_.end(),
                      [](const Instruction &i) { return i.op == Op::Symbol; });
}

bool Expression::uses(std::string_view name) const {
  const int64_t symbol = symbol_index(name);
  return std::any_of(program_.begin(), program_.end(), [&](const Instruction &i) {
    return i.op == Op::Symbol && i.operand == symbol;
  });
}

int64_t Expression::evaluate(const Symbols &symbols) const {
  int64_t stack[kMaxStackDepth];
  int top = 0; // number of values on the stack
  auto overflow = [&]() {
    throw std::runtime_error("expression '" + text_ + "' overflows int64 with " +
                             symbols_text(symbols));
  };
  for (const Instruction &i : program_) {
    switch (i.op) {
    case Op::Constant:
      stack[top++] = i.operand;
      break;
    case Op::Symbol:
      stack[top++] = symbols.*kSymbolTable[i.operand].value;
      break;
    case Op::Add:
      --top;
      if (__builtin_add_overflow(stack[top - 1], stack[top], &stack[top - 1]))
        overflow();
      break;
    case Op::Sub:
      --top;
      if (__builtin_sub_overflow(stack[top - 1], stack[top], &stack[top - 1]))
        overflow();
      break;
    case Op::Mul:
      --top;
      if (__builtin_mul_overflow(stack[top - 1], stack[top], &stack[top - 1]))
        overflow();
      break;
    case Op::CeilDiv: {
      --top;
      const int64_t n = stack[top - 1], d = stack[top];
      if (d <= 0)
        throw std::runtime_error("expression '" + text_ + "' divides by " +
                                 std::to_string(d) + " with " +
                                 symbols_text(symbols));
      // Rounds toward +infinity for either sign of n, without computing n+d-1.
      stack[top - 1] = n / d + (n % d > 0 ? 1 : 0);
      break;
    }
    case Op::Min:
      --top;
      stack[top - 1] = std::min(stack[top - 1], stack[top]);
      break;
    case Op::Max:
      --top;
      stack[top - 1] = std::max(stack[top - 1], stack[top]);
      break;
    }
  }
  return stack[0];
}

} // namespace llmserve
