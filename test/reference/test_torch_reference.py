#!/usr/bin/python3
"""Cross-checks of torch_reference.py: each piece computed a second way that
shares no code with the first.

- the whole forward, one token at a time against the KV cache and in uneven
  chunks, against the full sequence at once;
- rotate-half RoPE against complex multiplication, and a whole Llama against
  a Meta-style implementation (complex RoPE on interleaved pairs) run on the
  weights un-permuted back to Meta's layout, as Hugging Face's conversion
  script permutes them;
- attention (GQA, sliding window) against explicit per-head loops;
- the llama3 frequency scaling against its three regimes;
- Phi-3's fused projections against the Llama family on the same weights
  split apart, its partial rotary against complex multiplication, LongRoPE's
  frequencies and attention factor against their closed forms, and its
  choice of factors per forward pass against passes of models fixed to one
  list;
- GPT-2 against torch.nn.TransformerEncoderLayer with the Conv1D weights
  transposed into it;
- a mixture-of-experts layer (token by token, expert by expert) against the
  dense mixture of every expert's MLP weighted by the routing weights, zero
  for the experts a token did not choose.

Run: /usr/bin/python3 -m unittest test/reference/test_torch_reference.py
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import layers  # noqa: E402
import make_fixtures  # noqa: E402
import torch_reference as ref  # noqa: E402
from models import phi3 as phi3_module  # noqa: E402
from checkpoints import gemma as gemma_checkpoint, gpt2 as gpt2_checkpoint, llama as llama_checkpoint  # noqa: E402
from checkpoints import phi3 as phi3_checkpoint  # noqa: E402
from models import GPT2, Gemma, Llama, Phi3  # noqa: E402
from safetensors_io import read_checkpoint, read_safetensors, write_safetensors  # noqa: E402

TOKENS = [1, 17, 250, 3, 99, 42, 42, 7, 180, 64, 5, 222, 13, 77]
LLAMA3_SCALING = {"factor": 4.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                  "original_max_position_embeddings": 64, "rope_type": "llama3"}
LONGROPE_SCALING = {"long_factor": [1.0, 1.5, 2.25, 3.375, 5.0625, 7.59375],
                    "short_factor": [1.0, 1.05, 1.1, 1.15, 1.2, 1.25], "type": "longrope"}


def llama(**overrides):
    config = llama_checkpoint.config(**overrides)
    return Llama(config, llama_checkpoint.weights(config, 7), torch.float64)


def gpt2():
    config = gpt2_checkpoint.config()
    return GPT2(config, gpt2_checkpoint.weights(config, 7), torch.float64)


def gemma3():
    config = gemma_checkpoint.config(num_hidden_layers=3, sliding_window=4, sliding_window_pattern=3,
                                     tie_word_embeddings=False)
    return Gemma(config, gemma_checkpoint.weights(config, 7), torch.float64)


def phi3(**overrides):
    config = phi3_checkpoint.config(**{"partial_rotary_factor": 0.75, "tie_word_embeddings": True,
                                       **overrides})
    return Phi3(config, phi3_checkpoint.weights(config, 7), torch.float64)


def models():
    return {
        "llama": llama(),
        "llama_tied": llama(tie_word_embeddings=True),
        "llama3": llama(rope_theta=500000.0, rope_scaling=LLAMA3_SCALING),
        "qwen2": llama(model_type="qwen2", tie_word_embeddings=True),
        "qwen3": llama(model_type="qwen3", tie_word_embeddings=True),
        "qwen3_window": llama(model_type="qwen3", use_sliding_window=True, sliding_window=4,
                              max_window_layers=1),
        "mistral": llama(model_type="mistral", sliding_window=4),
        "mixtral": llama(model_type="mixtral", sliding_window=4),
        "qwen3_moe": llama(model_type="qwen3_moe", num_hidden_layers=3, mlp_only_layers=[1]),
        "gpt2": gpt2(),
        "gemma3": gemma3(),
        "phi3": phi3(sliding_window=4),
        # An original context no pass here exceeds: chunks equal one pass.
        "phi3_longrope": phi3(max_position_embeddings=64, original_max_position_embeddings=32,
                              rope_scaling=LONGROPE_SCALING),
    }


class IncrementalDecoding(unittest.TestCase):
    def test_token_by_token_and_chunks_match_the_full_sequence(self):
        for name, model in models().items():
            with self.subTest(model=name):
                full = ref.logits(model, TOKENS)
                cache = layers.KVCache(model.layers)
                one_by_one = torch.cat([model.forward([t], cache) for t in TOKENS])
                cache = layers.KVCache(model.layers)
                chunks = torch.cat([model.forward(TOKENS[a:b], cache)
                                    for a, b in ((0, 5), (5, 6), (6, 13), (13, 14))])
                torch.testing.assert_close(one_by_one, full, rtol=0, atol=1e-10)
                torch.testing.assert_close(chunks, full, rtol=0, atol=1e-10)

    def test_greedy_follows_the_argmax_of_full_recomputation(self):
        for name, model in models().items():
            with self.subTest(model=name):
                generated, margins = ref.greedy(model, TOKENS[:6], 5)
                sequence = TOKENS[:6]
                for token, margin in zip(generated, margins):
                    last = ref.logits(model, sequence)[-1]
                    self.assertEqual(token, int(last.argmax()))
                    top = last.topk(2).values
                    self.assertAlmostEqual(margin, float(top[0] - top[1]), places=9)
                    sequence = sequence + [token]

    def test_sliding_window_changes_only_late_positions(self):
        windowed = llama(model_type="mistral", sliding_window=4)
        full = Llama(dict(windowed.config, sliding_window=None), windowed.w, torch.float64)
        a, b = ref.logits(windowed, TOKENS), ref.logits(full, TOKENS)
        # Positions 0..3 see at most 4 keys, so the window does not bind yet.
        torch.testing.assert_close(a[:4], b[:4], rtol=0, atol=1e-12)
        self.assertGreater(float((a[4:] - b[4:]).abs().max()), 1e-3)


class Rope(unittest.TestCase):
    def test_rotate_half_is_complex_multiplication_of_half_pairs(self):
        torch.manual_seed(0)
        x = torch.randn(3, 9, 16, dtype=torch.float64)
        positions = torch.arange(5, 14)
        inv_freq = layers.rope_inv_freq(16, 10000.0, None)
        half = x.shape[-1] // 2
        z = torch.complex(x[..., :half], x[..., half:])
        rotation = torch.polar(torch.ones(9, half, dtype=torch.float64),
                               positions.view(-1, 1).double() * inv_freq.view(1, -1))
        rotated = z * rotation
        expected = torch.cat([rotated.real, rotated.imag], dim=-1)
        torch.testing.assert_close(layers.rotate_half_rope(x, positions, inv_freq), expected)

    def test_default_frequencies(self):
        inv_freq = layers.rope_inv_freq(8, 10000.0, None)
        expected = [1.0, 10000.0 ** -0.25, 10000.0 ** -0.5, 10000.0 ** -0.75]
        torch.testing.assert_close(inv_freq, torch.tensor(expected, dtype=torch.float64))

    def test_llama3_scaling_regimes(self):
        # theta 500000, head_dim 16: wavelengths 6.3, 32.5, 167, ... against
        # original/high = 16 and original/low = 64.
        plain = layers.rope_inv_freq(16, 500000.0, None)
        scaled = layers.rope_inv_freq(16, 500000.0, LLAMA3_SCALING)
        wavelen = 2 * math.pi / plain
        self.assertLess(wavelen[0], 16)
        self.assertEqual(scaled[0], plain[0])  # high frequency: kept
        self.assertTrue(16 <= wavelen[1] <= 64)
        smooth = (64 / wavelen[1] - 1.0) / (4.0 - 1.0)
        expected = (1 - smooth) * plain[1] / 4.0 + smooth * plain[1]
        self.assertAlmostEqual(float(scaled[1]), float(expected), places=15)
        self.assertTrue(plain[1] / 4 < scaled[1] < plain[1])
        torch.testing.assert_close(scaled[2:], plain[2:] / 4.0)  # low frequency: slowed
        with self.assertRaisesRegex(ValueError, "rope_scaling type 'yarn'"):
            layers.rope_inv_freq(16, 10000.0, {"rope_type": "yarn", "factor": 2.0})


class Phi3Rope(unittest.TestCase):
    def test_longrope_frequencies_and_attention_factor(self):
        # Phi-3-mini-128k's and Phi-4-mini's shapes: 48 rotated pairs, a
        # 131072-token context extending 4096 by s = 32, whose attention
        # factor sqrt(1 + ln 32 / ln 4096) is sqrt(1 + 5/12).
        factors = {"short_factor": [1 + i / 100 for i in range(48)],
                   "long_factor": [1 + i for i in range(48)], "type": "longrope"}
        for hidden, heads, partial in ((3072, 32, 1.0), (3072, 24, 0.75)):
            config = {"hidden_size": hidden, "num_attention_heads": heads, "max_position_embeddings": 131072,
                      "original_max_position_embeddings": 4096, "partial_rotary_factor": partial,
                      "rope_theta": 10000.0, "rope_scaling": factors}
            rotary = int(hidden // heads * partial)
            self.assertEqual(rotary, 96)
            short, long, attention = phi3_module.longrope(config, rotary)
            self.assertAlmostEqual(attention, math.sqrt(17 / 12), places=15)
            for inv_freq, name in ((short, "short_factor"), (long, "long_factor")):
                # A pair's wavelength is its factor times the unscaled one.
                for i, factor in enumerate(factors[name]):
                    wavelength = 2 * math.pi * factor * 10000.0 ** (2 * i / rotary)
                    self.assertAlmostEqual(2 * math.pi / float(inv_freq[i]) / wavelength, 1.0, places=12)
        unextended = dict(config, max_position_embeddings=4096)
        self.assertEqual(phi3_module.longrope(unextended, 96)[2], 1.0)
        given = dict(config, rope_scaling=dict(factors, attention_factor=1.5))
        self.assertEqual(phi3_module.longrope(given, 96)[2], 1.5)
        with self.assertRaisesRegex(ValueError, "rope_scaling type 'linear'"):
            phi3_module.longrope(dict(config, rope_scaling={"type": "linear", "factor": 2.0}), 96)

    def test_partial_rotary_is_scaled_complex_multiplication_of_the_first_dimensions(self):
        model = phi3(max_position_embeddings=64, original_max_position_embeddings=16,
                     rope_scaling=LONGROPE_SCALING)
        self.assertEqual(model.rotary_dim, 12)
        torch.manual_seed(2)
        x = torch.randn(2, 5, 16, dtype=torch.float64)
        positions = torch.arange(3, 8)
        y = model.rope(x, positions, model.long_inv_freq)
        torch.testing.assert_close(y[..., 12:], x[..., 12:], rtol=0, atol=0)
        z = torch.complex(x[..., :6], x[..., 6:12])
        rotation = torch.polar(torch.full((5, 6), model.attention_factor, dtype=torch.float64),
                               positions.view(-1, 1).double() * model.long_inv_freq.view(1, -1))
        rotated = z * rotation
        torch.testing.assert_close(y[..., :12], torch.cat([rotated.real, rotated.imag], dim=-1))

    def test_longrope_factors_follow_the_length_after_each_pass(self):
        scaling = dict(LONGROPE_SCALING)
        model = phi3(max_position_embeddings=64, original_max_position_embeddings=8, rope_scaling=scaling)
        # The same weights with one factor list in both places.
        only = {kind: Phi3(dict(model.config, rope_scaling=dict(scaling, short_factor=scaling[kind],
                                                                long_factor=scaling[kind])),
                           model.w, torch.float64)
                for kind in ("short_factor", "long_factor")}
        # 14 tokens in one pass outgrow the original 8: long factors throughout.
        torch.testing.assert_close(ref.logits(model, TOKENS), ref.logits(only["long_factor"], TOKENS))
        # 8 do not.
        torch.testing.assert_close(ref.logits(model, TOKENS[:8]), ref.logits(only["short_factor"], TOKENS[:8]))
        # 5 tokens, then 9 more: the first pass's keys keep the short factors.
        cache = layers.KVCache(model.layers)
        first = model.forward(TOKENS[:5], cache)
        second = model.forward(TOKENS[5:], cache)
        expected_cache = layers.KVCache(model.layers)
        expected_first = only["short_factor"].forward(TOKENS[:5], expected_cache)
        expected_second = only["long_factor"].forward(TOKENS[5:], expected_cache)
        torch.testing.assert_close(first, expected_first)
        torch.testing.assert_close(second, expected_second)
        self.assertGreater(float((second - ref.logits(model, TOKENS)[5:]).abs().max()), 1e-3)


class Attention(unittest.TestCase):
    def test_matches_per_head_loops(self):
        torch.manual_seed(1)
        heads, kv_heads, length, dim = 6, 2, 7, 5
        q = torch.randn(heads, 3, dim, dtype=torch.float64)  # the last 3 positions
        k = torch.randn(kv_heads, length, dim, dtype=torch.float64)
        v = torch.randn(kv_heads, length, dim, dtype=torch.float64)
        positions = torch.arange(length - 3, length)
        for window in (None, 2, 3):
            out = layers.attention(q, k, v, positions, window)
            for h in range(heads):
                kv = h // (heads // kv_heads)
                for t, i in enumerate(positions.tolist()):
                    keys = [j for j in range(length) if j <= i and (window is None or j > i - window)]
                    scores = torch.tensor([float(q[h, t] @ k[kv, j]) / math.sqrt(dim) for j in keys])
                    weights = torch.softmax(scores.double(), dim=0)
                    expected = sum(w * v[kv, j] for w, j in zip(weights, keys))
                    torch.testing.assert_close(out[h, t], expected)


def meta_llama_logits(model, tokens):
    """Llama as Meta's reference code computes it: q and k weights in the
    interleaved layout (pairs 2i, 2i+1), rotated as complex numbers."""
    c, w = model.config, model.w
    heads, kv_heads, dim = model.heads, model.kv_heads, model.head_dim

    def to_meta(weight, n):
        # Inverse of the permutation in transformers' convert_llama_weights_to_hf.py.
        return weight.view(n, 2, dim // 2, -1).transpose(1, 2).reshape(weight.shape)

    def norm(x, weight):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + c["rms_norm_eps"]) * weight

    n = len(tokens)
    freqs = torch.polar(torch.ones(n, dim // 2, dtype=torch.float64),
                        torch.outer(torch.arange(n, dtype=torch.float64), model.inv_freq))

    def rotate(x):  # x [n, heads, dim]
        z = torch.view_as_complex(x.reshape(n, x.shape[1], dim // 2, 2).contiguous())
        return torch.view_as_real(z * freqs.view(n, 1, -1)).reshape(x.shape)

    mask = torch.full((n, n), float("-inf"), dtype=torch.float64).triu(1)
    h = w["model.embed_tokens.weight"][torch.tensor(tokens)]
    for layer in range(model.layers):
        p = f"model.layers.{layer}."
        x = norm(h, w[p + "input_layernorm.weight"])
        q = rotate((x @ to_meta(w[p + "self_attn.q_proj.weight"], heads).T).view(n, heads, dim))
        k = rotate((x @ to_meta(w[p + "self_attn.k_proj.weight"], kv_heads).T).view(n, kv_heads, dim))
        v = (x @ w[p + "self_attn.v_proj.weight"].T).view(n, kv_heads, dim)
        out = []
        for head in range(heads):
            kv = head * kv_heads // heads
            scores = q[:, head] @ k[:, kv].T / math.sqrt(dim) + mask
            out.append(torch.softmax(scores, dim=-1) @ v[:, kv])
        h = h + torch.cat(out, dim=-1) @ w[p + "self_attn.o_proj.weight"].T
        x = norm(h, w[p + "post_attention_layernorm.weight"])
        gate, up = x @ w[p + "mlp.gate_proj.weight"].T, x @ w[p + "mlp.up_proj.weight"].T
        h = h + (gate * torch.sigmoid(gate) * up) @ w[p + "mlp.down_proj.weight"].T
    return norm(h, w["model.norm.weight"]) @ w["lm_head.weight"].T


class SecondImplementations(unittest.TestCase):
    def test_llama_matches_meta_style_forward(self):
        for model in (llama(), llama(rope_theta=500000.0, rope_scaling=LLAMA3_SCALING)):
            torch.testing.assert_close(ref.logits(model, TOKENS), meta_llama_logits(model, TOKENS))

    def test_gpt2_matches_torch_transformer_layers(self):
        model = gpt2()
        c, w = model.config, model.w
        n = c["n_embd"]
        torch.manual_seed(0)
        layers = []
        for layer in range(c["n_layer"]):
            p = f"h.{layer}."
            block = torch.nn.TransformerEncoderLayer(
                n, c["n_head"], dim_feedforward=4 * n, dropout=0.0,
                activation=lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
                layer_norm_eps=c["layer_norm_epsilon"], batch_first=True, norm_first=True).double().eval()
            with torch.no_grad():
                block.self_attn.in_proj_weight.copy_(w[p + "attn.c_attn.weight"].T)
                block.self_attn.in_proj_bias.copy_(w[p + "attn.c_attn.bias"])
                block.self_attn.out_proj.weight.copy_(w[p + "attn.c_proj.weight"].T)
                block.self_attn.out_proj.bias.copy_(w[p + "attn.c_proj.bias"])
                block.linear1.weight.copy_(w[p + "mlp.c_fc.weight"].T)
                block.linear1.bias.copy_(w[p + "mlp.c_fc.bias"])
                block.linear2.weight.copy_(w[p + "mlp.c_proj.weight"].T)
                block.linear2.bias.copy_(w[p + "mlp.c_proj.bias"])
                for ours, theirs in (("ln_1", block.norm1), ("ln_2", block.norm2)):
                    theirs.weight.copy_(w[p + ours + ".weight"])
                    theirs.bias.copy_(w[p + ours + ".bias"])
            layers.append(block)
        n_tokens = len(TOKENS)
        causal = torch.full((n_tokens, n_tokens), float("-inf"), dtype=torch.float64).triu(1)
        with torch.no_grad():
            x = (w["wte.weight"][torch.tensor(TOKENS)] + w["wpe.weight"][:n_tokens]).unsqueeze(0)
            for block in layers:
                x = block(x, src_mask=causal)
            x = torch.nn.functional.layer_norm(x[0], (n,), w["ln_f.weight"], w["ln_f.bias"],
                                               c["layer_norm_epsilon"])
            expected = x @ w["wte.weight"].T
        torch.testing.assert_close(ref.logits(model, TOKENS), expected)

    def test_phi3_matches_the_llama_family_on_split_weights(self):
        # Full rotary without scaling: Phi-3 is Mistral with q, k, v and gate,
        # up fused, so the same weights split apart give the same logits.
        for window in (None, 4):
            model = phi3(partial_rotary_factor=1.0, sliding_window=window)
            c = model.config
            q_width = c["num_attention_heads"] * model.head_dim
            kv_width = c["num_key_value_heads"] * model.head_dim
            split = {}
            for name, tensor in model.w.items():
                if name.endswith("qkv_proj.weight"):
                    q, k, v = tensor.split([q_width, kv_width, kv_width])
                    for part, weight in (("q_proj", q), ("k_proj", k), ("v_proj", v)):
                        split[name.replace("qkv_proj", part)] = weight
                elif name.endswith("gate_up_proj.weight"):
                    gate, up = tensor.chunk(2)
                    split[name.replace("gate_up_proj", "gate_proj")] = gate
                    split[name.replace("gate_up_proj", "up_proj")] = up
                else:
                    split[name] = tensor
            mistral = llama_checkpoint.config("mistral", sliding_window=window, tie_word_embeddings=True)
            llama_model = Llama(mistral, split, torch.float64)
            torch.testing.assert_close(ref.logits(model, TOKENS), ref.logits(llama_model, TOKENS))

    def test_gelu_new_is_torch_tanh_gelu(self):
        x = torch.linspace(-6, 6, 101, dtype=torch.float64)
        torch.testing.assert_close(layers.gelu_tanh(x), torch.nn.functional.gelu(x, approximate="tanh"))


class MixtureOfExperts(unittest.TestCase):
    def dense_mixture(self, model, x, prefix, names):
        """Every expert's MLP on every token, weighted by a [T, experts]
        matrix of the routing weights (zero where not chosen)."""
        router, gate, up, down = names
        scores = torch.softmax(x @ model.w[prefix + router + ".weight"].T, dim=-1)
        threshold = scores.sort(dim=-1, descending=True).values[:, model.top_k - 1:model.top_k]
        weights = torch.where(scores >= threshold, scores, torch.zeros_like(scores))
        if model.normalize_top_k:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        outputs = torch.stack([model.mlp(x, prefix, gate.format(e), up.format(e), down.format(e))
                               for e in range(scores.shape[1])], dim=1)
        return (weights[:, :, None] * outputs).sum(dim=1)

    def test_sparse_layer_equals_the_dense_mixture(self):
        torch.manual_seed(0)
        for model_type, layer in (("mixtral", 0), ("qwen3_moe", 2)):
            with self.subTest(model=model_type):
                model = llama(model_type=model_type, num_hidden_layers=3, mlp_only_layers=[1])
                x = torch.randn(6, model.config["hidden_size"], dtype=torch.float64)
                prefix, names = f"model.layers.{layer}.", model.sparse[layer]
                torch.testing.assert_close(model.experts_mlp(x, prefix, names),
                                           self.dense_mixture(model, x, prefix, names),
                                           rtol=0, atol=1e-12)

    def test_qwen3_moe_layers_follow_the_sparse_step_and_mlp_only_layers(self):
        model = llama(model_type="qwen3_moe", num_hidden_layers=4, decoder_sparse_step=2,
                      mlp_only_layers=[3])
        self.assertEqual([names is not None for names in model.sparse], [False, True, False, False])


class Loading(unittest.TestCase):
    def test_safetensors_round_trip_and_checkpoint_layouts(self):
        tensors = {"b": torch.arange(6, dtype=torch.float32).view(2, 3).to(torch.bfloat16),
                   "a": torch.tensor([1.5, -2.0], dtype=torch.float16),
                   "i": torch.tensor([1, -(2 ** 40)], dtype=torch.int64)}
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "model.safetensors")
            write_safetensors(path, tensors)
            back = read_safetensors(path)
            self.assertEqual(set(back), set(tensors))
            for name, tensor in tensors.items():
                self.assertEqual(back[name].dtype, tensor.dtype)
                self.assertTrue(torch.equal(back[name], tensor))
            self.assertTrue(torch.equal(read_checkpoint(directory)["i"], tensors["i"]))

    def test_gpt2_reads_both_name_layouts(self):
        config = gpt2_checkpoint.config()
        prefixed = gpt2_checkpoint.weights(config, 3)
        hub = gpt2_checkpoint.weights(config, 3, prefix="", mask_buffers=True)
        a = ref.logits(GPT2(config, prefixed, torch.float64), TOKENS)
        b = ref.logits(GPT2(config, hub, torch.float64), TOKENS)
        torch.testing.assert_close(a, b, rtol=0, atol=0)

    def test_command_line(self):
        config = llama_checkpoint.config()
        weights = llama_checkpoint.weights(config, 5)
        script = os.path.join(HERE, "torch_reference.py")
        with tempfile.TemporaryDirectory() as directory:
            make_fixtures.write_weights(directory, weights, shards=2)
            make_fixtures.write_json(os.path.join(directory, "config.json"), config)
            out = subprocess.run([sys.executable, script, directory, "--tokens", "1,2,3", "--greedy", "2",
                                  "--json"], check=True, capture_output=True, text=True).stdout
            result = json.loads(out)
            model = Llama(config, weights, torch.float64)
            torch.testing.assert_close(torch.tensor(result["logits"], dtype=torch.float64),
                                       ref.logits(model, [1, 2, 3]))
            self.assertEqual(result["greedy"], ref.greedy(model, [1, 2, 3], 2)[0])
            bad = subprocess.run([sys.executable, script, directory, "--tokens", "1,300"],
                                 capture_output=True, text=True)
            self.assertEqual(bad.returncode, 2)
            self.assertIn("below the vocabulary size 300", bad.stderr)

    def test_sliding_windows_by_layer(self):
        def windows(model_type, **overrides):
            config = llama_checkpoint.config(model_type, **overrides)
            return Llama(config, llama_checkpoint.weights(config, 0), torch.float64).windows

        self.assertEqual(windows("mistral", sliding_window=8), [8, 8])
        self.assertEqual(windows("qwen2", sliding_window=8), [None, None])
        self.assertEqual(windows("qwen2", sliding_window=8, use_sliding_window=True,
                                 max_window_layers=1), [None, 8])
        self.assertEqual(windows("qwen3", sliding_window=8, use_sliding_window=True,
                                 layer_types=["sliding_attention", "full_attention"]), [8, None])

    def test_unsupported_configs_are_refused(self):
        config = llama_checkpoint.config()
        weights = llama_checkpoint.weights(config, 0)
        with self.assertRaisesRegex(ValueError, "hidden_act 'gelu'"):
            Llama(dict(config, hidden_act="gelu"), weights, torch.float64)
        g = gpt2_checkpoint.config()
        with self.assertRaisesRegex(ValueError, "activation_function 'relu'"):
            GPT2(dict(g, activation_function="relu"), gpt2_checkpoint.weights(g, 0), torch.float64)
        p = phi3_checkpoint.config()
        with self.assertRaisesRegex(ValueError, "hidden_act 'gelu'"):
            Phi3(dict(p, hidden_act="gelu"), phi3_checkpoint.weights(p, 0), torch.float64)


if __name__ == "__main__":
    torch.set_num_threads(1)
    unittest.main()
