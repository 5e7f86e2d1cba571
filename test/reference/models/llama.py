"""The Llama family (model_type llama, mistral, qwen2): RMSNorm, rotate-half
RoPE with rope_theta and the llama3 frequency scaling, grouped-query
attention, SwiGLU MLP, q/k/v biases (qwen2, or llama's attention_bias), tied
embeddings, mistral's sliding window."""

import torch

from layers import attention, merge_heads, rms_norm, rope_inv_freq, rotate_half_rope, split_heads


class Llama:
    MODEL_TYPES = ("llama", "mistral", "qwen2")

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
