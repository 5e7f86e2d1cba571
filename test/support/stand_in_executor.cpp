#include "support/stand_in_executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmserve {
namespace {

constexpr int32_t kShared = -2; // block listed by more than one sequence

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

[[noreturn]] void violation(const std::string &what) {
  throw std::invalid_argument("step batch: " + what);
}

// Each step array's bytes.
std::vector<std::string_view> array_bytes(const StepBatch &b) {
  std::vector<std::string_view> bytes;
  for_each_step_array(b, [&](int, const char *, abi::Extent, const auto &array, auto) {
    bytes.emplace_back(reinterpret_cast<const char *>(array.data()),
                       array.size() * sizeof(array[0]));
  });
  return bytes;
}

bool same_batch(const StepBatch &a, const StepBatch &b) {
  auto deferred = [](const StepBatch &x) {
    std::vector<std::pair<int32_t, int32_t>> d;
    for (const DeferredToken &t : x.deferred_tokens)
      d.emplace_back(t.token_index, t.previous_row);
    return d;
  };
  return a.num_tokens == b.num_tokens && a.num_seqs == b.num_seqs &&
         a.max_blocks_per_seq == b.max_blocks_per_seq && deferred(a) == deferred(b) &&
         array_bytes(a) == array_bytes(b);
}

std::string at(const char *array, int64_t index, int64_t value) {
  return std::string(array) + "[" + std::to_string(index) +
         "] = " + std::to_string(value);
}

} // namespace

StandInExecutor::StandInExecutor(int32_t vocab_size, int32_t block_size,
                                 int64_t bytes_per_token)
    : vocab_size_(vocab_size), block_size_(block_size),
      bytes_per_token_(bytes_per_token) {
  if (vocab_size < 1 || block_size < 1 || bytes_per_token < 1)
    throw std::invalid_argument(
        "StandInExecutor: vocab_size, block_size and bytes_per_token must be "
        ">= 1, got " +
        std::to_string(vocab_size) + ", " + std::to_string(block_size) +
        ", " + std::to_string(bytes_per_token));
}

KvCacheSpec StandInExecutor::kv_cache_spec() const {
  return {block_size_, bytes_per_token_};
}

void StandInExecutor::allocate_kv_cache(int32_t num_blocks) {
  if (num_blocks < 1)
    throw std::invalid_argument("StandInExecutor: num_blocks = " +
                                std::to_string(num_blocks));
  kv_.assign(size_t(num_blocks) * block_size_, Slot{});
  block_seen_step_.assign(num_blocks, -1);
  block_seen_seq_.assign(num_blocks, -1);
}

uint64_t StandInExecutor::extend(uint64_t context, int32_t token) {
  return mix(context ^ (uint64_t(uint32_t(token)) * 0x9e3779b97f4a7c15ull));
}

uint64_t StandInExecutor::penalty_entry(int32_t token, int32_t count, float bias) {
  uint64_t h = mix((uint64_t(uint32_t(token)) << 32) | uint32_t(count));
  if (bias != 0.0f) {
    uint32_t bits;
    std::memcpy(&bits, &bias, sizeof bits);
    h = mix(h ^ bits);
  }
  return h;
}

int32_t StandInExecutor::sample(uint64_t context, float temperature, int64_t seed,
                                uint64_t penalties,
                                const std::function<bool(int32_t)> &allowed) const {
  uint64_t h = temperature == 0.0f ? mix(context)
                                   : mix(context ^ mix(uint64_t(seed)));
  if (penalties != 0)
    h = mix(h ^ penalties);
  const int32_t first = static_cast<int32_t>(h % uint64_t(vocab_size_));
  for (int32_t i = 0; i < vocab_size_; ++i) {
    const int32_t token = (first + i) % vocab_size_;
    if (!allowed || allowed(token))
      return token;
  }
  violation("every token is masked or banned");
}

