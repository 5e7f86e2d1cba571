#include "support/stand_in_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>

namespace llmserve {
namespace {

using ::testing::HasSubstr;

// Sampling parameters with everything off for S sequences, greedy.
void default_sampling(StepBatch &b, int32_t S) {
  b.temperature.assign(S, 0.0f);
  b.top_p.assign(S, 1.0f);
  b.top_k.assign(S, 0);
  b.min_p.assign(S, 0.0f);
  b.seed.assign(S, 0);
  b.presence_penalty.assign(S, 0.0f);
  b.frequency_penalty.assign(S, 0.0f);
  b.repetition_penalty.assign(S, 1.0f);
  b.penalty_start.assign(S + 1, 0);
  b.penalty_tokens.clear();
  b.penalty_counts.clear();
  b.logit_bias.clear();
  b.mask_index.assign(S, -1);
  b.token_mask.clear();
  b.num_logprobs.assign(S, -1);
}

// Two prompts: sequence 0 has 6 tokens in blocks [2, 5], sequence 1 has 4
// tokens in block [0]; blocks of 4 slots.
StepBatch valid_batch() {
  StepBatch b;
  b.num_tokens = 10;
  b.num_seqs = 2;
  b.max_blocks_per_seq = 2;
  b.token_ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  b.positions = {0, 1, 2, 3, 4, 5, 0, 1, 2, 3};
  b.query_start = {0, 6, 10};
  b.context_len = {6, 4};
  b.block_table = {2, 5, 0, -1};
  b.slot_mapping = {8, 9, 10, 11, 20, 21, 0, 1, 2, 3};
  b.logits_rows = {5, 9};
  default_sampling(b, 2);
  b.temperature = {0.0f, 0.8f};
  b.seed = {11, 12};
  return b;
}

uint64_t context_of(std::initializer_list<int32_t> tokens) {
  uint64_t c = StandInExecutor::kEmptyContext;
  for (int32_t t : tokens)
    c = StandInExecutor::extend(c, t);
  return c;
}

class StandInExecutorTest : public ::testing::Test {
protected:
  StandInExecutorTest() { model.allocate_kv_cache(8); }
  std::string error_of(const StepBatch &b) {
    try {
      model.execute(b, out);
    } catch (const std::invalid_argument &e) {
      return e.what();
    }
    return "accepted";
  }
  StandInExecutor model{100, 4};
  StepOutput out;
};

TEST_F(StandInExecutorTest, NextTokenIsAFunctionOfTheWholeContext) {
  ASSERT_EQ(error_of(valid_batch()), "accepted");
  ASSERT_EQ(out.next_tokens.size(), 2u);
  EXPECT_EQ(out.next_tokens[0], model.sample(context_of({1, 2, 3, 4, 5, 6}), 0.0f, 0));
  EXPECT_EQ(out.next_tokens[1], model.sample(context_of({7, 8, 9, 10}), 0.8f, 12));
  EXPECT_NE(model.sample(context_of({7, 8, 9, 10}), 0.8f, 12),
            model.sample(context_of({7, 8, 9, 10}), 0.8f, 13))
      << "seeds matter when sampling";
  // Decode sequence 0 one token further.
  StepBatch d;
  d.num_tokens = d.num_seqs = 1;
  d.max_blocks_per_seq = 2;
  d.token_ids = {42};
  d.positions = {6};
  d.query_start = {0, 1};
  d.context_len = {7};
  d.block_table = {2, 5};
  d.slot_mapping = {22};
  d.logits_rows = {0};
  default_sampling(d, 1);
  ASSERT_EQ(error_of(d), "accepted");
  EXPECT_EQ(out.next_tokens[0],
            model.sample(context_of({1, 2, 3, 4, 5, 6, 42}), 0.0f, 0));
}

TEST_F(StandInExecutorTest, LogitEntriesChangeTheTokenInAnyOrder) {
  StepBatch b = valid_batch();
  b.penalty_start = {0, 0, 3};
  b.penalty_tokens = {7, 9, 11};
  b.penalty_counts = {0, 2, -1};
  b.logit_bias = {0.0f, 0.0f, 1.5f};
  ASSERT_EQ(error_of(b), "accepted");
  const uint64_t penalties = StandInExecutor::penalty_entry(7, 0) +
                             StandInExecutor::penalty_entry(9, 2) +
                             StandInExecutor::penalty_entry(11, -1, 1.5f);
  EXPECT_EQ(out.next_tokens[1],
            model.sample(context_of({7, 8, 9, 10}), 0.8f, 12, penalties));
  EXPECT_NE(model.sample(context_of({7, 8, 9, 10}), 0.8f, 12, penalties),
            model.sample(context_of({7, 8, 9, 10}), 0.8f, 12));
  EXPECT_TRUE(out.token_logprobs.empty()) << "nobody asked for log-probs";
}

// A token masked out or biased by -inf is never sampled: the stand-in takes
// the next allowed one.
TEST_F(StandInExecutorTest, SamplesOnlyAllowedTokens) {
  StepBatch b = valid_batch();
  ASSERT_EQ(error_of(b), "accepted");
  const int32_t free_choice = out.next_tokens[0];
  // Sequence 0 may only sample free_choice + 2 (a mask row of 4 words).
  b.mask_index = {0, -1};
  b.token_mask.assign(4, 0);
  const int32_t allowed = (free_choice + 2) % 100;
  b.token_mask[allowed / 32] = int32_t(1u << (allowed % 32));
  ASSERT_EQ(error_of(b), "accepted");
  EXPECT_EQ(out.next_tokens[0], allowed);
  // A ban moves it to the next token.
  b = valid_batch();
  b.penalty_start = {0, 1, 1};
  b.penalty_tokens = {free_choice};
  b.penalty_counts = {-1};
  b.logit_bias = {-INFINITY};
  ASSERT_EQ(error_of(b), "accepted");
  const uint64_t ban = StandInExecutor::penalty_entry(free_choice, -1, -INFINITY);
  EXPECT_EQ(out.next_tokens[0], model.sample(context_of({1, 2, 3, 4, 5, 6}), 0.0f, 0, ban,
                                             [&](int32_t t) { return t != free_choice; }));
  EXPECT_NE(out.next_tokens[0], free_choice);
  // Nothing allowed breaks the contract.
  b = valid_batch();
  b.mask_index = {0, -1};
  b.token_mask.assign(4, 0);
  EXPECT_THAT(error_of(b), HasSubstr("every token is masked or banned"));
}

TEST_F(StandInExecutorTest, ChunkedPrefillGivesTheSameToken) {
  StandInExecutor chunked(100, 4);
  chunked.allocate_kv_cache(8);
  StepBatch b = valid_batch();
  model.execute(b, out);
  int32_t whole = out.next_tokens[0];
  // Sequence 0 alone in two chunks of 4 and 2, in other blocks.
  StepBatch c1;
  c1.num_tokens = 4;
  c1.num_seqs = 1;
  c1.max_blocks_per_seq = 1;
  c1.token_ids = {1, 2, 3, 4};
  c1.positions = {0, 1, 2, 3};
  c1.query_start = {0, 4};
  c1.context_len = {4};
  c1.block_table = {7};
  c1.slot_mapping = {28, 29, 30, 31};
  c1.logits_rows = {3};
  default_sampling(c1, 1);
  chunked.execute(c1, out);
  StepBatch c2 = c1;
  c2.num_tokens = 2;
  c2.max_blocks_per_seq = 2;
  c2.token_ids = {5, 6};
  c2.positions = {4, 5};
  c2.query_start = {0, 2};
  c2.context_len = {6};
  c2.block_table = {7, 3};
  c2.slot_mapping = {12, 13};
  c2.logits_rows = {1};
  chunked.execute(c2, out);
  EXPECT_EQ(out.next_tokens[0], whole);
}

TEST_F(StandInExecutorTest, NamesWhatBreaksTheStepContract) {
  struct Case {
    std::function<void(StepBatch &)> corrupt;
    const char *error;
  };
  const Case cases[] = {
      {[](StepBatch &b) { b.num_seqs = 11; }, "query_start has 3 entries, expected S+1 = 12"},
      {[](StepBatch &b) { resize_step_batch(b, 0, 0, 0); }, "need 1 <= S <= T"},
      {[](StepBatch &b) { b.seed.resize(1); }, "seed has 1 entries, expected S = 2"},
      {[](StepBatch &b) { b.block_table.push_back(-1); }, "block_table has 5 entries, expected S*MB = 4"},
      {[](StepBatch &b) { b.query_start[2] = 9; }, "query_start runs from 0 to 9, expected 0 to T = 10"},
      {[](StepBatch &b) { b.query_start[1] = 0; }, "query_start[1] = 0: sequence 0 has no token"},
      {[](StepBatch &b) { b.context_len[1] = 3; }, "context_len[1] = 3 is less than the sequence's 4 query tokens"},
      {[](StepBatch &b) { b.context_len[0] = 9; }, "context_len[0] = 9 is outside [0, 9)"},
      {[](StepBatch &b) { b.block_table[3] = 1; }, "block_table[3] = 1: entries past the context must be -1"},
      {[](StepBatch &b) { b.block_table[2] = 8; }, "block_table[2] = 8 is outside [-1, 8)"},
      {[](StepBatch &b) { b.block_table[1] = 2; }, "sequence 0 lists block 2 twice"},
      {[](StepBatch &b) { b.block_table[2] = 5; }, "slot_mapping[4] = 20: writes block 5, which another sequence of the step also reads"},
      {[](StepBatch &b) { b.logits_rows[0] = 4; }, "logits_rows[0] = 4: must be the sequence's last token, row 5"},
      {[](StepBatch &b) { b.top_p[1] = 0.0f; }, "sampling parameters of sequence 1 out of range"},
      {[](StepBatch &b) { b.positions[1] = 7; }, "positions[1] = 7: sequence 0 expects 1"},
      {[](StepBatch &b) { b.token_ids[2] = 100; }, "token_ids[2] = 100 is outside [0, 100)"},
      {[](StepBatch &b) { b.slot_mapping[4] = 22; }, "slot_mapping[4] = 22: position 4 of sequence 0 belongs in slot 20"},
      {[](StepBatch &b) { b.repetition_penalty.pop_back(); }, "repetition_penalty has 1 entries, expected S = 2"},
      {[](StepBatch &b) { b.penalty_start = {0, 1, 1}; }, "penalty_start runs from 0 to 1, expected 0 to P = 0"},
      {[](StepBatch &b) { b.penalty_start = {0, 2, 1}, b.penalty_tokens = {4, 5}, b.penalty_counts = {0, 1}, b.logit_bias = {0, 0}; },
       "penalty_start runs from 0 to 1, expected 0 to P = 2"},
      {[](StepBatch &b) { b.penalty_start = {0, 2, 1}, b.penalty_tokens = {4}, b.penalty_counts = {0}, b.logit_bias = {0}; },
       "penalty_start decreases at 2"},
      {[](StepBatch &b) { b.penalty_start = {0, 2, 2}, b.penalty_tokens = {4, 4}, b.penalty_counts = {0, 1}, b.logit_bias = {0, 0}; },
       "sequence 0 lists a logit entry's token twice"},
      {[](StepBatch &b) { b.penalty_start = {0, 0, 1}, b.penalty_tokens = {4}, b.penalty_counts = {-2}, b.logit_bias = {0}; },
       "penalty_counts[0] = -2 is outside [-1, 2147483647)"},
      {[](StepBatch &b) { b.penalty_start = {0, 0, 1}, b.penalty_tokens = {100}, b.penalty_counts = {1}, b.logit_bias = {0}; },
       "penalty_tokens[0] = 100 is outside [0, 100)"},
      {[](StepBatch &b) { b.penalty_counts.push_back(1); }, "penalty_counts has 1 entries, expected P = 0"},
      {[](StepBatch &b) { b.num_logprobs[1] = 21; }, "num_logprobs[1] = 21 is outside [-1, 21)"},
      {[](StepBatch &b) { b.mask_index[1] = 0; }, "mask_index[1] = 0 is outside [-1, 0)"},
      {[](StepBatch &b) { b.token_mask = {-1, -1, -1}; }, "token_mask has 3 words, not whole rows of ceil(V/32) = 4"},
  };
  for (const Case &c : cases) {
    StandInExecutor fresh(100, 4);
    fresh.allocate_kv_cache(8);
    StepBatch b = valid_batch();
    c.corrupt(b);
    std::string error = "accepted";
    try {
      fresh.execute(b, out);
    } catch (const std::invalid_argument &e) {
      error = e.what();
    }
    EXPECT_THAT(error, HasSubstr(c.error));
  }
}

TEST_F(StandInExecutorTest, CatchesContextReadFromTheWrongBlocks) {
  ASSERT_EQ(error_of(valid_batch()), "accepted");
  StepBatch d;
  d.num_tokens = d.num_seqs = 1;
  d.max_blocks_per_seq = 2;
  d.token_ids = {42};
  d.query_start = {0, 1};
  d.logits_rows = {0};
  default_sampling(d, 1);
  // Positions 0-3 from sequence 1's block, 4-5 from sequence 0's.
  d.positions = {6};
  d.context_len = {7};
  d.block_table = {0, 5};
  d.slot_mapping = {22};
  EXPECT_THAT(error_of(d), HasSubstr("reads position 4 from block 5, whose KV "
                                     "was computed for another context"));
  // A block nobody wrote.
  d.block_table = {0, 6};
  d.slot_mapping = {26};
  EXPECT_THAT(error_of(d), HasSubstr("reads position 4 from block 6, which holds nothing"));
}

TEST(StandInExecutor, RejectsUseBeforeAllocation) {
  StandInExecutor model(100, 4);
  StepOutput out;
  EXPECT_THROW(model.execute(valid_batch(), out), std::logic_error);
  EXPECT_THROW(StandInExecutor(0, 4), std::invalid_argument);
}

} // namespace
} // namespace llmserve
