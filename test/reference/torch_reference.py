#!/usr/bin/python3
"""An independent torch implementation of the models llmserve serves, written
from the architectures' definitions (not from llmserve's code) to produce
reference logits and greedy continuations.

Each family is one module of models/ (models/__init__.py lists them by
model_type); layers.py holds what they share.

Usage: torch_reference.py <checkpoint-dir> --tokens 1,2,3 [--greedy 8] [--json]
"""

import argparse
import json
import os
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fp8 import e4m3_round  # noqa: E402
from layers import KVCache  # noqa: E402
from models import MODELS  # noqa: E402
from quantized_checkpoint import dequantize  # noqa: E402
from safetensors_io import read_checkpoint  # noqa: E402


def load_config(directory):
    with open(os.path.join(directory, "config.json")) as f:
        return json.load(f)


def load_model(directory, dtype=torch.float64):
    config = load_config(directory)
    weights = dequantize(config, read_checkpoint(directory))
    model = MODELS.get(config["model_type"])
    if model is None:
        raise ValueError(f"{directory}: model_type {config['model_type']!r} is not supported")
    return model(config, weights, dtype)


def kv_scales(directory):
    """The FP8 KV cache's scales a checkpoint gives (compressed-tensors'
    kv_cache_scheme): {layer: (key scales, value scales)} from each layer's
    `self_attn.k_scale` and `v_scale`, each a float64 vector of one scale
    (strategy tensor) or one per KV head (attn_head); None without them."""
    q = load_config(directory).get("quantization_config") or {}
    if not q.get("kv_cache_scheme"):
        return None
    scales = {}
    for name, tensor in read_checkpoint(directory).items():
        match = re.search(r"\.layers\.(\d+)\.self_attn\.([kv])_scale$", name)
        if match:
            layer, role = int(match.group(1)), match.group(2)
            scales.setdefault(layer, {})[role] = tensor.reshape(-1).to(torch.float64)
    return {layer: (s["k"], s["v"]) for layer, s in scales.items()}


def fp8_kv(scales=None):
    """What an FP8 e4m3 KV cache makes of a layer's keys or values x
    [kv_heads, L, head_dim]: x / scale rounded to e4m3, times the scale; the
    scales {layer: (k, v)} of kv_scales (one, or one per KV head), or 1."""
    def store(x, layer, role):
        scale = (torch.ones(1, dtype=torch.float64) if scales is None
                 else scales[layer][0 if role == "k" else 1]).view(-1, 1, 1).numpy()
        return torch.from_numpy(e4m3_round(x.numpy() / scale) * scale).to(x.dtype)
    return store


def logits(model, tokens, store=None):
    """Next-token logits after each prefix of `tokens`: [len(tokens), vocab].
    `store`: what the KV cache makes of keys and values (e.g. fp8_kv)."""
    return model.forward(list(tokens), KVCache(model.layers, store))


def greedy(model, tokens, steps, store=None):
    """The `steps` tokens greedy decoding appends to `tokens`, decoding one
    token at a time against the KV cache, and each step's margin (top logit
    minus runner-up: how robust the choice is to rounding)."""
    cache = KVCache(model.layers, store)
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