void StandInExecutor::check_batch(const StepBatch &b) {
  const int32_t num_blocks = static_cast<int32_t>(block_seen_seq_.size());
  check_step_batch(b, {vocab_size_, std::numeric_limits<int32_t>::max(), block_size_,
                       num_blocks});
  const int32_t T = b.num_tokens, S = b.num_seqs, MB = b.max_blocks_per_seq;
  if (T < 1 || S < 1 || MB < 1 || S > T)
    violation("num_tokens = " + std::to_string(T) + ", num_seqs = " +
              std::to_string(S) + ", max_blocks_per_seq = " +
              std::to_string(MB) + ": need 1 <= S <= T and MB >= 1");
  for (int32_t s = 0; s < S; ++s) {
    std::vector<int32_t> row(b.penalty_tokens.begin() + b.penalty_start[s],
                             b.penalty_tokens.begin() + b.penalty_start[s + 1]);
    std::sort(row.begin(), row.end());
    if (std::adjacent_find(row.begin(), row.end()) != row.end())
      violation("sequence " + std::to_string(s) + " lists a logit entry's token twice");
  }

  // Pass 1: each sequence's block table row; note blocks listed twice.
  for (int32_t s = 0; s < S; ++s) {
    int32_t q_len = b.query_start[s + 1] - b.query_start[s];
    int32_t ctx = b.context_len[s];
    if (q_len < 1)
      violation(at("query_start", s + 1, b.query_start[s + 1]) +
                ": sequence " + std::to_string(s) + " has no token");
    if (ctx < q_len)
      violation(at("context_len", s, ctx) + " is less than the sequence's " +
                std::to_string(q_len) + " query tokens");
    // check_step_batch: the used blocks fit the row and are in the pool.
    int32_t used = (ctx + block_size_ - 1) / block_size_;
    for (int32_t j = 0; j < MB; ++j) {
      int32_t block = b.block_table[size_t(s) * MB + j];
      if (j >= used) {
        if (block != -1)
          violation(at("block_table", int64_t(s) * MB + j, block) +
                    ": entries past the context must be -1");
        continue;
      }
      if (block_seen_step_[block] != num_steps_) {
        block_seen_step_[block] = num_steps_;
        block_seen_seq_[block] = s;
      } else if (block_seen_seq_[block] == s) {
        violation("sequence " + std::to_string(s) + " lists block " +
                  std::to_string(block) + " twice");
      } else {
        block_seen_seq_[block] = kShared;
      }
    }
    if (b.logits_rows[s] != b.query_start[s + 1] - 1)
      violation(at("logits_rows", s, b.logits_rows[s]) +
                ": must be the sequence's last token, row " +
                std::to_string(b.query_start[s + 1] - 1));
    if (!(b.temperature[s] >= 0.0f) || !(b.top_p[s] > 0.0f) ||
        b.top_p[s] > 1.0f || b.top_k[s] < 0 || !(b.min_p[s] >= 0.0f) ||
        b.min_p[s] > 1.0f)
      violation("sampling parameters of sequence " + std::to_string(s) +
                " out of range");
  }
  // Pass 2: every new token's position and slot.
  for (int32_t s = 0; s < S; ++s) {
    int32_t begin = b.query_start[s], end = b.query_start[s + 1];
    int32_t first_position = b.context_len[s] - (end - begin);
    for (int32_t t = begin; t < end; ++t) {
      int32_t pos = first_position + (t - begin);
      if (b.positions[t] != pos)
        violation(at("positions", t, b.positions[t]) + ": sequence " +
                  std::to_string(s) + " expects " + std::to_string(pos));
      int32_t block = b.block_table[size_t(s) * MB + pos / block_size_];
      int32_t slot = block * block_size_ + pos % block_size_;
      if (b.slot_mapping[t] != slot)
        violation(at("slot_mapping", t, b.slot_mapping[t]) +
                  ": position " + std::to_string(pos) + " of sequence " +
                  std::to_string(s) + " belongs in slot " +
                  std::to_string(slot));
      if (block_seen_seq_[block] == kShared)
        violation(at("slot_mapping", t, slot) + ": writes block " +
                  std::to_string(block) +
                  ", which another sequence of the step also reads");
    }
  }
}

void StandInExecutor::launch(const StepBatch &b) {
  if (kv_.empty())
    throw std::logic_error("StandInExecutor: launch before allocate_kv_cache");
  if (launched_.size() == 2)
    throw std::logic_error("StandInExecutor: a third step launched");
  check_deferred_tokens(b, last_launched_num_seqs_);
  launched_.push_back({&b, b});
  last_launched_num_seqs_ = b.num_seqs;
}

