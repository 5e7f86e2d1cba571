// Lexing and parsing of the Jinja subset (see jinja.h).
#include "tokenizer/chat_template.h"
#include "tokenizer/jinja.h"

#include <cctype>
#include <charconv>
#include <cstring>

namespace llmserve::jinja {
namespace {

[[noreturn]] void fail(int line, const std::string &message) {
  throw ChatTemplateError("chat template line " + std::to_string(line) + ": " + message);
}

struct Token {
  enum Type { Text, BlockBegin, BlockEnd, VarBegin, VarEnd, Name, String, Number, Op, End } type;
  std::string text; // Text, Name, String (unescaped), Op
  Value number;
  int line;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

class Lexer {
public:
  explicit Lexer(const std::string &source) : s_(source) {}

  std::vector<Token> run() {
    bool strip_leading = false, trim_newline = false;
    while (true) {
      size_t tag = find_tag(pos_);
      size_t text_begin = pos_, text_end = tag == std::string::npos ? s_.size() : tag;
      if (trim_newline) { // trim_blocks: the newline after a block tag goes
        if (s_.compare(text_begin, 1, "\n") == 0 && text_begin < text_end)
          ++text_begin;
        else if (s_.compare(text_begin, 2, "\r\n") == 0 && text_begin + 1 < text_end)
          text_begin += 2;
      }
      if (strip_leading)
        while (text_begin < text_end && is_space(s_[text_begin]))
          ++text_begin;
      if (tag != std::string::npos) {
        char kind = s_[tag + 1], modifier = s_[tag + 2];
        if (modifier == '-') {
          while (text_end > text_begin && is_space(s_[text_end - 1]))
            --text_end;
        } else if (kind != '{' && modifier != '+') {
          // lstrip_blocks: blanks between a line start and a block tag go.
          size_t p = text_end;
          while (p > text_begin && (s_[p - 1] == ' ' || s_[p - 1] == '\t'))
            --p;
          if (p == 0 || s_[p - 1] == '\n')
            text_end = std::max(p, text_begin);
        }
      }
      if (text_end > text_begin)
        emit(Token::Text, s_.substr(text_begin, text_end - text_begin));
      advance_to(tag == std::string::npos ? s_.size() : tag);
      if (tag == std::string::npos)
        break;
      char kind = s_[tag + 1];
      pos_ = tag + 2;
      if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+'))
        ++pos_;
      char right;
      if (kind == '#') {
        size_t end = s_.find("#}", pos_);
        if (end == std::string::npos)
          fail(line_, "unterminated comment");
        right = s_[end - 1];
        advance_to(end + 2);
      } else {
        emit(kind == '%' ? Token::BlockBegin : Token::VarBegin, "");
        right = lex_tag(kind == '%' ? '%' : '}');
        emit(kind == '%' ? Token::BlockEnd : Token::VarEnd, "");
      }
      strip_leading = right == '-';
      trim_newline = kind != '{' && right != '+';
    }
    emit(Token::End, "");
    return std::move(tokens_);
  }

private:
  size_t find_tag(size_t from) const {
    for (size_t p = s_.find('{', from); p != std::string::npos; p = s_.find('{', p + 1))
      if (p + 1 < s_.size() && (s_[p + 1] == '{' || s_[p + 1] == '%' || s_[p + 1] == '#'))
        return p;
    return std::string::npos;
  }
  void advance_to(size_t p) {
    for (; pos_ < p; ++pos_)
      if (s_[pos_] == '\n')
        ++line_;
  }
  void emit(Token::Type type, std::string text, Value number = Value()) {
    tokens_.push_back({type, std::move(text), std::move(number), line_});
  }

