"""GPT-2: LayerNorm, learned positions, gelu_new, the Conv1D weights stored
[in, out]."""

import torch

from layers import attention, gelu_tanh, merge_heads, split_heads


class GPT2:
    MODEL_TYPES = ("gpt2",)

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
