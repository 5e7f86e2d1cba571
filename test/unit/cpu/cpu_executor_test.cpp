#include "cpu/cpu_executor.h"

#include "bundle/entry_inputs.h"

#include "support/test_bundle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>

namespace llmserve {
namespace {

using ::testing::HasSubstr;
using test::fs::path;

HostTensor f32(std::vector<int64_t> shape, const std::vector<float> &values) {
  const auto *bytes = reinterpret_cast<const uint8_t *>(values.data());
  return HostTensor{DType::F32, std::move(shape), {bytes, bytes + values.size() * 4}};
}

std::vector<float> values(const HostTensor &t) {
  std::vector<float> v(t.data.size() / 4);
  if (!v.empty())
    std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

template <typename Fn> std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "(no error)";
}

class OpsExecutor : public ::testing::Test {
protected:
  OpsExecutor() : executor_(Bundle(test::ops_bundle(test::fresh_dir()).string()), 3) {}
  CpuExecutor executor_;
};

TEST(CpuExecutor, RefusesAnNvidiaBundle) {
  const path dir = test::fresh_dir();
  test::write_bundle(dir, test::for_sm90(test::ops_manifest()));
  test::write_weights(dir / "weights.safetensors", test::ops_weights());
  EXPECT_THAT(error_of([&] { CpuExecutor executor(Bundle(dir.string()), 1); }),
              HasSubstr("the bundle targets sm_90, not the CPU"));
}

TEST_F(OpsExecutor, RunsDynamicEntryThroughAnActivation) {
  // Sizes that cross tile boundaries and make the arena grow and shrink.
  for (int64_t n : {5, 1, 1000, 4, 0, 37}) {
    std::vector<float> a(n), b(n), want(n);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i);
      b[i] = static_cast<float>(3 * i + 1);
      want[i] = 2 * a[i] + b[i];
    }
    Symbols s;
    s.T = n;
    const std::vector<HostTensor> out = executor_.run_entry("add", s, {f32({n}, a), f32({n}, b)});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dtype, DType::F32);
    EXPECT_EQ(out[0].shape, std::vector<int64_t>{n});
    EXPECT_EQ(values(out[0]), want) << "T=" << n;
  }
}

TEST_F(OpsExecutor, GridsSelectWhichDispatchesRun) {
  for (int64_t n : {1, 3, 4, 5, 9}) {
    std::vector<float> a(n), b(n), want(n);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i + 1);
      b[i] = static_cast<float>(10 * i);
      want[i] = n > 4 ? a[i] + b[i] : 2 * a[i];
    }
    Symbols s;
    s.T = n;
    const std::vector<HostTensor> out =
        executor_.run_entry("add_selected", s, {f32({n}, a), f32({n}, b)});
    EXPECT_EQ(values(out[0]), want) << "T=" << n;
  }
}

TEST_F(OpsExecutor, RunsEntriesReadingWeights) {
  const std::vector<float> x = {1, 2, 3, 4, -1, -2, -3, -4};
  const HostTensor input = f32({2, 4}, x);
  std::vector<float> scaled, half, projected;
  for (int t = 0; t < 2; ++t) {
    for (int h = 0; h < 4; ++h) {
      scaled.push_back(x[t * 4 + h] * test::kGain[h]);
      half.push_back(x[t * 4 + h] * test::kHalfGain[h]);
    }
    for (int n = 0; n < 3; ++n) {
      float sum = 0;
      for (int k = 0; k < 4; ++k)
        sum += x[t * 4 + k] * test::kProj[n * 4 + k];
      projected.push_back(sum);
    }
  }
  EXPECT_EQ(values(executor_.run_entry("scale", {}, {input})[0]), scaled);
  EXPECT_EQ(values(executor_.run_entry("scale_half", {}, {input})[0]), half);
  const HostTensor p = executor_.run_entry("project", {}, {input})[0];
  EXPECT_EQ(p.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(p), projected);
}

