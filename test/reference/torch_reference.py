#!/usr/bin/python3
"""An independent torch implementation of the models llmserve serves, written
from the architectures' definitions (not from llmserve's code) to produce
reference logits and greedy continuations.

Llama family (model_type llama, mistral, qwen2): RMSNorm, rotate-half RoPE
with rope_theta and the llama3 frequency scaling, grouped-query attention,
SwiGLU MLP, q/k/v biases (qwen2, or llama's attention_bias), tied embeddings,
mistral's sliding window. GPT-2: LayerNorm, learned positions, gelu_new, the
Conv1D weights stored [in, out].

Usage: torch_reference.py <checkpoint-dir> --tokens 1,2,3 [--greedy 8] [--json]
"""

import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read_checkpoint  # noqa: E402

LLAMA_FAMILY = ("llama", "mistral", "qwen2")


def load_config(directory):
    with open(os.path.join(directory, "config.json")) as f:
        return json.load(f)


class KVCache:
    """Keys and values of every position seen so far, per layer: [kv_heads, L, head_dim]."""

    def __init__(self, num_layers):
        self.keys = [None] * num_layers
        self.values = [None] * num_layers
        self.length = 0

    def append(self, layer, k, v):
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=1)
            v = torch.cat([self.values[layer], v], dim=1)
        self.keys[layer], self.values[layer] = k, v
        return k, v


def attention(q, k, v, query_positions, window=None):
    """Causal attention of q [H, T, D] over k, v [KVH, L, D], where key j sits
    at position j. Query head h reads KV head h // (H / KVH). With a sliding
    `window`, a query at position i sees keys i - window < j <= i."""
    heads, kv_heads = q.shape[0], k.shape[0]
    group = heads // kv_heads
    k = k.repeat_interleave(group, dim=0)
    v = v.repeat_interleave(group, dim=0)
    scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
    i = query_positions.view(-1, 1)
    j = torch.arange(k.shape[1]).view(1, -1)
    visible = j <= i
    if window is not None:
        visible &= j > i - window
    scores = scores.masked_fill(~visible, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def split_heads(x, heads):
    """[T, heads * D] -> [heads, T, D]."""
    return x.view(x.shape[0], heads, -1).transpose(0, 1)


def merge_heads(x):
    """[heads, T, D] -> [T, heads * D]."""
    return x.transpose(0, 1).reshape(x.shape[1], -1)


def rope_inv_freq(head_dim, theta, scaling):
    """Per-pair rotation frequencies, with the llama3 rescaling if asked."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    if scaling is None:
        return inv_freq
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind != "llama3":
        raise ValueError(f"rope_scaling type {kind!r} is not supported")
    factor = scaling["factor"]
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    original = scaling["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    # Long wavelengths are slowed by `factor`, short ones kept, and the band
    # between original/low and original/high interpolated between the two.
    smooth = (original / wavelen - low) / (high - low)
    interpolated = (1 - smooth) * inv_freq / factor + smooth * inv_freq
    scaled = torch.where(wavelen > original / low, inv_freq / factor, inv_freq)
    medium = (wavelen >= original / high) & (wavelen <= original / low)
    return torch.where(medium, interpolated, scaled)


def rotate_half_rope(x, positions, inv_freq):
    """x [heads, T, D]; dimension i pairs with i + D/2 (Hugging Face layout)."""
    angles = positions.view(-1, 1).to(inv_freq.dtype) * inv_freq.view(1, -1)
    cos = torch.cat([angles.cos(), angles.cos()], dim=-1).to(x.dtype)
    sin = torch.cat([angles.sin(), angles.sin()], dim=-1).to(x.dtype)
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def gelu_tanh(x):
    """gelu_new: GELU with the tanh approximation."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


class Llama:
    def __init__(self, config, weights, dtype):
        self.config = config
        self.heads = config["num_attention_heads"]
        self.kv_heads = config.get("num_key_value_heads") or self.heads
        self.head_dim = config.get("head_dim") or config["hidden_size"] // self.heads
        self.layers = config["num_hidden_layers"]
        self.eps = config["rms_norm_eps"]
        if config.get("hidden_act", "silu") != "silu":
            raise ValueError(f"hidden_act {config['hidden_act']!r} is not supported")
        if config["model_type"] == "qwen2" and config.get("use_sliding_window"):
            raise ValueError("qwen2 use_sliding_window is not supported")
        self.window = config.get("sliding_window") if config["model_type"] == "mistral" else None
        self.inv_freq = rope_inv_freq(self.head_dim, config.get("rope_theta", 10000.0),
                                      config.get("rope_scaling"))
        self.w = {name: t.to(dtype) for name, t in weights.items()}
        if config.get("tie_word_embeddings", False):
            self.lm_head = self.w["model.embed_tokens.weight"]
        else:
            self.lm_head = self.w["lm_head.weight"]

    def linear(self, x, name):
        y = x @ self.w[name + ".weight"].T
        bias = self.w.get(name + ".bias")
        return y if bias is None else y + bias

    def forward(self, tokens, cache):
        """Logits [T, vocab] of `tokens`, which follow the cache's positions."""
        positions = torch.arange(cache.length, cache.length + len(tokens))
        x = self.w["model.embed_tokens.weight"][torch.tensor(tokens)]
        for layer in range(self.layers):
            p = f"model.layers.{layer}."
            h = rms_norm(x, self.w[p + "input_layernorm.weight"], self.eps)
            q = split_heads(self.linear(h, p + "self_attn.q_proj"), self.heads)
            k = split_heads(self.linear(h, p + "self_attn.k_proj"), self.kv_heads)
            v = split_heads(self.linear(h, p + "self_attn.v_proj"), self.kv_heads)
            q = rotate_half_rope(q, positions, self.inv_freq)
            k = rotate_half_rope(k, positions, self.inv_freq)
            k, v = cache.append(layer, k, v)
            a = attention(q, k, v, positions, self.window)
            x = x + self.linear(merge_heads(a), p + "self_attn.o_proj")
            h = rms_norm(x, self.w[p + "post_attention_layernorm.weight"], self.eps)
            gate = self.linear(h, p + "mlp.gate_proj")
            up = self.linear(h, p + "mlp.up_proj")
            x = x + self.linear(torch.nn.functional.silu(gate) * up, p + "mlp.down_proj")
        cache.length += len(tokens)
        return rms_norm(x, self.w["model.norm.weight"], self.eps) @ self.lm_head.T


class GPT2:
    def __init__(self, config, weights, dtype):
        self.config = config
        self.heads = config["n_head"]
        self.layers = config["n_layer"]
        self.eps = config["layer_norm_epsilon"]
        if config.get("activation_function", "gelu_new") not in ("gelu_new", "gelu_pytorch_tanh"):
            raise ValueError(f"activation_function {config['activation_function']!r} is not supported")
        if not config.get("scale_attn_weights", True) or config.get("scale_attn_by_inverse_layer_idx"):
            raise ValueError("only GPT-2's default attention scaling is supported")
        # GPT2LMHeadModel saves "transformer.h.0..."; GPT2Model (and the
        # original hub checkpoints) save "h.0...".
        prefix = "transformer." if "transformer.wte.weight" in weights else ""
        self.w = {name[len(prefix):]: t.to(dtype) for name, t in weights.items()
                  if name.startswith(prefix)}
        if config.get("tie_word_embeddings", True):  # GPT-2's default
            self.lm_head = self.w["wte.weight"]
        else:
            self.lm_head = weights["lm_head.weight"].to(dtype)

    def conv1d(self, x, name):
        """Hugging Face's Conv1D: weight [in, out], y = x @ W + b."""
        return x @ self.w[name + ".weight"] + self.w[name + ".bias"]

    def layer_norm(self, x, name):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.w[name + ".weight"],
                                              self.w[name + ".bias"], self.eps)

    def forward(self, tokens, cache):
        positions = torch.arange(cache.length, cache.length + len(tokens))
        x = self.w["wte.weight"][torch.tensor(tokens)] + self.w["wpe.weight"][positions]
        for layer in range(self.layers):
            p = f"h.{layer}."
            h = self.layer_norm(x, p + "ln_1")
            q, k, v = self.conv1d(h, p + "attn.c_attn").chunk(3, dim=-1)
            q, k, v = (split_heads(t, self.heads) for t in (q, k, v))
            k, v = cache.append(layer, k, v)
            x = x + self.conv1d(merge_heads(attention(q, k, v, positions)), p + "attn.c_proj")
            h = self.layer_norm(x, p + "ln_2")
            x = x + self.conv1d(gelu_tanh(self.conv1d(h, p + "mlp.c_fc")), p + "mlp.c_proj")
        cache.length += len(tokens)
        return self.layer_norm(x, "ln_f") @ self.lm_head.T


