// Kernels of the CUDA test bundles, written against the CUDA kernel ABI of
// llmserve/abi.h the way llmc's NVIDIA backend emits them: one extern "C"
// kernel per manifest kernel, parameters one 64-bit pointer per binding then
// one int64 per push constant. The same math as ../cpu/test_kernels.c, so
// a GPU result can be compared with the CPU executor's.
//
// Compiled without CUDA headers to PTX ISA 8.0 (CUDA 12.0 drivers JIT it);
// test_kernels.ptx is its output, committed (LLVM 22):
//   clang++ -x cuda --cuda-device-only --cuda-gpu-arch=sm_90 -nocudainc \
//     -nocudalib -O2 -emit-llvm -S -o test_kernels.ll test_kernels.cu
//   llc -march=nvptx64 -mcpu=sm_90 -mattr=+ptx80 -O2 -o test_kernels.ptx test_kernels.ll
#define KERNEL extern "C" __attribute__((global)) void
#define DEVICE __attribute__((device))

typedef int int32_t;
typedef long long int64_t;

DEVICE static int64_t block_x() { return __nvvm_read_ptx_sreg_ctaid_x(); }
DEVICE static int64_t block_y() { return __nvvm_read_ptx_sreg_ctaid_y(); }
DEVICE static int64_t thread_x() { return __nvvm_read_ptx_sreg_tid_x(); }

// Block [4, 1, 1]: out[i] = a[i] + b[i]; push: n; grid: ceildiv(n, 4).
KERNEL test_add(const float *a, const float *b, float *out, int64_t n) {
  const int64_t i = block_x() * 4 + thread_x();
  if (i < n)
    out[i] = a[i] + b[i];
}

// out[t, h] = x[t, h] * w[h]; push: H; grid: one row per block.
KERNEL test_scale_rows(const float *x, const float *w, float *out, int64_t h) {
  for (int64_t i = 0; i < h; ++i)
    out[block_x() * h + i] = x[block_x() * h + i] * w[i];
}

// out[m, n] = sum_k x[m, k] * w[k, n]; push: K, N; grid: [M, N].
KERNEL test_matmul(const float *x, const float *w, float *out, int64_t k_size,
                   int64_t n_size) {
  float sum = 0;
  for (int64_t k = 0; k < k_size; ++k)
    sum += x[block_x() * k_size + k] * w[k * n_size + block_y()];
  out[block_x() * n_size + block_y()] = sum;
}

// Block [256, 1, 1], 64 KiB of dynamic shared memory (more than the default
// 48 KiB, so the runtime must raise the kernel's limit): out[i] = x[n-1-i]
// for n <= 16384 floats, through shared memory; push: n; grid: [1].
extern __attribute__((shared)) float staged[];
KERNEL test_reverse(const float *x, float *out, int64_t n) {
  for (int64_t i = thread_x(); i < 16384; i += 256)
    staged[i] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int64_t i = thread_x(); i < n; i += 256)
    out[i] = staged[n - 1 - i];
}

// The toy model of the `step` entry point, as in ../cpu/test_kernels.c: the
// next token of a sequence is argmax_v (sum of the embeddings of its whole
// context) . embedding[v].

// hidden[t] = table[token_ids[t]]; push: H; grid: [T].
KERNEL test_embed(const int32_t *token_ids, const float *table, float *hidden, int64_t h) {
  const int64_t t = block_x();
  for (int64_t i = 0; i < h; ++i)
    hidden[t * h + i] = table[token_ids[t] * h + i];
}

// k_cache[slot_mapping[t]] = hidden[t], v_cache[...] = -hidden[t]; push: H;
// grid: [T].
KERNEL test_kv_write(const float *hidden, const int32_t *slot_mapping, float *k_cache,
                     float *v_cache, int64_t h) {
  const int64_t t = block_x();
  for (int64_t i = 0; i < h; ++i) {
    k_cache[slot_mapping[t] * h + i] = hidden[t * h + i];
    v_cache[slot_mapping[t] * h + i] = -hidden[t * h + i];
  }
}