TEST_F(OpsExecutor, RefusesBadInputs) {
  const HostTensor x = f32({2, 4}, std::vector<float>(8));
  EXPECT_THAT(error_of([&] { executor_.run_entry("nope", {}, {x}); }),
              HasSubstr("no entry point 'nope'"));
  EXPECT_THAT(error_of([&] { executor_.run_entry("scale", {}, {}); }),
              HasSubstr("entry point 'scale' takes 1 arguments, got 0"));
  EXPECT_THAT(error_of([&] { executor_.run_entry("scale", {}, {f32({4, 2}, std::vector<float>(8))}); }),
              HasSubstr("entry point 'scale' argument 0 'x': got f32 [4, 2], expected f32 [2, 4] for [2,4]"));
  HostTensor wrong_dtype = x;
  wrong_dtype.dtype = DType::I32;
  EXPECT_THAT(error_of([&] { executor_.run_entry("scale", {}, {wrong_dtype}); }),
              HasSubstr("got i32 [2, 4], expected f32 [2, 4]"));
  HostTensor short_data = x;
  short_data.data.resize(7);
  EXPECT_THAT(error_of([&] { executor_.run_entry("scale", {}, {short_data}); }),
              HasSubstr("argument 0 'x': 7 bytes of data for f32 [2, 4]"));
  Symbols negative;
  negative.T = -1;
  EXPECT_THAT(error_of([&] {
                executor_.run_entry("add", negative, {f32({-1}, {}), f32({-1}, {})});
              }),
              HasSubstr("negative dimension"));
}

TEST_F(OpsExecutor, ReportsTheDispatchWhoseGridFails) {
  const path dir = test::fresh_dir("_grid");
  test::json m = test::ops_manifest();
  m["entry_points"][0]["dispatches"][1]["grid"][0] = "ceildiv(T, S)";
  test::write_bundle(dir, m);
  test::write_weights(dir / "weights.safetensors", test::ops_weights());
  CpuExecutor executor(Bundle(dir.string()), 1);
  Symbols s;
  s.T = 2;
  EXPECT_THAT(error_of([&] {
                executor.run_entry("add", s, {f32({2}, {1, 2}), f32({2}, {1, 2})});
              }),
              HasSubstr("entry point 'add' dispatch 1 (kernel 'add'): expression "
                        "'ceildiv(T,S)' divides by 0"));
  m["entry_points"][0]["dispatches"][1]["grid"][0] = "S-T";
  test::write_file(dir / "manifest.json", m.dump());
  CpuExecutor negative_grid(Bundle(dir.string()), 1);
  EXPECT_THAT(error_of([&] {
                negative_grid.run_entry("add", s, {f32({2}, {1, 2}), f32({2}, {1, 2})});
              }),
              HasSubstr("entry point 'add' dispatch 1 (kernel 'add'): thread pool: bad grid [-2, 1, 1]"));
}

// The toy model's reference (see test_kernels.c): the next token of a
// sequence is argmax_v (sum of its context's embeddings) . embedding[v].
int32_t reference_next(const std::vector<int32_t> &context) {
  const std::vector<float> e = test::embedding_values();
  float sum[test::kHidden] = {};
  for (int32_t tok : context)
    for (int h = 0; h < test::kHidden; ++h)
      sum[h] += e[tok * test::kHidden + h];
  int32_t best = 0;
  float best_logit = 0;
  for (int v = 0; v < test::kVocab; ++v) {
    float logit = 0;
    for (int h = 0; h < test::kHidden; ++h)
      logit += sum[h] * e[v * test::kHidden + h];
    if (v == 0 || logit > best_logit) {
      best = v;
      best_logit = logit;
    }
  }
  return best;
}

// Sequences as the engine keeps them: tokens so far, and blocks handed out
// in an order that is not the identity, so the block table matters.
struct Sequence {
  std::vector<int32_t> tokens;
  std::vector<int32_t> blocks;
  size_t computed = 0; // tokens already in the KV cache
  float temperature = 0;
};

Sequence prompt(std::vector<int32_t> tokens, float temperature = 0) {
  Sequence s;
  s.tokens = std::move(tokens);
  s.temperature = temperature;
  return s;
}

constexpr int kMaxBlocks = 6;

