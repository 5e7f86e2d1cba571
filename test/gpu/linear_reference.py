#!/usr/bin/env python3
"""cuBLAS on the linear shapes of a model's decode step: the reference the
sm_90 linear kernels are measured against (docs/benchmarks.md).

    linear_reference.py <config.json> [--rows 1,16,64,256,4096] [--fp8]

For each weight shape [N, K] of one layer (q, k, v, o, gate, up, down), the
LM head, and the layer's linears of one input merged (q, k and v; gate and
up: one GEMM each, as vLLM runs them and as the sm_90 kernels of
llmserve-group-sibling-linears do), and each M, the median time of one bf16
`F.linear` (cuBLAS), replayed from a CUDA graph over enough copies of W that
they exceed L2 (so the weights come from HBM, as in a step), and its weight
bandwidth. Last, per M, a decode step's worth: every layer's seven linears
and the LM head, and the same with the merged ones.
With --fp8, the same for torch's FP8 `torch._scaled_mm` (e4m3 x and W, f32
scales, bf16 out: the reference of W8A8 linears), where this torch and GPU
have it. Needs torch with CUDA; the GPU machine's python3 has it.
"""

import argparse
import json
import math
import statistics

import torch
import torch.nn.functional as F

# Bytes of weight copies per shape: well over the 50-60 MB L2 of an H100/H200.
ROTATION_BYTES = 400 << 20
REPEATS = 7


def shapes(config):
    """(name, N, K) of each linear of a layer, the LM head, and the merged
    linears of one input."""
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or hidden // heads
    kv = config.get("num_key_value_heads", heads) * head_dim
    inter = config["intermediate_size"]
    return [("q_proj", heads * head_dim, hidden), ("k_proj", kv, hidden),
            ("v_proj", kv, hidden), ("o_proj", hidden, heads * head_dim),
            ("gate_proj", inter, hidden), ("up_proj", inter, hidden),
            ("down_proj", hidden, inter), ("lm_head", config["vocab_size"], hidden),
            ("qkv_proj", heads * head_dim + 2 * kv, hidden), ("gate_up", 2 * inter, hidden)]


# The linears of a decode step, per layer: apart, and with those of one
# input merged.
APART = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
MERGED = ("qkv_proj", "o_proj", "gate_up", "down_proj")


def print_steps(title, times, rows, layers):
    """A decode step's linears from `times` {(name, M): seconds}: apart and
    merged, each with the LM head."""
    for kind, names in (("apart", APART), ("merged", MERGED)):
        print(f"\n{title}, one decode step's linears {kind} ({layers} layers x "
              f"{len(names)}, and the LM head):")
        for m in rows:
            seconds = sum(times[name, m] for name in names) * layers + times["lm_head", m]
            print(f"  M = {m:>5}: {seconds * 1e3:8.3f} ms")


def bf16_linear(x, w):
    return F.linear(x, w)


def fp8_linear(x, w):
    """x·Wᵀ of e4m3 operands with per-tensor f32 scales, in bf16."""
    one = torch.ones((), device="cuda", dtype=torch.float32)
    result = torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    return result[0] if isinstance(result, tuple) else result  # torch < 2.5: (out, amax)


def time_linear(m, n, k, linear=bf16_linear, dtype=torch.bfloat16):
    """Median seconds of one linear(x [m, k], W [n, k]) over rotating W."""
    weight_bytes = n * k * torch.tensor([], dtype=dtype).element_size()
    copies = max(2, min(64, math.ceil(ROTATION_BYTES / weight_bytes)))
    weights = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16).to(dtype)
               for _ in range(copies)]
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16).to(dtype)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for w in weights:  # warm-up: cuBLAS handles and workspaces
            linear(x, w)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outputs = [linear(x, w) for w in weights]
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / copies)
    assert all(torch.isfinite(o).all() for o in outputs)
    del weights, outputs, graph
    torch.cuda.empty_cache()
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--rows", default="1,16,64,256,4096")
    parser.add_argument("--fp8", action="store_true", help="also time torch._scaled_mm")
    args = parser.parse_args()
    with open(args.config) as f:
        config = json.load(f)
    rows = [int(r) for r in args.rows.split(",")]
    layers = config["num_hidden_layers"]
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"cuBLAS bf16 F.linear from a CUDA graph")
    print(f"{'weight':>10} {'N':>6} {'K':>6} {'M':>5} {'us':>9} {'weight GB/s':>12}")
    times = {}
    for name, n, k in shapes(config):
        for m in rows:
            seconds = times[name, m] = time_linear(m, n, k)
            print(f"{name:>10} {n:>6} {k:>6} {m:>5} {seconds * 1e6:9.2f} "
                  f"{n * k * 2 / seconds / 1e9:12.1f}")
    print_steps("cuBLAS", times, rows, layers)
    if args.fp8:
        time_fp8(config, rows, layers)


def time_fp8(config, rows, layers):
    """The same shapes through torch._scaled_mm (e4m3, cuBLASLt)."""
    try:
        fp8_linear(torch.zeros(16, 32, device="cuda", dtype=torch.float8_e4m3fn),
                   torch.zeros(32, 32, device="cuda", dtype=torch.float8_e4m3fn))
    except (AttributeError, RuntimeError) as e:
        print(f"\ntorch._scaled_mm: unavailable ({str(e).splitlines()[0]})")
        return
    print(f"\ntorch._scaled_mm, e4m3 x and W, bf16 out, from a CUDA graph")
    times = {}
    for name, n, k in shapes(config):
        for m in rows:
            seconds = times[name, m] = time_linear(m, n, k, fp8_linear, torch.float8_e4m3fn)
            print(f"{name:>10} {n:>6} {k:>6} {m:>5} {seconds * 1e6:9.2f}")
    print_steps("torch._scaled_mm", times, rows, layers)


if __name__ == "__main__":
    main()
