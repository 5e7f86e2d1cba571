#include "bundle/step_batch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace llmserve {
namespace {

using ::testing::ElementsAre;

// The batch's arrays, as for_each_step_array walks them, are the contract's
// arguments in order, with the types the manifest spells.
TEST(StepBatch, WalksTheContractInOrder) {
  StepBatch b;
  std::vector<std::string> names, dtypes;
  for_each_step_array(b, [&](int i, const char *name, abi::Extent, auto &array, auto) {
    EXPECT_EQ(i, static_cast<int>(names.size()));
    names.push_back(name);
    using Element = typename std::decay_t<decltype(array)>::value_type;
    dtypes.push_back(abi::kElementType<Element>);
  });
  ASSERT_EQ(names.size(), static_cast<size_t>(abi::kNumStepArguments));
  for (int i = 0; i < abi::kNumStepArguments; ++i) {
    EXPECT_EQ(names[i], abi::kStepArguments[i].name);
    EXPECT_EQ(dtypes[i], abi::kStepArguments[i].dtype);
  }
  EXPECT_STREQ(abi::kStepArguments[4].name, "block_table");
  EXPECT_STREQ(abi::kStepArguments[4].shape, "S,MB");
  EXPECT_STREQ(abi::kStepArguments[11].dtype, "i64"); // seed
}

TEST(StepBatch, ResizesEveryArrayToItsExtent) {
  StepBatch b;
  b.penalty_tokens = {1, 2};
  b.penalty_counts = {0, 3};
  resize_step_batch(b, /*T=*/5, /*S=*/2, /*MB=*/3);
  EXPECT_EQ(b.num_tokens, 5);
  EXPECT_EQ(b.num_seqs, 2);
  EXPECT_EQ(b.max_blocks_per_seq, 3);
  for_each_step_array(b, [&](int, const char *name, abi::Extent extent, auto &array, auto) {
    EXPECT_EQ(static_cast<int64_t>(array.size()), extent_length(extent, 5, 2, 3, 0, 0)) << name;
  });
  EXPECT_EQ(b.token_ids.size(), 5u);
  EXPECT_EQ(b.query_start.size(), 3u);
  EXPECT_EQ(b.block_table.size(), 6u);
  EXPECT_TRUE(b.penalty_tokens.empty()) << "P grows as entries are appended";
  EXPECT_TRUE(b.token_mask.empty()) << "MW grows as mask rows are appended";
}

TEST(StepBatch, ExtentLengths) {
  EXPECT_EQ(extent_length(abi::Extent::Tokens, 7, 3, 4, 9, 11), 7);
  EXPECT_EQ(extent_length(abi::Extent::Seqs, 7, 3, 4, 9, 11), 3);
  EXPECT_EQ(extent_length(abi::Extent::SeqsPlusOne, 7, 3, 4, 9, 11), 4);
  EXPECT_EQ(extent_length(abi::Extent::SeqBlocks, 7, 3, 4, 9, 11), 12);
  EXPECT_EQ(extent_length(abi::Extent::PenaltyEntries, 7, 3, 4, 9, 11), 9);
  EXPECT_EQ(extent_length(abi::Extent::MaskWords, 7, 3, 4, 9, 11), 11);
  EXPECT_EQ(token_mask_words(32), 1);
  EXPECT_EQ(token_mask_words(33), 2);
  EXPECT_EQ(token_mask_words(151936), 4748);
}

TEST(StepBatch, ArgumentDataPointsAtEachArray) {
  StepBatch b;
  resize_step_batch(b, 2, 1, 1);
  const auto data = step_argument_data(b);
  EXPECT_EQ(data[0], b.token_ids.data());
  EXPECT_EQ(data[4], b.block_table.data());
  EXPECT_EQ(data[abi::kNumStepArguments - 1], b.num_logprobs.data());
}

// The padding column: what a padding sequence holds.
TEST(StepBatch, PaddingValuesAreTheNeutralOnes) {
  StepBatch b;
  std::vector<double> padding;
  for_each_step_array(b, [&](int, const char *, abi::Extent, auto &, auto value) {
    padding.push_back(static_cast<double>(value));
  });
  // token, position, query_start, context_len, block_table, slot, logits row,
  // temperature, top_p, top_k, min_p, seed, presence, frequency, repetition,
  // penalty_start, penalty token, count and bias, mask_index, token_mask,
  // num_logprobs.
  EXPECT_THAT(padding,
              ElementsAre(0, 0, 0, 1, -1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1, 0, -1));
}

// One sequence of three tokens in blocks [1, 2] of four slots; a pool of 4
// blocks, a vocabulary of 10, 64 positions.
StepBatch valid_batch() {
  StepBatch b;
  resize_step_batch(b, 3, 1, 2);
  b.token_ids = {1, 2, 3};
  b.positions = {2, 3, 4};
  b.query_start = {0, 3};
  b.context_len = {5};
  b.block_table = {1, 2};
  b.slot_mapping = {6, 7, 8};
  b.logits_rows = {2};
  b.top_p = {1.0f};
  b.repetition_penalty = {1.0f};
  b.penalty_start = {0, 1};
  b.penalty_tokens = {9};
  b.penalty_counts = {2};
  b.logit_bias = {0.5f};
  b.mask_index = {0};
  b.token_mask = {0x3ff};
  b.num_logprobs = {-1};
  return b;
}

constexpr StepBounds kBounds = {10, 64, 4, 4};

std::string error_of(const StepBatch &b) {
  try {
    check_step_batch(b, kBounds);
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  return "valid";
}

TEST(CheckStepBatch, NamesTheArrayAndEntryAtFault) {
  EXPECT_EQ(error_of(valid_batch()), "valid");
  const std::pair<void (*)(StepBatch &), const char *> cases[] = {
      {[](StepBatch &b) { b.slot_mapping.pop_back(); },
       "step batch: slot_mapping has 2 entries, expected T = 3"},
      {[](StepBatch &b) { b.block_table.push_back(-1); },
       "step batch: block_table has 3 entries, expected S*MB = 2"},
      {[](StepBatch &b) { b.penalty_counts.clear(); },
       "step batch: penalty_counts has 0 entries, expected P = 1"},
      {[](StepBatch &b) { b.max_blocks_per_seq = -1; },
       "step batch: negative size: num_tokens 3, num_seqs 1, max_blocks_per_seq -1"},
      {[](StepBatch &b) { b.token_ids[2] = 10; },
       "step batch: token_ids[2] = 10 is outside [0, 10)"},
      {[](StepBatch &b) { b.positions[0] = 64; },
       "step batch: positions[0] = 64 is outside [0, 64)"},
      {[](StepBatch &b) { b.slot_mapping[1] = 16; },
       "step batch: slot_mapping[1] = 16 is outside [0, 16)"},
      {[](StepBatch &b) { b.block_table[1] = -1; },
       "step batch: block_table row 0 has no block 1 for context_len 5"},
      {[](StepBatch &b) { b.penalty_tokens[0] = -1; },
       "step batch: penalty_tokens[0] = -1 is outside [0, 10)"},
      {[](StepBatch &b) { b.query_start = {0, 2}; },
       "step batch: query_start runs from 0 to 2, expected 0 to T = 3"},
      {[](StepBatch &b) { b.logit_bias.clear(); },
       "step batch: logit_bias has 0 entries, expected P = 1"},
      {[](StepBatch &b) { b.penalty_counts[0] = -2; },
       "step batch: penalty_counts[0] = -2 is outside [-1, 2147483647)"},
      {[](StepBatch &b) { b.logit_bias[0] = INFINITY; },
       "step batch: logit_bias[0] = inf is not below +inf"},
      {[](StepBatch &b) { b.logit_bias[0] = NAN; },
       "step batch: logit_bias[0] = nan is not below +inf"},
      {[](StepBatch &b) { b.mask_index[0] = 1; },
       "step batch: mask_index[0] = 1 is outside [-1, 1)"},
      {[](StepBatch &b) { b.mask_index[0] = -2; },
       "step batch: mask_index[0] = -2 is outside [-1, 1)"},
      {[](StepBatch &b) { b.token_mask.clear(); },
       "step batch: mask_index[0] = 0 is outside [-1, 0)"},
  };
  for (const auto &[corrupt, error] : cases) {
    StepBatch b = valid_batch();
    corrupt(b);
    EXPECT_EQ(error_of(b), error);
  }
}

} // namespace
} // namespace llmserve