StepBatch make_batch(std::vector<Sequence> &seqs, std::vector<int32_t> &free_blocks) {
  StepBatch b;
  b.num_seqs = static_cast<int32_t>(seqs.size());
  b.max_blocks_per_seq = kMaxBlocks;
  b.query_start.push_back(0);
  b.penalty_start.push_back(0);
  for (size_t s = 0; s < seqs.size(); ++s) {
    Sequence &seq = seqs[s];
    for (size_t pos = seq.computed; pos < seq.tokens.size(); ++pos) {
      if (pos / test::kBlockSize >= seq.blocks.size()) {
        seq.blocks.push_back(free_blocks.back());
        free_blocks.pop_back();
      }
      b.token_ids.push_back(seq.tokens[pos]);
      b.positions.push_back(static_cast<int32_t>(pos));
      b.slot_mapping.push_back(seq.blocks[pos / test::kBlockSize] * test::kBlockSize +
                               static_cast<int32_t>(pos % test::kBlockSize));
    }
    b.query_start.push_back(static_cast<int32_t>(b.token_ids.size()));
    b.logits_rows.push_back(static_cast<int32_t>(b.token_ids.size()) - 1);
    b.context_len.push_back(static_cast<int32_t>(seq.tokens.size()));
    for (int j = 0; j < kMaxBlocks; ++j)
      b.block_table.push_back(j < static_cast<int>(seq.blocks.size()) ? seq.blocks[j] : -1);
    b.temperature.push_back(seq.temperature);
    b.top_p.push_back(0.9f);
    b.top_k.push_back(40 + static_cast<int32_t>(s));
    b.min_p.push_back(0.05f);
    b.seed.push_back(1000 + 3 * static_cast<int64_t>(s));
    b.presence_penalty.push_back(0.0f);
    b.frequency_penalty.push_back(0.0f);
    b.repetition_penalty.push_back(1.0f);
    b.penalty_start.push_back(0);
    b.mask_index.push_back(-1);
    b.num_logprobs.push_back(-1);
    seq.computed = seq.tokens.size();
  }
  b.num_tokens = static_cast<int32_t>(b.token_ids.size());
  return b;
}

class StepExecutor : public ::testing::Test {
protected:
  static path bundle() {
    const path ckpt = test::step_checkpoint(test::fresh_dir("_ckpt"));
    return test::step_bundle(test::fresh_dir(), ckpt);
  }
};

TEST_F(StepExecutor, GeneratesLikeTheReferenceAcrossSteps) {
  const path dir = bundle();
  for (int threads : {1, 4}) {
    CpuExecutor executor(Bundle(dir.string()), threads);
    EXPECT_EQ(executor.kv_cache_spec().block_size, test::kBlockSize);
    EXPECT_EQ(executor.kv_cache_spec().bytes_per_token, 32);
    executor.allocate_kv_cache(16);
    std::vector<int32_t> free_blocks = {3, 9, 0, 14, 7, 1, 12, 5, 10, 2, 15, 8, 4, 11, 6, 13};

    // Prefill of different lengths in one step, then decode steps, one of
    // them with a prompt joining midway (a mixed step).
    std::vector<Sequence> seqs = {prompt({1, 5, 2}), prompt({7, 7, 0, 3, 6}), prompt({4})};
    std::vector<Sequence> running(seqs.begin(), seqs.begin() + 2);
    for (int step = 0; step < 5; ++step) {
      if (step == 2)
        running.push_back(seqs[2]);
      StepBatch batch = make_batch(running, free_blocks);
      StepOutput out;
      executor.execute(batch, out);
      ASSERT_EQ(out.next_tokens.size(), running.size());
      for (size_t s = 0; s < running.size(); ++s) {
        ASSERT_EQ(out.next_tokens[s], reference_next(running[s].tokens))
            << "step " << step << " sequence " << s << ", " << threads << " threads";
        running[s].tokens.push_back(out.next_tokens[s]);
      }
    }
  }
}

// A step's arrays as an entry point's inputs (what bench ppl hands the CUDA
// executor's run_entry): run so, the step samples what it samples launched.
TEST_F(StepExecutor, RunsAStepFromItsArgumentTensors) {
  CpuExecutor executor(Bundle(bundle().string()), 2);
  executor.allocate_kv_cache(16);
  std::vector<int32_t> free_blocks = {3, 9, 0, 14, 7, 1, 12, 5, 10, 2, 15, 8, 4, 11, 6, 13};
  std::vector<Sequence> seqs = {prompt({1, 5, 2}), prompt({7, 7, 0, 3, 6})};
  const StepBatch batch = make_batch(seqs, free_blocks);
  const Manifest &m = executor.bundle().manifest();
  const std::vector<HostTensor> inputs = step_argument_tensors(m, *m.find_entry("step"), batch);
  ASSERT_EQ(inputs.size(), static_cast<size_t>(abi::kNumStepArguments));
  EXPECT_EQ(inputs[kTokenIdsArgument].shape, std::vector<int64_t>{8});
  EXPECT_EQ(inputs[kTokenIdsArgument].data.size(), 8 * sizeof(int32_t));
  const std::vector<HostTensor> results =
      executor.run_entry("step", step_symbols(batch, 16), inputs);
  StepOutput launched;
  executor.execute(batch, launched);
  ASSERT_EQ(results[0].data.size(), launched.next_tokens.size() * sizeof(int32_t));
  EXPECT_EQ(
      std::memcmp(results[0].data.data(), launched.next_tokens.data(), results[0].data.size()), 0);
}

