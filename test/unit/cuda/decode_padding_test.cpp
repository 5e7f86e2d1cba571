#include "cuda/decode_padding.h"

#include "bundle/manifest.h"
#include "bundle/step_batch.h"
#include "support/test_bundle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace llmserve::cuda {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(DecodeBucket, IsTheSmallestBucketThatHoldsTheBatch) {
  EXPECT_EQ(decode_bucket(1), 1);
  EXPECT_EQ(decode_bucket(2), 2);
  EXPECT_EQ(decode_bucket(3), 4);
  EXPECT_EQ(decode_bucket(17), 24);
  EXPECT_EQ(decode_bucket(24), 24);
  EXPECT_EQ(decode_bucket(25), 32);
  EXPECT_EQ(decode_bucket(97), 128);
  EXPECT_EQ(decode_bucket(193), 256);
  EXPECT_EQ(decode_bucket(256), 256);
  EXPECT_EQ(decode_bucket(257), 320);
  EXPECT_EQ(decode_bucket(449), 512);
  EXPECT_EQ(decode_bucket(512), 512);
  EXPECT_EQ(decode_bucket(513), 0); // runs uncaptured
  EXPECT_EQ(decode_bucket(0), 0);
  EXPECT_EQ(decode_bucket(-1), 0);
  for (int32_t s = 1; s <= 512; ++s) {
    const int32_t b = decode_bucket(s);
    ASSERT_GE(b, s);
    ASSERT_TRUE(std::find(kDecodeBuckets.begin(), kDecodeBuckets.end(), b) !=
                kDecodeBuckets.end());
  }
}

// Three sequences decoding one token each, blocks of 2 slots, rows of 3.
StepBatch decode_batch() {
  StepBatch b;
  b.num_tokens = b.num_seqs = 3;
  b.max_blocks_per_seq = 3;
  b.token_ids = {5, 6, 7};
  b.positions = {4, 0, 2};
  b.query_start = {0, 1, 2, 3};
  b.context_len = {5, 1, 3};
  b.block_table = {4, 0, 2, /**/ 1, -1, -1, /**/ 3, 5, -1};
  b.slot_mapping = {2 * 2 + 0, 1 * 2 + 0, 5 * 2 + 0};
  b.logits_rows = {0, 1, 2};
  b.temperature = {0.0f, 0.7f, 1.0f};
  b.top_p = {1.0f, 0.9f, 0.5f};
  b.top_k = {0, 40, 3};
  b.min_p = {0.0f, 0.05f, 0.1f};
  b.seed = {11, 12, 13};
  b.presence_penalty = {0.0f, 0.5f, 0.0f};
  b.frequency_penalty = {0.0f, 0.0f, 0.25f};
  b.repetition_penalty = {1.0f, 1.2f, 1.0f};
  b.penalty_start = {0, 0, 2, 3};
  b.penalty_tokens = {6, 1, 7};
  b.penalty_counts = {1, 0, 2};
  b.logit_bias = {0.0f, -1.0f, 0.0f};
  b.mask_index = {-1, -1, 0};
  b.token_mask = {0x7f};
  b.num_logprobs = {-1, 3, 0};
  return b;
}

TEST(DecodeOnly, NeedsExactlyOneTokenPerSequence) {
  EXPECT_TRUE(is_decode_only(decode_batch()));
  StepBatch prefill = decode_batch();
  prefill.num_tokens = 4;
  prefill.query_start = {0, 2, 3, 4};
  EXPECT_FALSE(is_decode_only(prefill));
  StepBatch empty;
  EXPECT_FALSE(is_decode_only(empty));
}

