// The requests a benchmark sends: vLLM's `random` dataset, SGLang's
// generated shared-prefix dataset, or prompts from a JSONL file. A request
// carries its prompt as token ids (for the in-process engine) and, when a
// tokenizer is at hand, as text that encodes to exactly those lengths (for a
// server).
#ifndef LLMSERVE_BENCH_WORKLOAD_H
#define LLMSERVE_BENCH_WORKLOAD_H

#include "tokenizer/tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmserve::bench {

struct BenchRequest {
  std::string prompt;                // text; empty when built without a tokenizer
  std::vector<int32_t> prompt_tokens; // as the server sees them, BOS included
  int32_t output_len = 0;
};

// Lengths uniform in [min, max].
struct LengthRange {
  int32_t min = 0;
  int32_t max = 0;
};

// "N" with vLLM's range ratio R gives [N(1-R), N(1+R)]; "MIN:MAX" is the
// range itself. Throws std::invalid_argument naming `flag` and the value.
LengthRange parse_length_range(const std::string &flag, const std::string &text,
                               double range_ratio);

// Where random prompts come from: a tokenizer (text prompts of exact token
// length), or just a vocabulary size (token ids only).
struct TokenSource {
  const Tokenizer *tokenizer = nullptr;
  int32_t vocab_size = 0; // used when there is no tokenizer
};

std::vector<BenchRequest> random_workload(int32_t num_prompts, LengthRange input,
                                          LengthRange output, const TokenSource &source,
                                          uint64_t seed);

struct SharedPrefixSpec {
  int32_t num_groups = 64;
  int32_t prompts_per_group = 16;
  int32_t system_prompt_len = 2048;
  int32_t question_len = 128;
  int32_t output_len = 256;
};

// Groups of requests sharing a long system prompt, shuffled so a group's
// requests interleave with others as they would in traffic.
std::vector<BenchRequest> shared_prefix_workload(const SharedPrefixSpec &spec,
                                                 const TokenSource &source,
                                                 uint64_t seed);

// One JSON object per line: {"prompt": "...", "output_len": N}; output_len
// is optional (default_output_len). Lines beyond num_prompts are ignored
// (num_prompts <= 0: all). Needs a tokenizer to count prompt tokens. Throws
// std::runtime_error naming the file, the line and the field.
std::vector<BenchRequest> jsonl_workload(const std::string &path, int32_t num_prompts,
                                         int32_t default_output_len,
                                         const Tokenizer &tokenizer);

} // namespace llmserve::bench

#endif // LLMSERVE_BENCH_WORKLOAD_H