  // Tokens up to the tag's closing "%}" / "}}"; returns the character before
  // it when that is a whitespace-control modifier ('-' or '+').
  char lex_tag(char close) {
    while (true) {
      while (pos_ < s_.size() && is_space(s_[pos_]))
        advance_to(pos_ + 1);
      if (pos_ >= s_.size())
        fail(line_, "unterminated tag");
      char c = s_[pos_];
      for (char modifier : {'-', '+', '\0'}) {
        size_t at = pos_ + (modifier ? 1 : 0);
        if ((!modifier || c == modifier) && s_.compare(at, 2, std::string{close, '}'}) == 0) {
          advance_to(at + 2);
          return modifier;
        }
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t end = pos_;
        while (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_'))
          ++end;
        emit(Token::Name, s_.substr(pos_, end - pos_));
        pos_ = end;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t end = pos_;
        while (end < s_.size() && std::isdigit(static_cast<unsigned char>(s_[end])))
          ++end;
        bool is_float = end + 1 < s_.size() && s_[end] == '.' &&
                        std::isdigit(static_cast<unsigned char>(s_[end + 1]));
        if (is_float)
          for (++end; end < s_.size() && std::isdigit(static_cast<unsigned char>(s_[end]));)
            ++end;
        std::string digits = s_.substr(pos_, end - pos_);
        emit(Token::Number, digits, number(digits, is_float));
        pos_ = end;
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        static const char *const kOps[] = {"==", "!=", "<=", ">=", "//", "**"};
        std::string op(1, c);
        for (const char *two : kOps)
          if (s_.compare(pos_, 2, two) == 0)
            op = two;
        if (op.size() == 1 && !std::strchr("+-*/%~<>=()[]{},.:|", c))
          fail(line_, std::string("unexpected character '") + c + "'");
        emit(Token::Op, op);
        pos_ += op.size();
      }
    }
  }

  Value number(const std::string &digits, bool is_float) {
    const char *first = digits.data(), *last = first + digits.size();
    double d;
    int64_t i;
    auto result = is_float ? std::from_chars(first, last, d) : std::from_chars(first, last, i);
    if (result.ec != std::errc())
      fail(line_, "number " + digits + " is out of range");
    return is_float ? Value(d) : Value(i);
  }

  void lex_string(char quote) {
    int line = line_;
    std::string out;
    for (size_t p = pos_ + 1;; ++p) {
      if (p >= s_.size())
        fail(line, "unterminated string");
      char c = s_[p];
      if (c == quote) {
        advance_to(p + 1);
        break;
      }
      if (c != '\\' || p + 1 >= s_.size()) {
        out += c;
        continue;
      }
      char e = s_[++p];
      switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': case '\'': case '"': out += e; break;
      case '\n': break; // line continuation
      default: out += '\\'; out += e; // Python keeps unknown escapes
      }
    }
    tokens_.push_back({Token::String, std::move(out), Value(), line});
  }

  const std::string &s_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

class Parser {
public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Template run() {
    Template tmpl;
    std::string ender;
    tmpl.nodes = body({}, &ender);
    return tmpl;
  }

private:
  // Parsing and rendering recurse once per level of nested tags and
  // expressions; a limit keeps a malicious template from exhausting the stack.
  // jinja2 fails sooner: near 70 parentheses or 100 nested tags (Python's
  // recursion and indentation limits).
  static constexpr int kMaxNesting = 100;

  class Nested {
  public:
    Nested(Parser &p, int line) : depth_(p.depth_) {
      if (++depth_ > kMaxNesting)
        fail(line, "nested more than " + std::to_string(kMaxNesting) + " levels deep");
    }
    ~Nested() { --depth_; }

  private:
    int &depth_;
  };

  const Token &peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  const Token &next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  bool at_op(const char *op) const { return peek().type == Token::Op && peek().text == op; }
  bool at_name(const char *name) const { return peek().type == Token::Name && peek().text == name; }
  bool accept_op(const char *op) { return at_op(op) ? (next(), true) : false; }
  bool accept_name(const char *name) { return at_name(name) ? (next(), true) : false; }
  void expect_op(const char *op) {
    if (!accept_op(op))
      fail(peek().line, std::string("expected '") + op + "', got " + describe(peek()));
  }
  void expect(Token::Type type, const char *what) {
    if (peek().type != type)
      fail(peek().line, std::string("expected ") + what + ", got " + describe(peek()));
    next();
  }
  std::string expect_name() {
    if (peek().type != Token::Name)
      fail(peek().line, "expected a name, got " + describe(peek()));
    return next().text;
  }
  static std::string describe(const Token &t) {
    switch (t.type) {
    case Token::BlockEnd: return "end of tag";
    case Token::VarEnd: return "'}}'";
    case Token::End: return "end of template";
    case Token::Text: return "text";
    default: return "'" + t.text + "'";
    }
  }

  // Nodes up to a block tag named in `enders` (consumed up to its name).
  std::vector<Node> body(std::initializer_list<const char *> enders, std::string *ender) {
    std::vector<Node> nodes;
    while (true) {
      const Token &tok = next();
      int line = tok.line;
      if (tok.type == Token::End) {
        if (enders.size())
          fail(line, std::string("missing {% ") + *enders.begin() + " %} (end of template)");
        return nodes;
      }
      if (tok.type == Token::Text) {
        nodes.push_back(Node{Node::Text, line});
        nodes.back().text = tok.text;
        continue;
      }
      if (tok.type == Token::VarBegin) {
        Node n{Node::Output, line};
        n.expr = expr();
        expect(Token::VarEnd, "'}}'");
        nodes.push_back(std::move(n));
        continue;
      }
      std::string tag = expect_name();
      for (const char *e : enders)
        if (tag == e) {
          *ender = tag;
          return nodes;
        }
      nodes.push_back(statement(tag, line));
    }
  }

