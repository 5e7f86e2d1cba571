"""Gemma 2 and Gemma 3 (model_type gemma2, gemma3_text): embeddings times
sqrt(hidden_size) in the checkpoint's dtype, RMSNorms of (1 + weight), four
per layer (input, post-attention, pre- and post-feed-forward), Gemma 3's
per-head q and k norms before RoPE, attention scaled by
query_pre_attn_scalar^-0.5 and soft-capped by attn_logit_softcapping, a
GeGLU MLP (gelu_pytorch_tanh), logits soft-capped by
final_logit_softcapping, and a sliding window on all but every
sliding_window_pattern-th layer (Gemma 2: every other layer; or as
layer_types says). Gemma 3's sliding layers take the rope_local_base_freq
RoPE, its global ones rope_theta and rope_scaling; Gemma 2 has one RoPE."""

import torch

from layers import attention, merge_heads, rms_norm, rope_inv_freq, rotate_half_rope, split_heads

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class Gemma:
    MODEL_TYPES = ("gemma2", "gemma3_text")

    def __init__(self, config, weights, dtype):
        self.config = config
        self.heads = config["num_attention_heads"]
        self.kv_heads = config.get("num_key_value_heads") or self.heads
        self.head_dim = config.get("head_dim", 256)
        self.layers = config["num_hidden_layers"]
        self.eps = config.get("rms_norm_eps", 1e-6)
        activation = config.get("hidden_activation", "gelu_pytorch_tanh")
        if activation not in ("gelu_pytorch_tanh", "gelu_new"):
            raise ValueError(f"hidden_activation {activation!r} is not supported")
        self.gemma3 = config["model_type"] == "gemma3_text"
        self.attn_softcap = config.get("attn_logit_softcapping") or None
        self.final_softcap = config.get("final_logit_softcapping") or None
        self.scale = config.get("query_pre_attn_scalar", 256) ** -0.5
        hidden = config["hidden_size"]
        dtype_name = config.get("torch_dtype", "float32")
        self.embed_scale = torch.tensor(hidden ** 0.5, dtype=TORCH_DTYPES[dtype_name]).to(dtype)
        types = config.get("layer_types")
        if types is None:
            pattern = config.get("sliding_window_pattern", 6 if self.gemma3 else 2)
            types = ["full_attention" if (layer + 1) % pattern == 0 else "sliding_attention"
                     for layer in range(self.layers)]
        self.sliding = [t == "sliding_attention" for t in types]
        self.window = config.get("sliding_window", 4096)
        self.global_inv_freq = rope_inv_freq(self.head_dim, config.get("rope_theta", 1000000.0),
                                             config.get("rope_scaling"))
        self.local_inv_freq = self.global_inv_freq
        if self.gemma3:
            self.local_inv_freq = rope_inv_freq(self.head_dim,
                                                config.get("rope_local_base_freq", 10000.0), None)
        self.w = {name: t.to(dtype) for name, t in weights.items()}
        if config.get("tie_word_embeddings", True):
            self.lm_head = self.w["model.embed_tokens.weight"]
        else:
            self.lm_head = self.w["lm_head.weight"]

    def norm(self, x, name):
        return rms_norm(x, 1.0 + self.w[name + ".weight"], self.eps)

    def linear(self, x, name):
        return x @ self.w[name + ".weight"].T

    def forward(self, tokens, cache):
        """Logits [T, vocab] of `tokens`, which follow the cache's positions."""
        positions = torch.arange(cache.length, cache.length + len(tokens))
        x = self.w["model.embed_tokens.weight"][torch.tensor(tokens)] * self.embed_scale
        for layer in range(self.layers):
            p = f"model.layers.{layer}."
            inv_freq = self.local_inv_freq if self.sliding[layer] else self.global_inv_freq
            h = self.norm(x, p + "input_layernorm")
            q = split_heads(self.linear(h, p + "self_attn.q_proj"), self.heads)
            k = split_heads(self.linear(h, p + "self_attn.k_proj"), self.kv_heads)
            v = split_heads(self.linear(h, p + "self_attn.v_proj"), self.kv_heads)
            if self.gemma3:
                q = self.norm(q, p + "self_attn.q_norm")
                k = self.norm(k, p + "self_attn.k_norm")
            q = rotate_half_rope(q, positions, inv_freq)
            k = rotate_half_rope(k, positions, inv_freq)
            k, v = cache.append(layer, k, v)
            window = self.window if self.sliding[layer] else None
            a = attention(q, k, v, positions, window, scale=self.scale, softcap=self.attn_softcap)
            x = x + self.norm(self.linear(merge_heads(a), p + "self_attn.o_proj"),
                              p + "post_attention_layernorm")
            h = self.norm(x, p + "pre_feedforward_layernorm")
            gate = torch.nn.functional.gelu(self.linear(h, p + "mlp.gate_proj"), approximate="tanh")
            mlp = self.linear(gate * self.linear(h, p + "mlp.up_proj"), p + "mlp.down_proj")
            x = x + self.norm(mlp, p + "post_feedforward_layernorm")
        cache.length += len(tokens)
        logits = self.norm(x, "model.norm") @ self.lm_head.T
        if self.final_softcap is not None:
            logits = self.final_softcap * torch.tanh(logits / self.final_softcap)
        return logits