TEST(PadDecodeBatch, AppendsSinkSequencesAndWidensTheBlockTable) {
  const StepBatch p = pad_decode_batch(decode_batch(), 4, 5, {/*sink_block=*/6, /*block_size=*/2});
  EXPECT_EQ(p.num_tokens, 4);
  EXPECT_EQ(p.num_seqs, 4);
  EXPECT_EQ(p.max_blocks_per_seq, 5);
  EXPECT_THAT(p.token_ids, ElementsAre(5, 6, 7, 0));
  EXPECT_THAT(p.positions, ElementsAre(4, 0, 2, 0));
  EXPECT_THAT(p.query_start, ElementsAre(0, 1, 2, 3, 4));
  EXPECT_THAT(p.context_len, ElementsAre(5, 1, 3, 1));
  EXPECT_THAT(p.block_table, ElementsAre(4, 0, 2, -1, -1, /**/ 1, -1, -1, -1, -1,
                                         /**/ 3, 5, -1, -1, -1, /**/ 6, -1, -1, -1, -1));
  EXPECT_THAT(p.slot_mapping, ElementsAre(4, 2, 10, 12));
  EXPECT_THAT(p.logits_rows, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(p.temperature, ElementsAre(0.0f, 0.7f, 1.0f, 0.0f));
  EXPECT_THAT(p.top_p, ElementsAre(1.0f, 0.9f, 0.5f, 1.0f));
  EXPECT_THAT(p.top_k, ElementsAre(0, 40, 3, 0));
  EXPECT_THAT(p.min_p, ElementsAre(0.0f, 0.05f, 0.1f, 0.0f));
  EXPECT_THAT(p.seed, ElementsAre(11, 12, 13, 0));
  EXPECT_THAT(p.presence_penalty, ElementsAre(0.0f, 0.5f, 0.0f, 0.0f));
  EXPECT_THAT(p.frequency_penalty, ElementsAre(0.0f, 0.0f, 0.25f, 0.0f));
  EXPECT_THAT(p.repetition_penalty, ElementsAre(1.0f, 1.2f, 1.0f, 1.0f));
  EXPECT_THAT(p.penalty_start, ElementsAre(0, 0, 2, 3, 3)) << "an empty history";
  EXPECT_THAT(p.penalty_tokens, ElementsAre(6, 1, 7));
  EXPECT_THAT(p.penalty_counts, ElementsAre(1, 0, 2));
  EXPECT_THAT(p.logit_bias, ElementsAre(0.0f, -1.0f, 0.0f));
  EXPECT_THAT(p.mask_index, ElementsAre(-1, -1, 0, -1)) << "padding has no mask";
  EXPECT_THAT(p.token_mask, ElementsAre(0x7f));
  EXPECT_THAT(p.num_logprobs, ElementsAre(-1, 3, 0, -1));
}

TEST(PadDecodeBatch, AFullBucketOnlyWidensTheRows) {
  const StepBatch b = decode_batch();
  const StepBatch p = pad_decode_batch(b, 3, 3, {6, 2});
  EXPECT_EQ(p.token_ids, b.token_ids);
  EXPECT_EQ(p.block_table, b.block_table);
  EXPECT_EQ(p.slot_mapping, b.slot_mapping);
}

// The padded batch is a valid step for a pool that has the sink block: the
// checks the executors run on every batch pass, so the kernels stay in
// bounds.
TEST(PadDecodeBatch, GivesAValidStepOverThePoolWithTheSink) {
  test::json m = test::step_manifest();
  const Manifest manifest = Manifest::parse(m.dump(), "manifest.json");
  StepBatch b = decode_batch();
  b.block_table = {4, 0, 2, /**/ 1, -1, -1, /**/ 3, 5, -1};
  check_step_batch(b, manifest.step_bounds(6)); // the engine's 6 blocks
  const StepBatch p = pad_decode_batch(b, 8, 4, {6, test::kBlockSize});
  EXPECT_NO_THROW(check_step_batch(p, manifest.step_bounds(7)));
  EXPECT_THROW(check_step_batch(p, manifest.step_bounds(6)), std::invalid_argument); // the sink is block 6
}

TEST(LogitEntriesBucket, IsAPowerOfTwoUpToTheLargest) {
  EXPECT_EQ(logit_entries_bucket(0, 1000), 0);
  EXPECT_EQ(logit_entries_bucket(1, 1000), 64);
  EXPECT_EQ(logit_entries_bucket(64, 1000), 64);
  EXPECT_EQ(logit_entries_bucket(65, 1000), 128);
  EXPECT_EQ(logit_entries_bucket(600, 1000), 1000) << "never past the largest step's";
  EXPECT_EQ(mask_rows_bucket(0, 256), 0);
  EXPECT_EQ(mask_rows_bucket(1, 256), 1);
  EXPECT_EQ(mask_rows_bucket(3, 256), 4);
  EXPECT_EQ(mask_rows_bucket(200, 256), 256);
}

// Logit entries and mask rows padded for a graph: the real ones as they
// were, the added entries on token V of the last (padding) sequence, which
// adjust_logits ignores (op_numerics' adjust_logits case checks that on
// both targets), and unused mask rows. The padded batch is still a valid
// step but for that token, which check_step_batch refuses.
TEST(PadLogitEntries, AppendsEntriesOnATokenOutsideTheVocabulary) {
  test::json m = test::step_manifest();
  const Manifest manifest = Manifest::parse(m.dump(), "manifest.json");
  const int32_t vocab = static_cast<int32_t>(manifest.step_bounds(7).vocab_size);
  const int64_t words = token_mask_words(vocab);
  StepBatch b = decode_batch();
  b.block_table = {4, 0, 2, /**/ 1, -1, -1, /**/ 3, 5, -1};
  b.token_mask.assign(words, 0x7f);
  StepBatch p = pad_decode_batch(b, 4, 3, {6, test::kBlockSize});
  pad_logit_entries(p, 64, 2, vocab);
  EXPECT_THAT(p.penalty_start, ElementsAre(0, 0, 2, 3, 64));
  ASSERT_EQ(p.penalty_tokens.size(), 64u);
  EXPECT_THAT(std::vector<int32_t>(p.penalty_tokens.begin(), p.penalty_tokens.begin() + 4),
              ElementsAre(6, 1, 7, vocab));
  EXPECT_EQ(std::count(p.penalty_tokens.begin(), p.penalty_tokens.end(), vocab), 61);
  EXPECT_EQ(std::count(p.penalty_counts.begin(), p.penalty_counts.end(), -1), 61);
  EXPECT_EQ(std::count(p.logit_bias.begin(), p.logit_bias.end(), 0.0f), 63);
  ASSERT_EQ(p.token_mask.size(), size_t(2 * words));
  EXPECT_EQ(p.token_mask[0], 0x7f);
  EXPECT_EQ(p.token_mask[words], 0) << "an unused row";
  EXPECT_THAT(p.mask_index, ElementsAre(-1, -1, 0, -1));
  try {
    check_step_batch(p, manifest.step_bounds(7));
    ADD_FAILURE() << "token V passed the check";
  } catch (const std::invalid_argument &e) {
    EXPECT_THAT(e.what(), HasSubstr("penalty_tokens[3] = " + std::to_string(vocab)));
  }
  p.penalty_tokens.assign(64, 0);
  EXPECT_NO_THROW(check_step_batch(p, manifest.step_bounds(7)));

  EXPECT_THROW(pad_logit_entries(p, 32, 2, vocab), std::invalid_argument) << "fewer entries";
  EXPECT_THROW(pad_logit_entries(p, 64, 1, vocab), std::invalid_argument) << "fewer rows";
}

TEST(PadDecodeBatch, RefusesBatchesThatDoNotFit) {
  const StepBatch b = decode_batch();
  try {
    pad_decode_batch(b, 2, 3, {6, 2});
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument &e) {
    EXPECT_THAT(e.what(), HasSubstr("3 sequences with rows of 3 blocks do not fit 2 sequences"));
  }
  EXPECT_THROW(pad_decode_batch(b, 4, 2, {6, 2}), std::invalid_argument);
  StepBatch prefill = b;
  prefill.num_tokens = 4;
  prefill.query_start = {0, 2, 3, 4};
  EXPECT_THROW(pad_decode_batch(prefill, 4, 3, {6, 2}), std::invalid_argument);
}

} // namespace
} // namespace llmserve::cuda
