"""A Llama-architecture decoder (RMSNorm, rotary positions, grouped-query
attention, SwiGLU MLP) whose parameter names and math are those of Hugging
Face's LlamaForCausalLM, so its state dict is a Llama checkpoint as it is."""
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class LlamaConfig:
    vocab_size: int = 4096
    hidden_size: int = 256
    intermediate_size: int = 688
    num_hidden_layers: int = 6
    num_attention_heads: int = 8
    num_key_value_heads: int = 4
    max_position_embeddings: int = 256
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0

    @property
    def head_dim(self):
        return self.hidden_size // self.num_attention_heads

    def hf_config(self, torch_dtype):
        """config.json of the checkpoint (LlamaForCausalLM, tied embeddings)."""
        return {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "max_position_embeddings": self.max_position_embeddings,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_theta": self.rope_theta,
            "rope_scaling": None,
            "hidden_act": "silu",
            "attention_bias": False,
            "attention_dropout": 0.0,
            "mlp_bias": False,
            "pretraining_tp": 1,
            "tie_word_embeddings": True,
            "initializer_range": 0.02,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "use_cache": True,
            "torch_dtype": torch_dtype,
        }


class RMSNorm(torch.nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


def rotate_half(x):
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class Attention(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        self.q_proj = torch.nn.Linear(c.hidden_size, self.heads * self.head_dim, bias=False)
        self.k_proj = torch.nn.Linear(c.hidden_size, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = torch.nn.Linear(c.hidden_size, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = torch.nn.Linear(self.heads * self.head_dim, c.hidden_size, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        group = self.heads // self.kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim) + mask
        out = scores.float().softmax(-1).to(v.dtype) @ v
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class MLP(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = torch.nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = torch.nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = torch.nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(torch.nn.Module):
    def __init__(self, c, dropout):
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = MLP(c)
        self.dropout = dropout

    def forward(self, x, cos, sin, mask):
        attn = self.self_attn(self.input_layernorm(x), cos, sin, mask)
        x = x + F.dropout(attn, self.dropout, self.training)
        return x + F.dropout(self.mlp(self.post_attention_layernorm(x)), self.dropout, self.training)


class LlamaBody(torch.nn.Module):
    def __init__(self, c, dropout):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = torch.nn.ModuleList(DecoderLayer(c, dropout) for _ in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)


class LlamaForCausalLM(torch.nn.Module):
    """Parameters are named model.* like transformers'; lm_head is the
    embedding matrix (tie_word_embeddings). dropout applies in training only,
    to what each attention and MLP block adds to the residual stream."""

    def __init__(self, c, dropout=0.0):
        super().__init__()
        self.config = c
        self.model = LlamaBody(c, dropout)
        inv_freq = 1.0 / (c.rope_theta ** (torch.arange(0, c.head_dim, 2).float() / c.head_dim))
        angles = torch.outer(torch.arange(c.max_position_embeddings).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("rope_cos", angles.cos(), persistent=False)
        self.register_buffer("rope_sin", angles.sin(), persistent=False)
        self.apply(self._init_weights)
        # GPT-2's scaled init of the projections that write into the residual stream.
        for name, p in self.named_parameters():
            if name.endswith(("o_proj.weight", "down_proj.weight")):
                torch.nn.init.normal_(p, std=0.02 / math.sqrt(2 * c.num_hidden_layers))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (torch.nn.Linear, torch.nn.Embedding)):
            torch.nn.init.normal_(module.weight, std=0.02)

    def forward(self, ids):
        """Logits [batch, tokens, vocab] for token ids [batch, tokens] at positions 0..tokens-1."""
        t = ids.shape[1]
        if t > self.config.max_position_embeddings:
            raise ValueError(f"{t} tokens exceed max_position_embeddings {self.config.max_position_embeddings}")
        x = self.model.embed_tokens(ids)
        cos, sin = self.rope_cos[:t], self.rope_sin[:t]
        mask = torch.full((t, t), float("-inf"), device=ids.device).triu(1)
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask)
        return self.model.norm(x) @ self.model.embed_tokens.weight.t()

    def parameter_count(self):
        return sum(p.numel() for p in self.parameters())