  Node statement(const std::string &tag, int line) {
    Nested nested(*this, line);
    if (tag == "if") {
      Node n{Node::If, line};
      std::string ender = "elif";
      while (ender == "elif") {
        ExprPtr cond = expr();
        expect(Token::BlockEnd, "end of tag");
        auto nodes = body({"elif", "else", "endif"}, &ender);
        n.branches.emplace_back(std::move(cond), std::move(nodes));
      }
      if (ender == "else") {
        expect(Token::BlockEnd, "end of tag");
        n.else_body = body({"endif"}, &ender);
      }
      expect(Token::BlockEnd, "end of tag");
      return n;
    }
    if (tag == "for") {
      Node n{Node::For, line};
      do
        n.targets.push_back(expect_name());
      while (accept_op(","));
      if (!accept_name("in"))
        fail(peek().line, "expected 'in' in for loop");
      n.expr = or_expr();
      if (accept_name("if"))
        n.filter = or_expr();
      if (at_name("recursive"))
        fail(line, "recursive loops are not supported");
      expect(Token::BlockEnd, "end of tag");
      std::string ender;
      n.body = body({"else", "endfor"}, &ender);
      if (ender == "else") {
        expect(Token::BlockEnd, "end of tag");
        n.else_body = body({"endfor"}, &ender);
      }
      expect(Token::BlockEnd, "end of tag");
      return n;
    }
    if (tag == "set") {
      Node n{Node::Set, line};
      n.targets.push_back(expect_name());
      if (accept_op("."))
        n.targets.push_back(expect_name());
      if (!accept_op("="))
        fail(line, "only '{% set name = value %}' is supported (not block set or tuple set)");
      n.expr = expr();
      expect(Token::BlockEnd, "end of tag");
      return n;
    }
    if (tag == "break" || tag == "continue") {
      expect(Token::BlockEnd, "end of tag");
      return Node{tag == "break" ? Node::Break : Node::Continue, line};
    }
    fail(line, "unsupported tag '{% " + tag + " %}' (supported: if, for, set, break, continue)");
  }

  ExprPtr make(Expr::Kind kind, int line, std::string name = "") {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    e->name = std::move(name);
    return e;
  }
  ExprPtr binary(const std::string &op, ExprPtr l, ExprPtr r) {
    auto e = make(Expr::Binary, l->line, op);
    e->args.push_back(std::move(l));
    e->args.push_back(std::move(r));
    return e;
  }

  ExprPtr expr() {
    Nested nested(*this, peek().line);
    ExprPtr value = or_expr();
    if (!at_name("if"))
      return value;
    auto e = make(Expr::Conditional, next().line);
    e->args.push_back(std::move(value));
    e->args.push_back(or_expr());
    if (accept_name("else")) {
      e->args.push_back(expr());
    } else {
      auto undefined = make(Expr::Literal, e->line);
      undefined->value = Value(Value::value_t::discarded);
      e->args.push_back(std::move(undefined));
    }
    return e;
  }
  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (accept_name("or"))
      e = binary("or", std::move(e), and_expr());
    return e;
  }
  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (accept_name("and"))
      e = binary("and", std::move(e), not_expr());
    return e;
  }
  ExprPtr not_expr() {
    if (at_name("not")) {
      auto e = make(Expr::Unary, next().line, "not");
      Nested nested(*this, e->line);
      e->args.push_back(not_expr());
      return e;
    }
    return compare();
  }
  ExprPtr compare() {
    ExprPtr e = sum();
    while (true) {
      static const char *const kOps[] = {"==", "!=", "<", ">", "<=", ">="};
      std::string op;
      for (const char *o : kOps)
        if (at_op(o))
          op = o;
      if (!op.empty()) {
        next();
      } else if (accept_name("in")) {
        op = "in";
      } else if (at_name("not") && peek(1).type == Token::Name && peek(1).text == "in") {
        next(), next();
        op = "not in";
      } else {
        return e;
      }
      e = binary(op, std::move(e), sum());
    }
  }
  ExprPtr sum() {
    ExprPtr e = concat();
    while (at_op("+") || at_op("-")) {
      std::string op = next().text;
      e = binary(op, std::move(e), concat());
    }
    return e;
  }
  ExprPtr concat() {
    ExprPtr e = product();
    while (accept_op("~"))
      e = binary("~", std::move(e), product());
    return e;
  }
  ExprPtr product() {
    ExprPtr e = unary();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      std::string op = next().text;
      e = binary(op, std::move(e), unary());
    }
    if (at_op("**"))
      fail(peek().line, "'**' is not supported");
    return e;
  }
  ExprPtr unary() {
    if (at_op("-")) {
      auto e = make(Expr::Unary, next().line, "-");
      Nested nested(*this, e->line);
      e->args.push_back(unary());
      return e;
    }
    accept_op("+");
    return filters(postfix(primary()));
  }

