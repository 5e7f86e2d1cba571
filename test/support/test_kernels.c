// Kernels of the test bundles, written by hand against the kernel ABI of
// llmserve/abi.h the way llmc's CPU backend emits them: one exported C
// function per kernel, called once per workgroup.
#include <stdint.h>

#define KERNEL(name)                                                           \
  void name(void *const *bindings, const int64_t *push_constants,              \
            int64_t wg_x, int64_t wg_y, int64_t wg_z)
#define UNUSED(x) (void)(x)

enum { kAddTile = 4 };

// out[i] = a[i] + b[i]; push: n; grid: ceildiv(n, 4) tiles of 4.
KERNEL(test_add) {
  UNUSED(wg_y);
  UNUSED(wg_z);
  const float *a = bindings[0], *b = bindings[1];
  float *out = bindings[2];
  const int64_t n = push_constants[0];
  for (int64_t i = wg_x * kAddTile; i < (wg_x + 1) * kAddTile && i < n; ++i)
    out[i] = a[i] + b[i];
}

// out[t, h] = x[t, h] * w[h]; push: H; grid: one row per workgroup.
KERNEL(test_scale_rows) {
  UNUSED(wg_y);
  UNUSED(wg_z);
  const float *x = bindings[0], *w = bindings[1];
  float *out = bindings[2];
  const int64_t h = push_constants[0];
  for (int64_t i = 0; i < h; ++i)
    out[wg_x * h + i] = x[wg_x * h + i] * w[i];
}

// out[m, n] = sum_k x[m, k] * w[k, n]; push: K, N; grid: [M, N], one element
// per workgroup.
KERNEL(test_matmul) {
  UNUSED(wg_z);
  const float *x = bindings[0], *w = bindings[1];
  float *out = bindings[2];
  const int64_t k_size = push_constants[0], n_size = push_constants[1];
  float sum = 0;
  for (int64_t k = 0; k < k_size; ++k)
    sum += x[wg_x * k_size + k] * w[k * n_size + wg_y];
  out[wg_x * n_size + wg_y] = sum;
}

// The toy model of the "step" entry point: the next token of a sequence is
// argmax_v (sum of the embeddings of its whole context) . embedding[v].

// hidden[t] = table[token_ids[t]]; push: H; grid: [T].
KERNEL(test_embed) {
  UNUSED(wg_y);
  UNUSED(wg_z);
  const int32_t *token_ids = bindings[0];
  const float *table = bindings[1];
  float *hidden = bindings[2];
  const int64_t h = push_constants[0];
  for (int64_t i = 0; i < h; ++i)
    hidden[wg_x * h + i] = table[token_ids[wg_x] * h + i];
}

// k_cache[slot_mapping[t]] = hidden[t], v_cache[...] = -hidden[t]; push: H;
// grid: [T].
KERNEL(test_kv_write) {
  UNUSED(wg_y);
  UNUSED(wg_z);
  const float *hidden = bindings[0];
  const int32_t *slot_mapping = bindings[1];
  float *k_cache = bindings[2], *v_cache = bindings[3];
  const int64_t h = push_constants[0];
  for (int64_t i = 0; i < h; ++i) {
    k_cache[slot_mapping[wg_x] * h + i] = hidden[wg_x * h + i];
    v_cache[slot_mapping[wg_x] * h + i] = -hidden[wg_x * h + i];
  }
}

// context[s] = sum of the cached K of sequence s through its block table;
// push: H, MB, block_size; grid: [S].
KERNEL(test_attend) {
  UNUSED(wg_y);
  UNUSED(wg_z);
  const int32_t *context_len = bindings[0], *block_table = bindings[1];
  const float *k_cache = bindings[2];
  float *context = bindings[3];
  const int64_t h = push_constants[0], mb = push_constants[1],
                block_size = push_constants[2];
  const int64_t s = wg_x;
  for (int64_t i = 0; i < h; ++i)
    context[s * h + i] = 0;
  for (int64_t j = 0; j < context_len[s]; ++j) {
    const int64_t slot = block_table[s * mb + j / block_size] * block_size + j % block_size;
    for (int64_t i = 0; i < h; ++i)
      context[s * h + i] += k_cache[slot * h + i];
  }
}

// logits[s, v] = context[s] . unembed[:, v]; push: H, V; grid: [S, V].
KERNEL(test_logits) {
  UNUSED(wg_z);
  const float *context = bindings[0], *unembed = bindings[1];
  float *logits = bindings[2];
  const int64_t h = push_constants[0], vocab = push_constants[1];
  float sum = 0;
  for (int64_t i = 0; i < h; ++i)
    sum += context[wg_x * h + i] * unembed[i * vocab + wg_y];
  logits[wg_x * vocab + wg_y] = sum;
}

// next_tokens[s]: the greedy argmax of logits[s], or with temperature > 0 a
// token derived from every sampling parameter, logit entry and the first
// word of the sequence's mask row, so a test sees each one arrive in its
// place; -1 if the step metadata of s is inconsistent. Rows
// asking for log-probs get token_logprobs[s] = -(s + 1) and top entries
// k = 0, 1, ...: token (next + k) % V with log-prob -k.
// Bindings: logits, then the step arguments in abi order, then the results.
// push: V, MB, block_size; grid: [S].
KERNEL(test_sample) {
  UNUSED(wg_y);
  UNUSED(wg_z);
  const float *logits = bindings[0];
  const int32_t *positions = bindings[2], *query_start = bindings[3],
                *context_len = bindings[4], *block_table = bindings[5],
                *slot_mapping = bindings[6], *logits_rows = bindings[7];
  const float *temperature = bindings[8], *top_p = bindings[9];
  const int32_t *top_k = bindings[10];
  const float *min_p = bindings[11];
  const int64_t *seed = bindings[12];
  const float *presence = bindings[13], *frequency = bindings[14],
              *repetition = bindings[15];
  const int32_t *penalty_start = bindings[16], *penalty_tokens = bindings[17],
                *penalty_counts = bindings[18];
  const float *logit_bias = bindings[19];
  const int32_t *mask_index = bindings[20], *token_mask = bindings[21],
                *num_logprobs = bindings[22];
  int32_t *next_tokens = bindings[23];
  float *token_logprobs = bindings[24];
  int32_t *top_tokens = bindings[25];
  float *top_logprobs = bindings[26];
  const int64_t vocab = push_constants[0], mb = push_constants[1],
                block_size = push_constants[2];
  const int64_t s = wg_x;

  const int64_t row = logits_rows[s];
  const int64_t pos = positions[row];
  const int64_t slot = block_table[s * mb + pos / block_size] * block_size + pos % block_size;
  if (row != query_start[s + 1] - 1 || pos != context_len[s] - 1 ||
      slot_mapping[row] != slot) {
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
