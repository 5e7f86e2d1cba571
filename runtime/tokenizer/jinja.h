// The Jinja subset behind ChatTemplate: a template is parsed once into a tree
// of nodes and expressions, then rendered against a context of JSON values.
// Whitespace follows transformers' environment: trim_blocks and lstrip_blocks,
// and Jinja's default of dropping the template's trailing newline.
#ifndef LLMSERVE_TOKENIZER_JINJA_H
#define LLMSERVE_TOKENIZER_JINJA_H

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace llmserve::jinja {

// Template values are JSON; value_t::discarded stands for Jinja's undefined.
using Value = nlohmann::ordered_json;

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum Kind {
    Literal,     // value
    Name,        // name
    Attribute,   // args[0].name
    Item,        // args[0][args[1]]
    Slice,       // args[0][args[1]:args[2]:args[3]] (null parts: defaults)
    Call,        // args[0](args[1..], kwargs)
    Filter,      // args[0] | name(args[1..], kwargs)
    Test,        // args[0] is [not] name(args[1..])
    Unary,       // op args[0]: "not", "-"
    Binary,      // args[0] op args[1]
    Conditional, // args[0] if args[1] else args[2]
    List,        // [args...]
    Dict,        // {args[0]: args[1], ...}
  } kind;
  int line = 0;
  Value value;
  std::string name; // Name, Attribute, Filter, Test; Binary/Unary operator
  bool negated = false; // Test: "is not"
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Node {
  enum Kind { Text, Output, If, For, Set, Break, Continue } kind;
  int line = 0;
  std::string text;             // Text
  ExprPtr expr;                 // Output, Set: the value; For: the iterable
  std::vector<std::pair<ExprPtr, std::vector<Node>>> branches; // If: (cond, body)
  std::vector<Node> body;       // For
  std::vector<Node> else_body;  // If, For
  std::vector<std::string> targets; // For: loop variables; Set: name[, attribute]
  ExprPtr filter;               // For: "if" clause
};

struct Template {
  std::vector<Node> nodes;
};

// Throws ChatTemplateError with the line of a syntax error or unsupported tag.
Template parse(const std::string &source);
// Renders with `context` (a JSON object of variables).
std::string render(const Template &t, const Value &context);

} // namespace llmserve::jinja

#endif
