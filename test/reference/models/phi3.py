"""Phi-3 and Phi-4-mini (model_type phi3): the Llama layer with fused
projections (self_attn.qkv_proj holds q, k and v as row blocks,
mlp.gate_up_proj gate then up), RoPE on the first partial_rotary_factor of
each head's dimensions, a sliding window on every layer when sliding_window
is set, and LongRoPE (rope_scaling of type longrope, or its earlier names su
and yarn): inverse frequencies divided by per-pair short or long factors and
cos and sin scaled by the attention factor.

A forward pass takes the long factors when the sequence's length after it
exceeds original_max_position_embeddings. That is transformers' choice for a
sequence processed in one pass; keys cached by earlier passes keep the
factors they were computed with, where transformers recomputes the cache
when a generation first crosses the boundary (docs/models.md)."""

import math

import torch

from layers import attention, merge_heads, rms_norm, rotate_half_rope, split_heads


def longrope(config, rotary_dim):
    """(short inv_freq, long inv_freq, attention factor) of a config whose
    rope_scaling is LongRoPE; None for one without rope scaling."""
    scaling = config.get("rope_scaling")
    kind = None if scaling is None else scaling.get("rope_type", scaling.get("type"))
    if kind in (None, "default"):
        return None
    if kind not in ("longrope", "su", "yarn"):
        raise ValueError(f"rope_scaling type {kind!r} is not supported")
    theta = config.get("rope_theta", 10000.0)
    original = config.get("original_max_position_embeddings", 4096)
    # The context extension, and the LongRoPE paper's attention factor for it.
    extension = config["max_position_embeddings"] / original
    attention_factor = scaling.get("attention_factor")
    if attention_factor is None:
        attention_factor = (1.0 if extension <= 1
                            else math.sqrt(1 + math.log(extension) / math.log(original)))
    exponents = torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim

    def inv_freq(factors):
        return 1.0 / (torch.tensor(factors, dtype=torch.float64) * theta ** exponents)

    return inv_freq(scaling["short_factor"]), inv_freq(scaling["long_factor"]), attention_factor


class Phi3:
    MODEL_TYPES = ("phi3",)

    def __init__(self, config, weights, dtype):
        self.config = config
        self.heads = config["num_attention_heads"]
        self.kv_heads = config.get("num_key_value_heads") or self.heads
        self.head_dim = config.get("head_dim") or config["hidden_size"] // self.heads
        self.layers = config["num_hidden_layers"]
        self.eps = config.get("rms_norm_eps", 1e-5)
        if config.get("hidden_act", "silu") != "silu":
            raise ValueError(f"hidden_act {config['hidden_act']!r} is not supported")
        self.window = config.get("sliding_window")
        self.rotary_dim = int(self.head_dim * config.get("partial_rotary_factor", 1.0))
        self.original = config.get("original_max_position_embeddings", 4096)
        scaled = longrope(config, self.rotary_dim)
        if scaled is None:
            theta = config.get("rope_theta", 10000.0)
            inv_freq = 1.0 / theta ** (torch.arange(0, self.rotary_dim, 2, dtype=torch.float64)
                                       / self.rotary_dim)
            self.inv_freq, self.long_inv_freq, self.attention_factor = inv_freq, None, 1.0
        else:
            self.inv_freq, self.long_inv_freq, self.attention_factor = scaled
        self.w = {name: t.to(dtype) for name, t in weights.items()}
        if config.get("tie_word_embeddings", False):
            self.lm_head = self.w["model.embed_tokens.weight"]
        else:
            self.lm_head = self.w["lm_head.weight"]

    def rope(self, x, positions, inv_freq):
        """The first rotary_dim dimensions of each head rotated, with cos and
        sin scaled by the attention factor; the others passed through."""
        rotary = self.rotary_dim
        rotated = rotate_half_rope(x[..., :rotary], positions, inv_freq) * self.attention_factor
        return torch.cat([rotated, x[..., rotary:]], dim=-1)

    def forward(self, tokens, cache):
        """Logits [T, vocab] of `tokens`, which follow the cache's positions."""
        positions = torch.arange(cache.length, cache.length + len(tokens))
        long = self.long_inv_freq is not None and cache.length + len(tokens) > self.original
        inv_freq = self.long_inv_freq if long else self.inv_freq
        q_width, kv_width = self.heads * self.head_dim, self.kv_heads * self.head_dim
        x = self.w["model.embed_tokens.weight"][torch.tensor(tokens)]
        for layer in range(self.layers):
            p = f"model.layers.{layer}."
            h = rms_norm(x, self.w[p + "input_layernorm.weight"], self.eps)
            qkv = h @ self.w[p + "self_attn.qkv_proj.weight"].T
            q, k, v = qkv.split([q_width, kv_width, kv_width], dim=-1)
            q = self.rope(split_heads(q, self.heads), positions, inv_freq)
            k = self.rope(split_heads(k, self.kv_heads), positions, inv_freq)
            k, v = cache.append(layer, k, split_heads(v, self.kv_heads))
            a = attention(q, k, v, positions, self.window)
            x = x + merge_heads(a) @ self.w[p + "self_attn.o_proj.weight"].T
            h = rms_norm(x, self.w[p + "post_attention_layernorm.weight"], self.eps)
            gate, up = (h @ self.w[p + "mlp.gate_up_proj.weight"].T).chunk(2, dim=-1)
            x = x + (torch.nn.functional.silu(gate) * up) @ self.w[p + "mlp.down_proj.weight"].T
        cache.length += len(tokens)
        return rms_norm(x, self.w["model.norm.weight"], self.eps) @ self.lm_head.T