void StandInExecutor::wait(StepOutput &out) {
  if (launched_.empty())
    throw std::logic_error("StandInExecutor: wait without a launched step");
  Launched step = std::move(launched_.front());
  launched_.pop_front();
  const auto start = std::chrono::steady_clock::now();
  out.idle_seconds_before.reset();
  if (previous_end_)
    out.idle_seconds_before = std::chrono::duration<double>(start - *previous_end_).count();
  try {
    if (!same_batch(*step.batch, step.copy))
      violation("the batch changed while its step was launched");
    StepBatch &b = step.copy;
    fill_deferred_tokens(b, previous_next_tokens_, b.token_ids);
    num_deferred_tokens_ += static_cast<int64_t>(b.deferred_tokens.size());
    run(b, out);
    previous_next_tokens_ = out.next_tokens;
  } catch (...) {
    previous_next_tokens_.assign(step.copy.num_seqs, 0);
    previous_end_ = std::chrono::steady_clock::now();
    throw;
  }
  previous_end_ = std::chrono::steady_clock::now();
}

void StandInExecutor::run(const StepBatch &b, StepOutput &out) {
  ++num_steps_; // stamps this step's marks in check_batch
  check_batch(b);
  const int32_t MB = b.max_blocks_per_seq;
  out.next_tokens.resize(b.num_seqs);
  for (int32_t s = 0; s < b.num_seqs; ++s) {
    const int32_t *row = b.block_table.data() + size_t(s) * MB;
    auto slot_of = [&](int32_t pos) {
      return row[pos / block_size_] * block_size_ + pos % block_size_;
    };
    // Write the new tokens' KV, then attend: read the whole context back.
    for (int32_t t = b.query_start[s]; t < b.query_start[s + 1]; ++t) {
      int32_t pos = b.positions[t];
      uint64_t before = pos == 0 ? kEmptyContext : kv_[slot_of(pos - 1)].context;
      kv_[b.slot_mapping[t]] = {pos, b.token_ids[t], extend(before, b.token_ids[t])};
    }
    uint64_t context = kEmptyContext;
    for (int32_t pos = 0; pos < b.context_len[s]; ++pos) {
      const Slot &slot = kv_[slot_of(pos)];
      if (slot.position != pos)
        violation("sequence " + std::to_string(s) + " reads position " +
                  std::to_string(pos) + " from block " +
                  std::to_string(row[pos / block_size_]) + ", which holds " +
                  (slot.position < 0 ? std::string("nothing")
                                     : "position " + std::to_string(slot.position)));
      context = extend(context, slot.token);
      if (slot.context != context)
        violation("sequence " + std::to_string(s) + " reads position " +
                  std::to_string(pos) + " from block " +
                  std::to_string(row[pos / block_size_]) +
                  ", whose KV was computed for another context");
    }
    uint64_t penalties = 0;
    std::vector<int32_t> banned;
    for (int32_t e = b.penalty_start[s]; e < b.penalty_start[s + 1]; ++e) {
      penalties += penalty_entry(b.penalty_tokens[e], b.penalty_counts[e], b.logit_bias[e]);
      if (b.logit_bias[e] == -INFINITY)
        banned.push_back(b.penalty_tokens[e]);
    }
    const int64_t mask_words = token_mask_words(vocab_size_);
    const int32_t *mask = b.mask_index[s] < 0
                              ? nullptr
                              : b.token_mask.data() + b.mask_index[s] * mask_words;
    out.next_tokens[s] =
        sample(context, b.temperature[s], b.seed[s], penalties, [&](int32_t token) {
          if (mask && !((uint32_t(mask[token / 32]) >> (token % 32)) & 1u))
            return false;
          return std::find(banned.begin(), banned.end(), token) == banned.end();
        });
  }

  out.token_logprobs.clear();
  out.top_logprob_tokens.clear();
  out.top_logprobs.clear();
  if (std::none_of(b.num_logprobs.begin(), b.num_logprobs.end(),
                   [](int32_t n) { return n >= 0; }))
    return;
  out.token_logprobs.assign(b.num_seqs, kSampledLogprob);
  out.top_logprob_tokens.resize(size_t(b.num_seqs) * abi::kMaxTopLogprobs);
  out.top_logprobs.resize(size_t(b.num_seqs) * abi::kMaxTopLogprobs);
  for (int32_t s = 0; s < b.num_seqs; ++s)
    for (int32_t k = 0; k < abi::kMaxTopLogprobs; ++k) {
      const size_t i = size_t(s) * abi::kMaxTopLogprobs + k;
      out.top_logprob_tokens[i] = (out.next_tokens[s] + k) % vocab_size_;
      out.top_logprobs[i] = -1.0f - float(k);
    }
}

} // namespace llmserve
