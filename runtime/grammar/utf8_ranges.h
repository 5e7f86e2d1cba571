// Sets of code points as the UTF-8 byte sequences that encode them, the way
// regex engines compile character classes to byte automata.
#ifndef LLMSERVE_GRAMMAR_UTF8_RANGES_H
#define LLMSERVE_GRAMMAR_UTF8_RANGES_H

#include "grammar/grammar.h"
#include "grammar/parser.h"

#include <vector>

namespace llmserve::grammar {

// The code points of a class: its ranges, complemented when negated, without
// the surrogates (which UTF-8 cannot encode); sorted and disjoint.
std::vector<gbnf::CodePointRange> class_code_points(const std::vector<gbnf::CodePointRange> &ranges,
                                                    bool negated);

// Alternatives of byte-set sequences matching exactly the UTF-8 encodings of
// `code_points` (sorted, disjoint, no surrogates). Sequences that differ only
// in their first byte share one alternative, so ASCII is one byte set.
std::vector<std::vector<ByteSet>> utf8_sequences(const std::vector<gbnf::CodePointRange> &code_points);

} // namespace llmserve::grammar

#endif