// Overlapped scheduling: a step launched before the one ahead of it has
// returned decodes that step's tokens, which the executor fills in.
TEST_F(StepExecutor, RunsAStepOnTheTokensOfTheStepLaunchedBefore) {
  CpuExecutor executor(Bundle(bundle().string()), 2);
  executor.allocate_kv_cache(16);
  std::vector<int32_t> free_blocks = {3, 9, 0, 14, 7, 1, 12, 5, 10, 2, 15, 8, 4, 11, 6, 13};
  std::vector<Sequence> seqs = {prompt({1, 5, 2}), prompt({7, 7, 0, 3, 6})};
  const StepBatch prefill = make_batch(seqs, free_blocks);
  // Each sequence decodes the token the prefill samples: 0 until then.
  for (Sequence &seq : seqs)
    seq.tokens.push_back(0);
  StepBatch decode = make_batch(seqs, free_blocks);
  decode.deferred_tokens = {{0, 0}, {1, 1}};

  executor.launch(prefill);
  executor.launch(decode);
  EXPECT_THAT(error_of([&] { executor.launch(decode); }),
              HasSubstr("two steps are launched already"));
  EXPECT_THAT(error_of([&] { executor.logits(prefill); }),
              HasSubstr("logits() while a step is launched"));
  EXPECT_THAT(error_of([&] { executor.profile_step(prefill); }),
              HasSubstr("profile_step() while a step is launched"));
  StepOutput first, second;
  executor.wait(first);
  executor.wait(second);
  EXPECT_THAT(error_of([&] { executor.wait(second); }), HasSubstr("no step is launched"));
  for (size_t s = 0; s < seqs.size(); ++s) {
    std::vector<int32_t> context = seqs[s].tokens;
    context.back() = first.next_tokens[s];
    EXPECT_EQ(first.next_tokens[s], reference_next({seqs[s].tokens.begin(),
                                                    seqs[s].tokens.end() - 1}));
    EXPECT_EQ(second.next_tokens[s], reference_next(context)) << "sequence " << s;
  }
  EXPECT_FALSE(first.idle_seconds_before) << "no step ran before";
  // Timed alone, the prefill takes a time for each dispatch of the step.
  const std::vector<float> ms = executor.profile_step(prefill);
  EXPECT_EQ(ms.size(), executor.bundle().manifest().find_entry("step")->dispatches.size());
  EXPECT_TRUE(std::all_of(ms.begin(), ms.end(), [](float t) { return t >= 0; }));
  ASSERT_TRUE(second.idle_seconds_before);
  EXPECT_GE(*second.idle_seconds_before, 0.0);

  // A deferred token must name a token of the step and a row of the step
  // launched before it.
  StepBatch bad = decode;
  bad.deferred_tokens = {{0, 2}};
  EXPECT_THAT(error_of([&] { executor.launch(bad); }),
              HasSubstr("deferred_tokens[0] takes row 2 of a previous step of 2 sequences"));
  bad.deferred_tokens = {{1, 0}, {0, 1}};
  EXPECT_THAT(error_of([&] { executor.launch(bad); }),
              HasSubstr("deferred_tokens[1] names token 0, not after the one before it"));
}

TEST_F(StepExecutor, PassesEverySamplingParameterInItsPlace) {
  CpuExecutor executor(Bundle(bundle().string()), 2);
  executor.allocate_kv_cache(8);
  std::vector<int32_t> free_blocks = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<Sequence> seqs = {prompt({1, 2, 3}), prompt({4, 5}, 0.7f)};
  StepBatch batch = make_batch(seqs, free_blocks);
  StepOutput out;
  executor.execute(batch, out);
  EXPECT_EQ(out.next_tokens[0], reference_next(seqs[0].tokens));
  // test_sample's stand-in for sampling: (seed + top_k + 10 top_p + 100 min_p) % V
  EXPECT_EQ(out.next_tokens[1], (1003 + 41 + 9 + 5) % test::kVocab);
  EXPECT_NE(out.next_tokens[1], reference_next(seqs[1].tokens));
  EXPECT_TRUE(out.token_logprobs.empty()) << "no sequence asked for log-probs";
}

