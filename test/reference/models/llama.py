"""The Llama family (model_type llama, mistral, qwen2, qwen3) and its
mixtures of experts (mixtral, qwen3_moe): RMSNorm, rotate-half RoPE with
rope_theta and the llama3 frequency scaling, grouped-query attention, SwiGLU
MLP, q/k/v biases (qwen2, or attention_bias), qwen3's RMSNorm of each query
and key head before the rotation, tied embeddings, and sliding windows:
mistral's and mixtral's on every layer, qwen's with use_sliding_window from
layer max_window_layers on (or as layer_types says).

A sparse layer's MLP is its experts': the softmax of the router's logits,
each token's top num_experts_per_tok experts (their scores renormalized for
mixtral, and with norm_topk_prob for qwen3_moe), and the sum of those
experts' SwiGLU MLPs weighted by the scores. Every mixtral layer is sparse;
a qwen3_moe layer is when it is a multiple of decoder_sparse_step (counting
from 1) and not in mlp_only_layers."""

import torch

from layers import attention, merge_heads, rms_norm, rope_inv_freq, rotate_half_rope, split_heads


class Llama:
    MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen3_moe")

    def __init__(self, config, weights, dtype):
        self.config = config
        self.heads = config["num_attention_heads"]
        self.kv_heads = config.get("num_key_value_heads") or self.heads
        self.head_dim = config.get("head_dim") or config["hidden_size"] // self.heads
        self.layers = config["num_hidden_layers"]
        self.eps = config["rms_norm_eps"]
        if config.get("hidden_act", "silu") != "silu":
            raise ValueError(f"hidden_act {config['hidden_act']!r} is not supported")
        self.qk_norm = config["model_type"] in ("qwen3", "qwen3_moe")
        self.windows = self.layer_windows(config)
        self.sparse = self.sparse_layers(config)
        self.top_k = config.get("num_experts_per_tok")
        self.normalize_top_k = (config["model_type"] == "mixtral" or
                                config.get("norm_topk_prob", False))
        self.inv_freq = rope_inv_freq(self.head_dim, config.get("rope_theta", 10000.0),
                                      config.get("rope_scaling"))
        self.w = {name: t.to(dtype) for name, t in weights.items()}
        if config.get("tie_word_embeddings", False):
            self.lm_head = self.w["model.embed_tokens.weight"]
        else:
            self.lm_head = self.w["lm_head.weight"]

    def layer_windows(self, config):
        """Each layer's sliding window, or None."""
        model_type, window = config["model_type"], config.get("sliding_window")
        qwen = model_type in ("qwen2", "qwen3", "qwen3_moe")
        mistral = model_type in ("mistral", "mixtral")
        if not window or not (mistral or (qwen and config.get("use_sliding_window"))):
            return [None] * self.layers
        if "layer_types" in config:
            return [window if t == "sliding_attention" else None for t in config["layer_types"]]
        first = config.get("max_window_layers", self.layers) if qwen else 0
        return [window if layer >= first else None for layer in range(self.layers)]

    def sparse_layers(self, config):
        """Each layer's expert tensor names (router, gate, up, down, the
        last three with {} for the expert), or None for a dense MLP."""
        model_type = config["model_type"]
        if model_type == "mixtral":
            names = ("block_sparse_moe.gate", "block_sparse_moe.experts.{}.w1",
                     "block_sparse_moe.experts.{}.w3", "block_sparse_moe.experts.{}.w2")
            return [names] * self.layers
        if model_type != "qwen3_moe" or not config.get("num_experts"):
            return [None] * self.layers
        names = ("mlp.gate", "mlp.experts.{}.gate_proj", "mlp.experts.{}.up_proj",
                 "mlp.experts.{}.down_proj")
        step, dense = config.get("decoder_sparse_step", 1), config.get("mlp_only_layers", [])
        return [names if (layer + 1) % step == 0 and layer not in dense else None
                for layer in range(self.layers)]

    def mlp(self, x, prefix, gate="mlp.gate_proj", up="mlp.up_proj", down="mlp.down_proj"):
        gate, up = self.linear(x, prefix + gate), self.linear(x, prefix + up)
        return self.linear(torch.nn.functional.silu(gate) * up, prefix + down)

    def experts_mlp(self, x, prefix, names):
        router, gate, up, down = names
        scores = torch.softmax(self.linear(x, prefix + router), dim=-1)
        weights, chosen = torch.topk(scores, self.top_k, dim=-1)
        if self.normalize_top_k:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(x)
        for t in range(x.shape[0]):
            for j in range(self.top_k):
                e = str(int(chosen[t, j]))
                expert = self.mlp(x[t:t + 1], prefix, gate.format(e), up.format(e), down.format(e))
                out[t] += weights[t, j] * expert[0]
        return out

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
            if self.qk_norm:
                q = rms_norm(q, self.w[p + "self_attn.q_norm.weight"], self.eps)
                k = rms_norm(k, self.w[p + "self_attn.k_norm.weight"], self.eps)
            q = rotate_half_rope(q, positions, self.inv_freq)
            k = rotate_half_rope(k, positions, self.inv_freq)
            k, v = cache.append(layer, k, v)
            a = attention(q, k, v, positions, self.windows[layer])
            x = x + self.linear(merge_heads(a), p + "self_attn.o_proj")
            h = rms_norm(x, self.w[p + "post_attention_layernorm.weight"], self.eps)
            sparse = self.sparse[layer]
            x = x + (self.experts_mlp(h, p, sparse) if sparse else self.mlp(h, p))
        cache.length += len(tokens)
        return rms_norm(x, self.w["model.norm.weight"], self.eps) @ self.lm_head.T
