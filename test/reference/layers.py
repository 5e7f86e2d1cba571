"""The pieces the reference models share: a KV cache, causal attention,
rotary embeddings and norms, written from their definitions."""

import math

import torch


class KVCache:
    """Keys and values of every position seen so far, per layer: [kv_heads, L, head_dim].
    `store(x, layer, role)`, if given, is what layer's key ("k") or value
    ("v") tensor x becomes when stored (e.g. rounded to FP8)."""

    def __init__(self, num_layers, store=None):
        self.keys = [None] * num_layers
        self.values = [None] * num_layers
        self.length = 0
        self.store = store

    def append(self, layer, k, v):
        if self.store:
            k, v = self.store(k, layer, "k"), self.store(v, layer, "v")
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=1)
            v = torch.cat([self.values[layer], v], dim=1)
        self.keys[layer], self.values[layer] = k, v
        return k, v


def attention(q, k, v, query_positions, window=None, scale=None, softcap=None):
    """Causal attention of q [H, T, D] over k, v [KVH, L, D], where key j sits
    at position j. Query head h reads KV head h // (H / KVH). With a sliding
    `window`, a query at position i sees keys i - window < j <= i. Scores are
    scaled by `scale`, 1/sqrt(D) by default, then soft-capped to
    softcap * tanh(score / softcap) when `softcap` is given."""
    heads, kv_heads = q.shape[0], k.shape[0]
    group = heads // kv_heads
    k = k.repeat_interleave(group, dim=0)
    v = v.repeat_interleave(group, dim=0)
    scores = q @ k.transpose(1, 2) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if softcap is not None:
        scores = softcap * torch.tanh(scores / softcap)
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
    """Per-pair rotation frequencies, with the linear or llama3 rescaling if
    asked."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    if scaling is None:
        return inv_freq
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "default":
        return inv_freq
    if kind == "linear":
        return inv_freq / scaling["factor"]
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