TEST_F(StepExecutor, PassesPenaltiesAndReturnsLogprobs) {
  CpuExecutor executor(Bundle(bundle().string()), 2);
  executor.allocate_kv_cache(8);
  std::vector<int32_t> free_blocks = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<Sequence> seqs = {prompt({1, 2, 3}), prompt({4, 5}, 0.7f)};
  StepBatch batch = make_batch(seqs, free_blocks);
  batch.presence_penalty[1] = 0.5f;
  batch.frequency_penalty[1] = 0.25f;
  batch.repetition_penalty[1] = 1.5f;
  batch.penalty_start = {0, 1, 3};
  batch.penalty_tokens = {6, 4, 5};
  batch.penalty_counts = {1, 0, 2};
  batch.logit_bias = {0.0f, 0.0f, 0.0f};
  batch.num_logprobs = {3, -1};
  StepOutput out;
  executor.execute(batch, out);
  // test_sample: + 1000 presence + 10000 frequency + 100000 repetition
  // + sum(token * (count + 1)) over the row's entries.
  const int32_t base = 1003 + 41 + 9 + 5 + 500 + 2500 + 150000;
  EXPECT_EQ(out.next_tokens[1], (base + 4 * 1 + 5 * 3) % test::kVocab);

  // + 10 * bias per entry, and the first word of the row's mask.
  batch.penalty_counts = {1, -1, 2};
  batch.logit_bias = {0.0f, 0.5f, -0.3f};
  batch.mask_index = {-1, 1};
  batch.token_mask = {0x11, 0x6};
  executor.execute(batch, out);
  EXPECT_EQ(out.next_tokens[1], (base + 4 * 0 + 5 + 5 * 3 - 3 + 6) % test::kVocab);
  ASSERT_EQ(out.token_logprobs.size(), 2u);
  ASSERT_EQ(out.top_logprob_tokens.size(), 2u * abi::kMaxTopLogprobs);
  ASSERT_EQ(out.top_logprobs.size(), 2u * abi::kMaxTopLogprobs);
  EXPECT_EQ(out.token_logprobs[0], -1.0f);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(out.top_logprob_tokens[k], (out.next_tokens[0] + k) % test::kVocab);
    EXPECT_EQ(out.top_logprobs[k], -static_cast<float>(k));
  }
}

