#!/usr/bin/env python3
"""Hugging Face transformers and torch on the same random-weight checkpoint:
the peers the GPU figures are compared with (docs/benchmarks.md).

    transformers_reference.py <checkpoint-dir> [--prompt-len 512]
        [--output-len 128] [--batches 1,64]

Greedy `generate` (bf16, static cache, every sequence `output-len` tokens)
on random prompts of `prompt-len` tokens: output tokens per second at each
batch size. Then torch's `scaled_dot_product_attention` over a causal
2048-token prefill with the model's attention shape (one layer): the
reference for prefill attention. Needs torch with CUDA and transformers; the
GPU machine's python3 has both.
"""

import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM

PREFILL_TOKENS = 2048


def time_generate(model, batch, prompt_len, output_len, vocab):
    prompts = torch.randint(0, vocab, (batch, prompt_len), device="cuda")
    mask = torch.ones_like(prompts)
    kwargs = dict(attention_mask=mask, do_sample=False, cache_implementation="static",
                  pad_token_id=0)
    model.generate(prompts, max_new_tokens=4, min_new_tokens=4, **kwargs)  # warm-up
    torch.cuda.synchronize()
    start = time.perf_counter()
    out = model.generate(prompts, max_new_tokens=output_len, min_new_tokens=output_len, **kwargs)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    assert out.shape == (batch, prompt_len + output_len), out.shape
    return batch * output_len / seconds, seconds


def time_sdpa(config):
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    q = torch.randn(1, heads, PREFILL_TOKENS, head_dim, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(1, kv_heads, PREFILL_TOKENS, head_dim, device="cuda",
                        dtype=torch.bfloat16) for _ in range(2))
    for _ in range(3):
        F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    ms = statistics.median(times)
    flops = 4 * heads * head_dim * PREFILL_TOKENS * PREFILL_TOKENS / 2  # causal half
    return ms, flops / ms / 1e9, config["num_hidden_layers"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--prompt-len", type=int, default=512)
    parser.add_argument("--output-len", type=int, default=128)
    parser.add_argument("--batches", default="1,64")
    args = parser.parse_args()
    with open(os.path.join(args.checkpoint, "config.json")) as f:
        config = json.load(f)
    import transformers
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"transformers {transformers.__version__}")
    model = AutoModelForCausalLM.from_pretrained(args.checkpoint, dtype=torch.bfloat16).cuda()
    model.eval()
    with torch.inference_mode():
        for batch in (int(b) for b in args.batches.split(",")):
            rate, seconds = time_generate(model, batch, args.prompt_len, args.output_len,
                                          config["vocab_size"])
            print(f"transformers generate: batch {batch}, {args.prompt_len} + "
                  f"{args.output_len} tokens: {rate:.1f} output tok/s ({seconds:.2f} s)")
        del model
        torch.cuda.empty_cache()
        ms, tflops, layers = time_sdpa(config)
        print(f"torch scaled_dot_product_attention, causal {PREFILL_TOKENS}-token prefill, "
              f"one layer: {ms:.3f} ms ({tflops:.0f} TFLOP/s); x {layers} layers = "
              f"{ms * layers:.2f} ms")


if __name__ == "__main__":
    main()