// context[s] = sum of the cached K of sequence s through its block table;
// push: H, MB, block_size; grid: [S].
KERNEL test_attend(const int32_t *context_len, const int32_t *block_table,
                   const float *k_cache, float *context, int64_t h, int64_t mb,
                   int64_t block_size) {
  const int64_t s = block_x();
  for (int64_t i = 0; i < h; ++i)
    context[s * h + i] = 0;
  for (int64_t j = 0; j < context_len[s]; ++j) {
    const int64_t slot = block_table[s * mb + j / block_size] * block_size + j % block_size;
    for (int64_t i = 0; i < h; ++i)
      context[s * h + i] += k_cache[slot * h + i];
  }
}

// logits[s, v] = context[s] . unembed[:, v]; push: H, V; grid: [S, V].
KERNEL test_logits(const float *context, const float *unembed, float *logits, int64_t h,
                   int64_t vocab) {
  float sum = 0;
  for (int64_t i = 0; i < h; ++i)
    sum += context[block_x() * h + i] * unembed[i * vocab + block_y()];
  logits[block_x() * vocab + block_y()] = sum;
}

// next_tokens[s]: the greedy argmax of logits[s], or with temperature > 0 a
// token derived from every sampling parameter; -1 if the step metadata of s
// is inconsistent. Rows asking for log-probs get token_logprobs[s] = -(s + 1)
// and top entries k: token (next + k) % V with log-prob -k. Bindings: logits,
// the step arguments in abi order, the results; push: V, MB, block_size;
// grid: [S].
KERNEL test_sample(const float *logits, const int32_t *token_ids, const int32_t *positions,
                   const int32_t *query_start, const int32_t *context_len,
                   const int32_t *block_table, const int32_t *slot_mapping,
                   const int32_t *logits_rows, const float *temperature, const float *top_p,
                   const int32_t *top_k, const float *min_p, const int64_t *seed,
                   const float *presence, const float *frequency, const float *repetition,
                   const int32_t *penalty_start, const int32_t *penalty_tokens,
                   const int32_t *penalty_counts, const float *logit_bias,
                   const int32_t *mask_index, const int32_t *token_mask,
                   const int32_t *num_logprobs,
                   int32_t *next_tokens, float *token_logprobs, int32_t *top_tokens,
                   float *top_logprobs, int64_t vocab, int64_t mb, int64_t block_size) {
  (void)token_ids;
  const int64_t s = block_x();
  const int64_t row = logits_rows[s];
  const int64_t pos = positions[row];
  const int64_t slot = block_table[s * mb + pos / block_size] * block_size + pos % block_size;
  if (row != query_start[s + 1] - 1 || pos != context_len[s] - 1 || slot_mapping[row] != slot) {
    next_tokens[s] = -1;
    return;
  }
  if (temperature[s] > 0) {
    int64_t history = 0;
    for (int32_t e = penalty_start[s]; e < penalty_start[s + 1]; ++e)
      history += penalty_tokens[e] * (penalty_counts[e] + 1) + (int64_t)(logit_bias[e] * 10);
    if (mask_index[s] >= 0)
      history += token_mask[mask_index[s] * ((vocab + 31) / 32)] & 0xffff;
    next_tokens[s] = (int32_t)((seed[s] + top_k[s] + (int64_t)(top_p[s] * 10) +
                                (int64_t)(min_p[s] * 100) + (int64_t)(presence[s] * 1000) +
                                (int64_t)(frequency[s] * 10000) +
                                (int64_t)(repetition[s] * 100000) + history) %
                               vocab);
  } else {
    int64_t best = 0;
    for (int64_t v = 1; v < vocab; ++v)
      if (logits[s * vocab + v] > logits[s * vocab + best])
        best = v;
    next_tokens[s] = (int32_t)best;
  }
  if (num_logprobs[s] < 0)
    return;
  token_logprobs[s] = -(float)(s + 1);
  for (int32_t k = 0; k < num_logprobs[s]; ++k) {
    top_tokens[s * 20 + k] = (int32_t)((next_tokens[s] + k) % vocab);
    top_logprobs[s * 20 + k] = -(float)k;
  }
}