TEST_F(StepExecutor, RefusesInconsistentBatches) {
  CpuExecutor executor(Bundle(bundle().string()), 1);
  std::vector<int32_t> free_blocks = {0, 1, 2, 3};
  std::vector<Sequence> seqs = {prompt({1, 2, 3}), prompt({4})};
  const StepBatch good = make_batch(seqs, free_blocks);
  StepOutput out;
  EXPECT_THAT(error_of([&] { executor.execute(good, out); }),
              HasSubstr("launch() before allocate_kv_cache()"));
  EXPECT_THAT(error_of([&] { executor.allocate_kv_cache(0); }),
              HasSubstr("KV cache: 0 blocks"));
  executor.allocate_kv_cache(4);

  const std::pair<std::function<void(StepBatch &)>, const char *> cases[] = {
      {[](StepBatch &b) { b.positions.pop_back(); },
       "step batch: positions has 3 entries, expected T = 4"},
      {[](StepBatch &b) { b.seed.push_back(1); }, "seed has 3 entries, expected S = 2"},
      {[](StepBatch &b) { b.block_table.pop_back(); }, "block_table has 11 entries, expected S*MB = 12"},
      {[](StepBatch &b) { b.query_start.pop_back(); }, "query_start has 2 entries, expected S+1 = 3"},
      {[](StepBatch &b) { b.num_seqs = -1; }, "negative size"},
      {[](StepBatch &b) { b.token_ids[1] = 8; }, "token_ids[1] = 8 is outside [0, 8)"},
      {[](StepBatch &b) { b.positions[0] = 64; }, "positions[0] = 64 is outside [0, 64)"},
      {[](StepBatch &b) { b.slot_mapping[3] = 8; }, "slot_mapping[3] = 8 is outside [0, 8)"},
      {[](StepBatch &b) { b.block_table[0] = 4; }, "block_table[0] = 4 is outside [-1, 4)"},
      {[](StepBatch &b) { b.block_table[1] = -1; },
       "block_table row 0 has no block 1 for context_len 3"},
      {[](StepBatch &b) { b.context_len[1] = 13; }, "context_len[1] = 13 is outside [0, 13)"},
      {[](StepBatch &b) { b.logits_rows[0] = 4; }, "logits_rows[0] = 4 is outside [0, 4)"},
      {[](StepBatch &b) { b.query_start[2] = 3; }, "query_start runs from 0 to 3, expected 0 to T = 4"},
      {[](StepBatch &b) { b.query_start[1] = 5; }, "query_start decreases at 2"},
      {[](StepBatch &b) { b.frequency_penalty.pop_back(); },
       "frequency_penalty has 1 entries, expected S = 2"},
      {[](StepBatch &b) { b.penalty_tokens = {3}; },
       "penalty_counts has 0 entries, expected P = 1"},
      {[](StepBatch &b) { b.penalty_tokens = {3}, b.penalty_counts = {1}; },
       "logit_bias has 0 entries, expected P = 1"},
      {[](StepBatch &b) { b.penalty_tokens = {3}, b.penalty_counts = {1}, b.logit_bias = {0}; },
       "penalty_start runs from 0 to 0, expected 0 to P = 1"},
      {[](StepBatch &b) {
         b.penalty_start = {0, 2, 1}, b.penalty_tokens = {3}, b.penalty_counts = {1},
         b.logit_bias = {0};
       },
       "penalty_start decreases at 2"},
      {[](StepBatch &b) {
         b.penalty_start = {0, 0, 1}, b.penalty_tokens = {8}, b.penalty_counts = {1},
         b.logit_bias = {0};
       },
       "penalty_tokens[0] = 8 is outside [0, 8)"},
      {[](StepBatch &b) {
         b.penalty_start = {0, 0, 1}, b.penalty_tokens = {3}, b.penalty_counts = {-2},
         b.logit_bias = {0};
       },
       "penalty_counts[0] = -2 is outside [-1, 2147483647)"},
      {[](StepBatch &b) {
         b.penalty_start = {0, 0, 1}, b.penalty_tokens = {3}, b.penalty_counts = {-1},
         b.logit_bias = {INFINITY};
       },
       "logit_bias[0] = inf is not below +inf"},
      {[](StepBatch &b) { b.mask_index[1] = 0; }, "mask_index[1] = 0 is outside [-1, 0)"},
      {[](StepBatch &b) { b.mask_index[1] = 1, b.token_mask = {-1}; },
       "mask_index[1] = 1 is outside [-1, 1)"},
      {[](StepBatch &b) { b.num_logprobs[0] = 21; }, "num_logprobs[0] = 21 is outside [-1, 21)"},
  };
  for (const auto &[breakit, error] : cases) {
    StepBatch bad = good;
    breakit(bad);
    EXPECT_THAT(error_of([&] { executor.execute(bad, out); }), HasSubstr(error));
  }
  executor.execute(good, out); // still usable
  EXPECT_EQ(out.next_tokens[1], reference_next({4}));
}

TEST_F(StepExecutor, BundleWithoutStepCannotExecute) {
  const path dir = test::ops_bundle(test::fresh_dir());
  test::json m = test::ops_manifest();
  m.erase("kv_cache");
  test::write_file(dir / "manifest.json", m.dump());
  CpuExecutor executor(Bundle(dir.string()), 1);
  EXPECT_THAT(error_of([&] { executor.kv_cache_spec(); }), HasSubstr("the bundle has no KV cache"));
  executor.allocate_kv_cache(1);
  StepOutput out;
  EXPECT_THAT(error_of([&] { executor.execute(StepBatch{}, out); }),
              HasSubstr("no entry point 'step'"));
}

TEST_F(StepExecutor, RunEntryNeedsTheKvCache) {
  CpuExecutor executor(Bundle(bundle().string()), 1);
  EXPECT_THAT(error_of([&] { executor.run_entry("step", {}, std::vector<HostTensor>(abi::kNumStepArguments)); }),
              HasSubstr("needs the KV cache"));
}

} // namespace
} // namespace llmserve