def load_model(directory, dtype=torch.float64):
    config = load_config(directory)
    weights = read_checkpoint(directory)
    if config["model_type"] in LLAMA_FAMILY:
        return Llama(config, weights, dtype)
    if config["model_type"] == "gpt2":
        return GPT2(config, weights, dtype)
    raise ValueError(f"{directory}: model_type {config['model_type']!r} is not supported")


def logits(model, tokens):
    """Next-token logits after each prefix of `tokens`: [len(tokens), vocab]."""
    return model.forward(list(tokens), KVCache(model.layers))


def greedy(model, tokens, steps):
    """The `steps` tokens greedy decoding appends to `tokens`, decoding one
    token at a time against the KV cache, and each step's margin (top logit
    minus runner-up: how robust the choice is to rounding)."""
    cache = KVCache(model.layers)
    last = model.forward(list(tokens), cache)[-1]
    generated, margins = [], []
    for _ in range(steps):
        top = torch.topk(last, 2).values
        margins.append(float(top[0] - top[1]))
        generated.append(int(torch.argmax(last)))
        last = model.forward([generated[-1]], cache)[-1]
    return generated, margins


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="Hugging Face checkpoint directory")
    parser.add_argument("--tokens", required=True, help="comma-separated token ids")
    parser.add_argument("--greedy", type=int, default=0, help="tokens of greedy continuation")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    torch.set_num_threads(1)

    tokens = [int(t) for t in args.tokens.split(",")]
    model = load_model(args.checkpoint, getattr(torch, args.dtype))
    vocab = model.lm_head.shape[0]
    if not tokens or min(tokens) < 0 or max(tokens) >= vocab:
        parser.error(f"--tokens must be non-empty ids below the vocabulary size {vocab}")
    with torch.no_grad():
        result = {"tokens": tokens, "logits": logits(model, tokens).tolist()}
        if args.greedy:
            result["greedy"], result["greedy_margins"] = greedy(model, tokens, args.greedy)
    if args.json:
        json.dump(result, sys.stdout)
        print()
    else:
        last = result["logits"][-1]
        print(f"argmax after the last token: {max(range(vocab), key=last.__getitem__)}")
        if args.greedy:
            print("greedy:", ",".join(map(str, result["greedy"])))


if __name__ == "__main__":
    main()
