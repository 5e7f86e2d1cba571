// JSON as llama.cpp's grammars/json.gbnf has it: the realistic grammar of the
// tests and the benchmark.
#ifndef LLMSERVE_TEST_UNIT_GRAMMAR_JSON_GRAMMAR_H
#define LLMSERVE_TEST_UNIT_GRAMMAR_JSON_GRAMMAR_H

namespace llmserve::grammar::testing {

inline constexpr const char *kJsonGrammar = R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)";

} // namespace llmserve::grammar::testing

#endif