  void call_arguments(Expr &e) {
    // After '(' : positional then keyword arguments, up to ')'.
    while (!accept_op(")")) {
      if (peek().type == Token::Name && peek(1).type == Token::Op && peek(1).text == "=") {
        std::string key = next().text;
        next();
        e.kwargs.emplace_back(key, expr());
      } else {
        e.args.push_back(expr());
      }
      if (!at_op(")"))
        expect_op(",");
    }
  }

  ExprPtr primary() {
    const Token &tok = next();
    switch (tok.type) {
    case Token::Name: {
      auto e = make(Expr::Literal, tok.line);
      if (tok.text == "true" || tok.text == "True")
        e->value = true;
      else if (tok.text == "false" || tok.text == "False")
        e->value = false;
      else if (tok.text == "none" || tok.text == "None")
        e->value = nullptr;
      else
        return make(Expr::Name, tok.line, tok.text);
      return e;
    }
    case Token::String: {
      auto e = make(Expr::Literal, tok.line);
      std::string s = tok.text;
      while (peek().type == Token::String) // adjacent literals concatenate
        s += next().text;
      e->value = s;
      return e;
    }
    case Token::Number: {
      auto e = make(Expr::Literal, tok.line);
      e->value = tok.number;
      return e;
    }
    case Token::Op:
      if (tok.text == "(") {
        ExprPtr e = expr();
        if (at_op(","))
          fail(tok.line, "tuples are not supported");
        expect_op(")");
        return e;
      }
      if (tok.text == "[") {
        auto e = make(Expr::List, tok.line);
        while (!accept_op("]")) {
          e->args.push_back(expr());
          if (!at_op("]"))
            expect_op(",");
        }
        return e;
      }
      if (tok.text == "{") {
        auto e = make(Expr::Dict, tok.line);
        while (!accept_op("}")) {
          e->args.push_back(expr());
          expect_op(":");
          e->args.push_back(expr());
          if (!at_op("}"))
            expect_op(",");
        }
        return e;
      }
      break;
    default:
      break;
    }
    fail(tok.line, "unexpected " + describe(tok) + " in expression");
  }

  ExprPtr postfix(ExprPtr e) {
    while (true) {
      int line = peek().line;
      if (accept_op(".")) {
        auto a = make(Expr::Attribute, line, expect_name());
        a->args.push_back(std::move(e));
        e = std::move(a);
      } else if (accept_op("[")) {
        ExprPtr parts[3];
        int colons = 0;
        while (!accept_op("]")) {
          if (accept_op(":")) {
            if (++colons > 2)
              fail(line, "bad slice");
            continue;
          }
          if (parts[colons])
            fail(line, "expected ']'");
          parts[colons] = expr();
        }
        auto a = make(colons ? Expr::Slice : Expr::Item, line);
        a->args.push_back(std::move(e));
        if (!colons && !parts[0])
          fail(line, "empty subscript");
        for (int k = 0; k < (colons ? 3 : 1); ++k)
          a->args.push_back(std::move(parts[k]));
        e = std::move(a);
      } else if (accept_op("(")) {
        auto c = make(Expr::Call, line);
        c->args.push_back(std::move(e));
        call_arguments(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr filters(ExprPtr e) {
    while (true) {
      int line = peek().line;
      if (accept_op("|")) {
        auto f = make(Expr::Filter, line, expect_name());
        f->args.push_back(std::move(e));
        if (accept_op("("))
          call_arguments(*f);
        e = std::move(f);
      } else if (accept_name("is")) {
        auto t = make(Expr::Test, line);
        t->negated = accept_name("not");
        t->name = peek().type == Token::Name ? next().text
                                             : (fail(line, "expected a test name after 'is'"), "");
        t->args.push_back(std::move(e));
        if (accept_op("("))
          call_arguments(*t);
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
};

} // namespace

Template parse(const std::string &source) {
  // Like Jinja (keep_trailing_newline=False): one trailing newline goes.
  std::string text = source;
  if (text.size() >= 2 && text.compare(text.size() - 2, 2, "\r\n") == 0)
    text.resize(text.size() - 2);
  else if (!text.empty() && text.back() == '\n')
    text.pop_back();
  return Parser(Lexer(text).run()).run();
}

} // namespace llmserve::jinja
