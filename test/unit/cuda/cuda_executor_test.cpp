// The CUDA executor on a GPU, over bundles of the hand-written kernels of
// test_kernels.cu (PTX, and the sm_90a cubin when ptxas was found at build
// time). Every test skips, naming the reason, where there is no driver or no
// device.
#include "cuda/cuda_executor.h"

#include "cpu/cpu_executor.h"
#include "support/test_bundle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <numeric>

namespace llmserve::cuda {
namespace {

using ::testing::HasSubstr;
using test::fs::path;
using test::json;

// Why the GPU tests cannot run here, or empty.
std::string no_gpu_reason() {
  try {
    int count = 0;
    CU_CALL(cuDeviceGetCount, &count);
    return count > 0 ? "" : "no CUDA device";
  } catch (const CudaError &e) {
    return e.what();
  }
}

class Gpu : public ::testing::Test {
protected:
  void SetUp() override {
    static const std::string reason = no_gpu_reason();
    if (!reason.empty())
      GTEST_SKIP() << "needs an NVIDIA GPU: " << reason;
  }
};

template <typename Fn> std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "(no error)";
}

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

// The kernels' files into `dir`: PTX always, the cubin if asked and built.
void write_kernels(const path &dir, bool cubin) {
  test::fs::copy_file(LLMSERVE_TEST_KERNELS_PTX, dir / abi::kCudaPtxFile,
                      test::fs::copy_options::overwrite_existing);
  if (cubin && std::strlen(LLMSERVE_TEST_KERNELS_CUBIN) > 0)
    test::fs::copy_file(LLMSERVE_TEST_KERNELS_CUBIN, dir / abi::kCudaCubinFile,
                        test::fs::copy_options::overwrite_existing);
}

// test::ops_manifest for sm_90, with test_add run by blocks of 4 threads and
// one more entry point: reverse(v[T]) through 64 KiB of shared memory.
json ops_manifest() {
  json m = test::for_sm90(test::ops_manifest());
  m["kernels"][0]["block"] = {4, 1, 1};
  m["buffers"].push_back({{"kind", "argument"}, {"name", "v"}, {"dtype", "f32"}, {"shape", {"T"}}});
  m["buffers"].push_back(
      {{"kind", "result"}, {"name", "reversed"}, {"dtype", "f32"}, {"shape", {"T"}}});
  m["kernels"].push_back({{"name", "reverse"}, {"symbol", "test_reverse"},
                          {"block", {256, 1, 1}}, {"shared_bytes", 65536}});
  m["entry_points"].push_back(
      {{"name", "reverse"}, {"arguments", {10}}, {"results", {11}},
       {"dispatches", {test::dispatch("reverse", {10, 11}, {"T"}, {1, 1, 1})}}});
  return m;
}

path ops_bundle(const path &dir, bool cubin = true) {
  test::write_bundle(dir, ops_manifest(), /*with_kernels=*/false);
  test::write_weights(dir / abi::kEmbeddedWeightsFile, test::ops_weights());
  write_kernels(dir, cubin);
  return dir;
}

CudaExecutorOptions no_step() { return {}; }

TEST_F(Gpu, RunsEntriesWithPushConstantsWeightsAndSharedMemory) {
  for (bool cubin : {false, true}) {
    SCOPED_TRACE(cubin ? "cubin if the device takes it" : "PTX");
    CudaExecutor executor(Bundle(ops_bundle(test::fresh_dir(cubin ? "_cubin" : ""), cubin).string()),
                          no_step());
    if (!cubin || executor.device().compute_major != 9 || executor.device().compute_minor != 0 ||
        std::strlen(LLMSERVE_TEST_KERNELS_CUBIN) == 0)
      EXPECT_EQ(executor.module_file(), abi::kCudaPtxFile);
    else
      EXPECT_EQ(executor.module_file(), abi::kCudaCubinFile);

    // Two dispatches through an activation; the grid and the bound come
    // from T, which the push constant carries.
    Symbols symbols;
    symbols.T = 10;
    std::vector<float> a(10), b(10), want(10);
    for (int i = 0; i < 10; ++i) {
      a[i] = float(i);
      b[i] = float(100 - i * i);
      want[i] = 2 * a[i] + b[i];
    }
    std::vector<HostTensor> r = executor.run_entry("add", symbols, {f32({10}, a), f32({10}, b)});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(values(r[0]), want);

    const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
    r = executor.run_entry("scale", {}, {f32({2, 4}, x)});
    EXPECT_EQ(values(r[0]), (std::vector<float>{1, 4, 9, 16, 5, 12, 21, 32}));
    r = executor.run_entry("scale_half", {}, {f32({2, 4}, x)}); // f16 in the file
    EXPECT_EQ(values(r[0]), (std::vector<float>{0.5f, -3, 6, 1, 2.5f, -9, 14, 2}));
    r = executor.run_entry("project", {}, {f32({2, 4}, x)}); // transposed at load
    EXPECT_EQ(values(r[0]), (std::vector<float>{1, 5, -2, 5, 13, 2}));

    symbols.T = 5000; // 20000 bytes, staged in dynamic shared memory
    std::vector<float> v(5000);
    std::iota(v.begin(), v.end(), 0.0f);
    r = executor.run_entry("reverse", symbols, {f32({5000}, v)});
    std::vector<float> reversed(v.rbegin(), v.rend());
    EXPECT_EQ(values(r[0]), reversed);
  }
}

TEST_F(Gpu, AnEmptyGridLaunchesNothing) {
  CudaExecutor executor(Bundle(ops_bundle(test::fresh_dir()).string()), no_step());
  Symbols symbols;
  symbols.T = 0;
  const std::vector<HostTensor> r =
      executor.run_entry("add", symbols, {f32({0}, {}), f32({0}, {})});
  EXPECT_TRUE(r[0].data.empty());
}

TEST_F(Gpu, PtxThatDoesNotCompileReportsTheJitLog) {
  const path dir = ops_bundle(test::fresh_dir(), /*cubin=*/false);
  test::write_file(dir / abi::kCudaPtxFile,
                   ".version 8.0\n.target sm_90\n.address_size 64\n"
                   ".visible .entry broken() { not_an_instruction; }\n");
  const std::string error = error_of([&] { CudaExecutor(Bundle(dir.string()), no_step()); });
  EXPECT_THAT(error, HasSubstr("kernels.ptx: cuModuleLoadDataEx (PTX JIT): "));
  EXPECT_THAT(error, HasSubstr("not_an_instruction"));
}

TEST_F(Gpu, AKernelMissingFromTheModuleIsNamed) {
  const path dir = test::fresh_dir();
  json m = ops_manifest();
  m["kernels"][1]["symbol"] = "test_absent";
  test::write_bundle(dir, m, /*with_kernels=*/false);
  test::write_weights(dir / abi::kEmbeddedWeightsFile, test::ops_weights());
  write_kernels(dir, false);
  EXPECT_THAT(error_of([&] { CudaExecutor(Bundle(dir.string()), no_step()); }),
              HasSubstr("kernels.ptx: no kernel 'test_absent' (kernel 'scale_rows')"));
}

// The toy step model of test_bundle.h, for the CPU and for sm_90.
struct StepBundles {
  path cpu, gpu;
};

StepBundles step_bundles() {
  const path dir = test::fresh_dir();
  const path checkpoint = test::step_checkpoint(dir / "ckpt");
  StepBundles b{test::step_bundle(dir / "cpu.llmb", checkpoint), dir / "gpu.llmb"};
  json m = test::for_sm90(test::step_manifest());
  m["weights"]["checkpoint"] = checkpoint.string();
  test::write_bundle(b.gpu, m, /*with_kernels=*/false);
  write_kernels(b.gpu, true);
  return b;
}

constexpr int32_t kNumBlocks = 128, kMaxBlocks = 12;

// The step bundle's executor options: steps of up to 64 tokens and 16
// sequences.
CudaExecutorOptions step_options(bool cuda_graphs = true) {
  CudaExecutorOptions options;
  options.limits = {64, 16, kMaxBlocks};
  options.cuda_graphs = cuda_graphs;
  return options;
}

// Every block of the pool, free.
std::vector<int32_t> all_blocks() {
  std::vector<int32_t> blocks(kNumBlocks);
  std::iota(blocks.begin(), blocks.end(), 0);
  return blocks;
}

// Sequences as the engine keeps them, blocks handed out from the top.
struct Sequence {
  std::vector<int32_t> tokens;
  std::vector<int32_t> blocks;
  size_t computed = 0;
  float temperature = 0;
};

StepBatch make_batch(std::vector<Sequence> &seqs, std::vector<int32_t> &free_blocks) {
  StepBatch b;
  b.num_seqs = static_cast<int32_t>(seqs.size());
  b.query_start.push_back(0);
  b.penalty_start.push_back(0);
  for (Sequence &seq : seqs)
    for (size_t pos = seq.computed; pos < seq.tokens.size(); ++pos)
      if (pos / test::kBlockSize >= seq.blocks.size()) {
        seq.blocks.push_back(free_blocks.back());
        free_blocks.pop_back();
      }
  for (const Sequence &seq : seqs)
    b.max_blocks_per_seq = std::max(b.max_blocks_per_seq, static_cast<int32_t>(seq.blocks.size()));
  for (size_t s = 0; s < seqs.size(); ++s) {
    Sequence &seq = seqs[s];
    for (size_t pos = seq.computed; pos < seq.tokens.size(); ++pos) {
      b.token_ids.push_back(seq.tokens[pos]);
      b.positions.push_back(static_cast<int32_t>(pos));
      b.slot_mapping.push_back(seq.blocks[pos / test::kBlockSize] * test::kBlockSize +
                               static_cast<int32_t>(pos % test::kBlockSize));
    }
    b.query_start.push_back(static_cast<int32_t>(b.token_ids.size()));
    b.logits_rows.push_back(static_cast<int32_t>(b.token_ids.size()) - 1);
    b.context_len.push_back(static_cast<int32_t>(seq.tokens.size()));
    for (int32_t j = 0; j < b.max_blocks_per_seq; ++j)
      b.block_table.push_back(j < static_cast<int32_t>(seq.blocks.size()) ? seq.blocks[j] : -1);
    b.temperature.push_back(seq.temperature);
    b.top_p.push_back(0.9f);
    b.top_k.push_back(40 + static_cast<int32_t>(s));
    b.min_p.push_back(0.05f);
    b.seed.push_back(1000 + 3 * static_cast<int64_t>(s));
    b.presence_penalty.push_back(0.0f);
    b.frequency_penalty.push_back(0.0f);
    b.repetition_penalty.push_back(1.0f);
    b.penalty_start.push_back(0);
    b.num_logprobs.push_back(-1);
    b.mask_index.push_back(-1);
    seq.computed = seq.tokens.size();
  }
  b.num_tokens = static_cast<int32_t>(b.token_ids.size());
  return b;
}

// Generation on the GPU, with and without graphs, gives the CPU's tokens
// step by step: a prefill of prompts of different lengths, then decode steps
// whose batch shrinks (so several buckets are captured and replayed, with
// padding), and a prefill joining in the middle.
TEST_F(Gpu, StepsMatchTheCpuWithAndWithoutGraphs) {
  const StepBundles bundles = step_bundles();
  CpuExecutor cpu(Bundle(bundles.cpu.string()), 2);
  CudaExecutor graphs(Bundle(bundles.gpu.string()), step_options());
  CudaExecutor plain(Bundle(bundles.gpu.string()), step_options(/*cuda_graphs=*/false));
  for (Executor *e : std::initializer_list<Executor *>{&cpu, &graphs, &plain})
    e->allocate_kv_cache(kNumBlocks);

  std::vector<int32_t> free_blocks = all_blocks();
  std::vector<Sequence> seqs;
  for (int s = 0; s < 7; ++s)
    seqs.push_back({{1, static_cast<int32_t>(s % 8), 3, 4, static_cast<int32_t>((s * 5) % 8)},
                    {}, 0, s == 2 ? 0.8f : 0.0f});
  seqs[3].tokens.resize(2);

  int decode_steps = 0;
  for (int step = 0; step < 12; ++step) {
    if (step == 4) // a new prompt joins: a mixed step, uncaptured
      seqs.push_back({{5, 6, 7}, {}, 0, 0.0f});
    if (step == 8) // finished sequences leave: a smaller bucket
      seqs.erase(seqs.begin(), seqs.begin() + 5);
    const StepBatch batch = make_batch(seqs, free_blocks);
    decode_steps += batch.num_tokens == batch.num_seqs;
    StepOutput want, with_graphs, without;
    cpu.execute(batch, want);
    graphs.execute(batch, with_graphs);
    plain.execute(batch, without);
    ASSERT_EQ(with_graphs.next_tokens, want.next_tokens) << "step " << step;
    ASSERT_EQ(without.next_tokens, want.next_tokens) << "step " << step;
    for (size_t s = 0; s < seqs.size(); ++s) {
      ASSERT_GE(want.next_tokens[s], 0) << "inconsistent metadata at step " << step;
      seqs[s].tokens.push_back(want.next_tokens[s]);
    }
  }
  EXPECT_GE(decode_steps, 8);
  EXPECT_EQ(graphs.num_graphs(), 2u); // buckets 8 and 4 (7 and 8 sequences, then 3)
  EXPECT_EQ(plain.num_graphs(), 0u);
}

// Decode steps with logit entries (penalties, biases) and mask rows
// (structured output) replay graphs too, their entries and rows padded to
// buckets: the same tokens as the CPU, and a graph per combination.
TEST_F(Gpu, DecodeStepsWithLogitEntriesAndMasksReplayGraphs) {
  const StepBundles bundles = step_bundles();
  CpuExecutor cpu(Bundle(bundles.cpu.string()), 2);
  CudaExecutor graphs(Bundle(bundles.gpu.string()), step_options());
  for (Executor *e : std::initializer_list<Executor *>{&cpu, &graphs})
    e->allocate_kv_cache(kNumBlocks);
  const int64_t mask_words = token_mask_words(cpu.bundle().manifest().model->vocab_size);

  std::vector<int32_t> free_blocks = all_blocks();
  std::vector<Sequence> seqs;
  for (int s = 0; s < 5; ++s) // sampled, so the entries and masks count
    seqs.push_back({{1, static_cast<int32_t>(s % 8), 3}, {}, 0, 0.8f});
  for (int step = 0; step < 8; ++step) {
    StepBatch batch = make_batch(seqs, free_blocks);
    if (step > 0) { // decode steps: entries for some rows, a mask for one
      batch.penalty_start.assign(1, 0);
      for (int32_t s = 0; s < batch.num_seqs; ++s) {
        for (int32_t e = 0; e < (s + step) % 3; ++e) {
          batch.penalty_tokens.push_back((s + e + step) % 8);
          batch.penalty_counts.push_back(e - 1);
          batch.logit_bias.push_back(0.5f * float(e));
        }
        batch.penalty_start.push_back(static_cast<int32_t>(batch.penalty_tokens.size()));
      }
      if (step % 2 == 0) {
        batch.token_mask.assign(mask_words, 0x5a5a + step);
        batch.mask_index[1] = 0;
      }
    }
    StepOutput want, got;
    cpu.execute(batch, want);
    graphs.execute(batch, got);
    ASSERT_EQ(got.next_tokens, want.next_tokens) << "step " << step;
    for (size_t s = 0; s < seqs.size(); ++s)
      seqs[s].tokens.push_back(want.next_tokens[s]);
  }
  // Bucket 8 with 64 entries, without a mask and with one row.
  EXPECT_EQ(graphs.num_graphs(), 2u);
}

// Overlapped scheduling: each decode step is launched before the step ahead
// of it has returned, its tokens copied on the device from that step's
// results (before a graph replay, or uncaptured), and generation gives the
// CPU's tokens run one step at a time.
TEST_F(Gpu, OverlappedStepsTakeTheirTokensOnTheDevice) {
  const StepBundles bundles = step_bundles();
  auto prompts = [] {
    std::vector<Sequence> seqs;
    for (int s = 0; s < 5; ++s)
      seqs.push_back({{1, static_cast<int32_t>(s % 8), 3, static_cast<int32_t>((s * 5) % 8)},
                      {}, 0, 0.0f});
    return seqs;
  };
  constexpr int kSteps = 8;

  CpuExecutor cpu(Bundle(bundles.cpu.string()), 2);
  cpu.allocate_kv_cache(kNumBlocks);
  std::vector<Sequence> want = prompts();
  std::vector<int32_t> free_blocks = all_blocks();
  for (int step = 0; step < kSteps; ++step) {
    StepOutput out;
    cpu.execute(make_batch(want, free_blocks), out);
    for (size_t s = 0; s < want.size(); ++s)
      want[s].tokens.push_back(out.next_tokens[s]);
  }

  for (bool cuda_graphs : {true, false}) {
    CudaExecutor gpu(Bundle(bundles.gpu.string()), step_options(cuda_graphs));
    gpu.allocate_kv_cache(kNumBlocks);
    std::vector<Sequence> seqs = prompts();
    free_blocks = all_blocks();
    std::deque<StepBatch> launched; // alive until waited for
    auto take_oldest = [&] {
      StepOutput out;
      gpu.wait(out);
      launched.pop_front();
      // Its tokens are the placeholders last appended.
      for (size_t s = 0; s < seqs.size(); ++s)
        seqs[s].tokens.back() = out.next_tokens[s];
    };
    gpu.launch(launched.emplace_back(make_batch(seqs, free_blocks)));
    for (int step = 1; step < kSteps; ++step) {
      for (Sequence &seq : seqs)
        seq.tokens.push_back(0); // the token the step in flight samples
      StepBatch &decode = launched.emplace_back(make_batch(seqs, free_blocks));
      for (int32_t s = 0; s < decode.num_seqs; ++s)
        decode.deferred_tokens.push_back({s, s});
      gpu.launch(decode);
      take_oldest();
    }
    for (Sequence &seq : seqs)
      seq.tokens.push_back(0);
    take_oldest();
    for (size_t s = 0; s < seqs.size(); ++s)
      EXPECT_EQ(seqs[s].tokens, want[s].tokens)
          << "sequence " << s << (cuda_graphs ? ", with graphs" : ", without graphs");
    EXPECT_EQ(gpu.num_graphs(), cuda_graphs ? 1u : 0u);
  }
}

TEST_F(Gpu, RefusesStepsBeyondItsLimitsAndBadBatches) {
  const StepBundles bundles = step_bundles();
  CudaExecutorOptions options;
  options.limits = {4, 2, kMaxBlocks};
  CudaExecutor executor(Bundle(bundles.gpu.string()), options);
  StepOutput out;
  EXPECT_THAT(error_of([&] { executor.execute(StepBatch{}, out); }),
              HasSubstr("launch() before allocate_kv_cache()"));
  executor.allocate_kv_cache(kNumBlocks);
  std::vector<int32_t> free_blocks = all_blocks();
  std::vector<Sequence> seqs(3, Sequence{{1, 2}, {}, 0, 0.0f});
  StepBatch batch = make_batch(seqs, free_blocks);
  EXPECT_THAT(error_of([&] { executor.execute(batch, out); }),
              HasSubstr("exceeds the CUDA executor's limits T <= 4, S <= 2"));
  seqs.resize(1);
  seqs[0].computed = 0;
  batch = make_batch(seqs, free_blocks);
  batch.slot_mapping[0] = kNumBlocks * test::kBlockSize; // the sink is not the engine's
  EXPECT_THAT(error_of([&] { executor.execute(batch, out); }), HasSubstr("slot_mapping[0]"));
}

} // namespace
} // namespace llmserve::cuda
