#!/usr/bin/python3
"""Every llmserve op's CPU kernel against a float64 torch reference on fresh
random inputs: each case is a one-op module with static shapes, compiled by
`llmc compile` and run by `llmrun call`. Passes when
max |ours - reference| / max |reference| < 1e-5 for every output.

A case may also name checkpoint weights (`llmserve.weight` ops): they are
written to a safetensors file the bundle binds at load, as a served model's
are (and so in the layout the compiler asks for, e.g. linear's panels).

Also: two decode rows attended to in a step with a prefill chunk and in a
decode-only step give bitwise-equal results (batch invariance), as do
linear and expert_linear rows in a larger step and alone.

With --cpu x86-64-v3 (AVX2) or skylake-avx512 (AVX-512 without VNNI or
BF16) the cases are compiled for that CPU, whose kernels compute without
VNNI or BF16 instructions.

Usage: op_numerics_test.py <build-dir> <work-dir> [--cpu CPU] [case ...]
"""

import math
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "reference"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "fixtures"))
from fp8 import e4m3_round  # noqa: E402
from safetensors_io import write_safetensors  # noqa: E402

TOLERANCE = 1e-5
RNG = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def i32(low, high, *shape):
    return RNG.integers(low, high, size=shape).astype(np.int32)


def t(x):
    return torch.from_numpy(np.asarray(x)).double()


def mlir_type(a):
    element = {np.float32: "f32", np.int32: "i32", np.int64: "i64"}[a.dtype.type]
    return "tensor<" + "x".join(str(d) for d in a.shape) + "x" + element + ">"


def module(inputs, body, results):
    """A module with one function @op(inputs...) -> results; `body` uses
    %a0, %a1, ... and defines the names listed in `results` (name, type)."""
    args = ", ".join(f"%a{i}: {mlir_type(a)}" for i, a in enumerate(inputs))
    result_types = ", ".join(ty for _, ty in results)
    names = ", ".join(n for n, _ in results)
    return (f"func.func @op({args}) -> ({result_types}) {{\n{body}\n"
            f"  return {names} : {result_types}\n}}\n")


# ----------------------------------------------------------------- cases --

def linear_module(inputs):
    """@op(x, w[, b]) returning x·Wᵀ (+ b)."""
    x, w, *bias = inputs
    ty = f"tensor<{x.shape[0]}x{w.shape[0]}xf32>"
    b = " bias %a2" if bias else ""
    bty = f", {mlir_type(bias[0])}" if bias else ""
    body = (f"  %y = llmserve.linear %a0, %a1{b} : {mlir_type(x)}, {mlir_type(w)}{bty} -> {ty}")
    return module(inputs, body, [("%y", ty)])


def case_linear(bias, m=7, k=96, n=80):
    x, w = f32(m, k), f32(n, k)
    inputs = [x, w] + ([f32(n)] if bias else [])
    ref = t(x) @ t(w).T + (t(inputs[2]) if bias else 0)
    return inputs, linear_module(inputs), [ref]


def case_linear_checkpoint(bias, m, k, n):
    """x·Wᵀ (+ b) with W (and b) read from a checkpoint: a weight read only by
    linear ops, with whole 16-column panels, runs the panel kernel."""
    x, w = f32(m, k), f32(n, k)
    weights = {"w": w} | ({"b": f32(n)} if bias else {})
    ty = f"tensor<{m}x{n}xf32>"
    lines = [f'  %w = llmserve.weight "w" : {mlir_type(w)}']
    if bias:
        lines.append(f'  %b = llmserve.weight "b" : tensor<{n}xf32>')
    b, bty = (" bias %b", f", tensor<{n}xf32>") if bias else ("", "")
    lines.append(f"  %y = llmserve.linear %a0, %w{b} : {mlir_type(x)}, {mlir_type(w)}{bty} -> {ty}")
    ref = t(x) @ t(w).T + (t(weights["b"]) if bias else 0)
    return [x], module([x], "\n".join(lines), [("%y", ty)]), [ref], weights


# The CPU the cases are compiled for: the host's (None), or with --cpu one of
# NO_VNNI_CPUS, whose kernels use neither VNNI nor BF16 (AVX2; AVX-512).
NO_VNNI_CPUS = ("x86-64-v3", "skylake-avx512")
TARGET_CPU = None


def host_flags():
    with open("/proc/cpuinfo") as f:
        return next((line.split() for line in f if line.startswith("flags")), [])


def host_has_bf16():
    """Whether llmc compiles for AVX-512 BF16 here (it targets the host)."""
    return "avx512_bf16" in host_flags()


def target_has_bf16():
    """Whether the cases' kernels are compiled for AVX-512 BF16."""
    return TARGET_CPU is None and host_has_bf16()


def case_linear_bf16(m, k, n, bias=True):
    """x·Wᵀ (+ b) with W stored and declared bf16: with AVX-512 BF16 and K a
    multiple of 32, x rounded to bf16 (nearest even) and multiplied by
    vdpbf16ps, so the reference rounds x too; else W widened to f32."""
    x = f32(m, k)
    w = torch.from_numpy(f32(n, k)).to(torch.bfloat16)
    weights = {"w": w} | ({"b": f32(n)} if bias else {})
    ty, wty = f"tensor<{m}x{n}xf32>", f"tensor<{n}x{k}xbf16>"
    lines = [f'  %w = llmserve.weight "w" : {wty}']
    if bias:
        lines.append(f'  %b = llmserve.weight "b" : tensor<{n}xf32>')
    b, bty = (" bias %b", f", tensor<{n}xf32>") if bias else ("", "")
    lines.append(f"  %y = llmserve.linear %a0, %w{b} : {mlir_type(x)}, {wty}{bty} -> {ty}")
    rounded = target_has_bf16() and k % 32 == 0
    xs = torch.from_numpy(x).to(torch.bfloat16).double() if rounded else t(x)
    ref = xs @ w.double().T + (t(weights["b"]) if bias else 0)
    return [x], module([x], "\n".join(lines), [("%y", ty)]), [ref], weights


def quantize_int8_channel(w):
    """The int8_channel scheme in numpy (f32 arithmetic): per row, scale =
    max |w| / 127 (1 for a row of zeros) and values = w / scale rounded to
    nearest even."""
    absmax = np.abs(w).max(axis=1)
    scales = np.where(absmax > 0, absmax / np.float32(127), np.float32(1)).astype(np.float32)
    values = np.clip(np.rint(w / scales[:, None]), -127, 127).astype(np.int8)
    return values, scales


def host_has_vnni():
    """Whether llmc compiles for AVX-512 VNNI here (it targets the host)."""
    flags = host_flags()
    return "avx512_vnni" in flags and "avx512bw" in flags


def target_has_vnni():
    """Whether the cases' kernels are compiled for AVX-512 VNNI."""
    return TARGET_CPU is None and host_has_vnni()


def vnni_block_sums(x, values, block):
    """What the VNNI kernel computes exactly, in float64: x's rows quantized
    to int8 in blocks of `block` (64 for int8 weights, 128 for int4; scale
    absmax / 127, rounded to nearest even), and each block's integer sum
    with the values: ([m, n, blocks] sums, [m, 1, blocks] x scales, [m,
    blocks] sums of x's int8 values)."""
    m, k = x.shape
    blocks = x.reshape(m, k // block, block)
    absmax = np.abs(blocks).max(axis=2)
    x_scales = np.where(absmax > 0, absmax / np.float32(127), np.float32(1)).astype(np.float32)
    x_values = np.rint(blocks / x_scales[:, :, None]).astype(np.int64)
    q = values.astype(np.int64).reshape(-1, k // block, block)
    sums = np.einsum("mbk,nbk->mnb", x_values, q).astype(np.float64)
    return sums, x_scales[:, None, :].astype(np.float64), x_values.sum(axis=2)


def int8_linear_reference(x, values, scales):
    """(x·Qᵀ) * s in float64 as the CPU computes it: with VNNI (N a multiple
    of 8, K of 64) from x quantized in blocks (vnni_block_sums), else from x
    as it is."""
    m, k = x.shape
    if not (target_has_vnni() and len(values) % 8 == 0 and k % 64 == 0):
        return (t(x) @ t(values.astype(np.float64)).T) * t(scales)
    sums, x_scales, _ = vnni_block_sums(x, values, 64)
    return t((sums * x_scales).sum(axis=2)) * t(scales)


def quantize_int4_group128(w):
    """The int4_group128 scheme in numpy (f32 arithmetic, error and sums in
    float64): per row and group of 128 columns, the scale starts as the
    group's first element of largest magnitude over -8 (1 for a group of
    zeros), the values as w / scale rounded to nearest even, in [-8, 7];
    then, twice, the least-squares scale sum(w q) / sum(q q) replaces it
    (and the values rounded to it) while its squared error is smaller."""
    n, k = w.shape
    groups = w.reshape(n, k // 128, 128)
    largest = np.take_along_axis(groups, np.abs(groups).argmax(axis=2)[:, :, None], axis=2)[..., 0]
    scales = np.where(largest != 0, largest / np.float32(-8), np.float32(1)).astype(np.float32)
    values = np.empty(groups.shape, np.int8)
    for row in range(n):
        for g in range(k // 128):
            group, scale = groups[row, g], scales[row, g]

            def rounded(s):
                q = np.clip(np.rint(group / s), -8, 7).astype(np.int8)
                wide, qd = group.astype(np.float64), q.astype(np.float64)
                return q, float(((wide - np.float64(s) * qd) ** 2).sum()), \
                    float((wide * qd).sum()), float((qd * qd).sum())

            q, error, wq, qq = rounded(scale)
            for _ in range(2):
                refined = np.float32(wq / qq) if qq > 0 else np.float32(0)
                if refined == 0:
                    break
                candidate = rounded(refined)
                if not candidate[1] < error:
                    break
                (q, error, wq, qq), scale = candidate, refined
            values[row, g], scales[row, g] = q, scale
    return values.reshape(n, k), scales


def int4_linear_reference(x, values, scales):
    """sum_k x·Q·s in float64 as the CPU computes it: with VNNI, each
    block's sum (vnni_block_sums) times x's block scale and Q's group scale;
    without, from x as it is."""
    if not target_has_vnni():
        return t(x) @ (t(values.astype(np.float64)) * t(np.repeat(scales, 128, axis=1))).T
    sums, x_scales, _ = vnni_block_sums(x, values, 128)  # a block is a group
    return t((sums * x_scales * scales.astype(np.float64)[None]).sum(axis=2))


# How each scheme quantizes an [N, K] f32 weight, the element type and the
# scales' shape of its weight ops, and the CPU's result.
QUANTIZATION = {
    "int8_channel": (quantize_int8_channel, "i8", lambda n, k: f"{n}", int8_linear_reference),
    "int4_group128": (quantize_int4_group128, "i4", lambda n, k: f"{n}x{k // 128}",
                      int4_linear_reference),
}


def case_linear_quantized(scheme, m, k, n, bias=True, transposed=False, dtype=torch.float32):
    """A linear of `scheme`'s values and scales (+ b), quantized by the
    runtime at load from a checkpoint weight (stored `dtype`; with
    `transposed`, rows [8, 8 + n) of the transpose of a [K, N + 16] tensor),
    against the same quantization in numpy and the CPU kernel's arithmetic
    (QUANTIZATION)."""
    quantize, element, scales_shape, reference = QUANTIZATION[scheme]
    x = f32(m, k)
    rows = (8, 8 + n) if transposed else None
    full = f32(n + 16, k) if transposed else f32(n, k)
    stored = torch.from_numpy(full.T.copy() if transposed else full).to(dtype)
    w = stored.float().numpy()
    w = w.T[rows[0]:rows[1]] if transposed else w
    values, scales = quantize(np.ascontiguousarray(w))
    weights = {"w": stored} | ({"b": torch.from_numpy(f32(n))} if bias else {})
    ty, vty = f"tensor<{m}x{n}xf32>", f"tensor<{n}x{k}x{element}>"
    where = (" transposed rows [8, " + str(8 + n) + "]") if transposed else ""
    lines = [f'  %v = llmserve.weight "w"{where} quantized {scheme} values : {vty}',
             f'  %s = llmserve.weight "w"{where} quantized {scheme} scales : '
             f'tensor<{scales_shape(n, k)}xf32>']
    if bias:
        lines.append(f'  %b = llmserve.weight "b" : tensor<{n}xf32>')
    b, bty = (" bias %b", f", tensor<{n}xf32>") if bias else ("", "")
    lines.append(f"  %y = llmserve.linear %a0, %v scales %s{b} : {mlir_type(x)}, "
                 f"{vty}{bty} -> {ty}")
    ref = reference(x, values, scales) + (t(weights["b"]) if bias else 0)
    return [x], module([x], "\n".join(lines), [("%y", ty)]), [ref], weights


def case_linear_int8(m, k, n, **kwargs):
    """int8_channel: the VNNI kernel where N is a multiple of 8, K of 64 and
    the CPU has VNNI, else the dot-product kernel on int8 values."""
    return case_linear_quantized("int8_channel", m, k, n, **kwargs)


def case_linear_int4(m, k, n, **kwargs):
    """int4_group128, packed two a byte in rows8x64: the VNNI kernel, so the
    case needs a host with VNNI."""
    return case_linear_quantized("int4_group128", m, k, n, **kwargs)


def case_linear_int4_checkpoint(layout, m, k, n, bias=True, rows=None):
    """A linear a GPTQ or AWQ checkpoint stores quantized (`layout`, packed
    by test/fixtures/checkpoints/quantized.py), optionally rows [begin, end)
    of its outputs, against the dequantizing reference's values, zero points
    and scales and the VNNI kernel's arithmetic: each block's sum of x's int8
    values times (Q - z), times x's block scale and the group's scale."""
    from checkpoints import quantized  # noqa: E402  (the fixtures' packer)
    import quantized_checkpoint  # noqa: E402  (the reference's unpacker)
    begin, end = rows or (0, n)
    x, full = f32(m, k), torch.from_numpy(f32(n, k))
    weights = quantized.linear_tensors(layout, "w", full)
    tensors = [weights["w." + part] for part in ("qweight", "qzeros", "scales")]
    w = quantized_checkpoint.dequantize_linear(layout, *tensors, weights.get("w.g_idx"))
    q, z, s = quantized.quantize(full)
    assert torch.equal(w, ((q - z.repeat_interleave(128, 1)).double() *
                           s.double().repeat_interleave(128, 1)))
    # As the kernel computes it: values q - 8, offset by 8 - z; without VNNI
    # from x as it is.
    q, z, s = q[begin:end].numpy(), z[begin:end].numpy(), s[begin:end].double().numpy()
    if not target_has_vnni():
        w = (q - np.repeat(z, 128, axis=1)) * np.repeat(s, 128, axis=1)
        ref = t(x) @ t(w).T
    else:
        # A block of x is a group of Q: one zero point and scale each.
        sums, x_scales, x_sums = vnni_block_sums(x, (q - 8).astype(np.int8), 128)
        sums = sums + (8 - z)[None] * x_sums[:, None, :]
        ref = t((sums * x_scales * s[None]).sum(axis=2))
    count = end - begin
    ty, vty = f"tensor<{m}x{count}xf32>", f"tensor<{count}x{k}xi4>"
    where = f" rows [{begin}, {end}]" if rows else ""
    lines = [f'  %{p[0]} = llmserve.weight "w"{where} quantized int4_group128 {p} from {layout} : '
             f"{t_}" for p, t_ in (("values", vty), ("scales", f"tensor<{count}x{k // 128}xf32>"),
                                   ("zeros", f"tensor<{count}x{k // 128}xi8>"))]
    if bias:
        weights["b"] = torch.from_numpy(f32(count))
        lines.append(f'  %b = llmserve.weight "b" : tensor<{count}xf32>')
        ref = ref + t(weights["b"])
    b, bty = (" bias %b", f", tensor<{count}xf32>") if bias else ("", "")
    lines.append(f"  %y = llmserve.linear %a0, %v scales %s zeros %z{b} : {mlir_type(x)}, "
                 f"{vty}{bty} -> {ty}")
    return [x], module([x], "\n".join(lines), [("%y", ty)]), [ref], weights


def fp8_checkpoint_weight(n, k):
    """A random [n, k] weight "w" as an FP8 checkpoint stores it (codes and
    bf16 scales per block of 128 x 128, packed by
    test/fixtures/checkpoints/quantized.py): the checkpoint's tensors, and
    the reference's dequantization."""
    from checkpoints import quantized  # noqa: E402  (the fixtures' packer)
    import quantized_checkpoint  # noqa: E402  (the reference's dequantizer)
    weights = quantized.fp8_tensors("w", torch.from_numpy(f32(n, k)))
    return weights, quantized_checkpoint.dequantize_fp8(weights["w"].codes,
                                                        weights["w_scale_inv"])


def case_linear_fp8(m, k, n, rows=None, bias=True):
    """A linear of an FP8 checkpoint's weight, optionally rows [begin, end)
    of it, against the reference's dequantization: the CPU reads it
    dequantized, sm_90 as stored."""
    begin, end = rows or (0, n)
    x = f32(m, k)
    weights, w = fp8_checkpoint_weight(n, k)
    count = end - begin
    ty, wty = f"tensor<{m}x{count}xf32>", f"tensor<{count}x{k}xf32>"
    where = f" rows [{begin}, {end}]" if rows else ""
    lines = [f'  %w = llmserve.weight "w"{where} from fp8_block128 : {wty}']
    ref = t(x) @ w[begin:end].double().T
    if bias:
        weights["b"] = torch.from_numpy(f32(count))
        lines.append(f'  %b = llmserve.weight "b" : tensor<{count}xf32>')
        ref = ref + t(weights["b"])
    b, bty = (" bias %b", f", tensor<{count}xf32>") if bias else ("", "")
    lines.append(f"  %y = llmserve.linear %a0, %w{b} : {mlir_type(x)}, {wty}{bty} -> {ty}")
    return [x], module([x], "\n".join(lines), [("%y", ty)]), [ref], weights


def bf16_exact(a):
    """f32 `a` rounded to bf16 (nearest even), as f32: values both storage
    types hold alike. Arrays of other types are returned as they are."""
    if a.dtype != np.float32:
        return a
    return torch.from_numpy(a).to(torch.bfloat16).float().numpy()


def fp8_activations(x):
    """x [M, K] (float32) as llmserve.quantize_fp8 quantizes it, dequantized
    (float64): per row and group of 128 columns, the scale max(max |x|,
    1e-10) / 448 and x / scale rounded to e4m3, both in float32, times it."""
    x = np.asarray(x, dtype=np.float32)
    out = np.empty(x.shape, dtype=np.float64)
    for g in range(0, x.shape[1], 128):
        group = x[:, g:g + 128]
        scale = np.maximum(np.abs(group).max(axis=1), np.float32(1e-10)) / np.float32(448)
        out[:, g:g + 128] = e4m3_round(group / scale[:, None]) * scale[:, None]
    return out


def case_linear_w8a8(m, k, n, bias=True):
    """A W8A8 linear (llmc compile --fp8-activations): x quantized by
    llmserve.quantize_fp8, an FP8 checkpoint's codes and block scales, both
    on sm_90's FP8 tensor cores; against the float64 product of both
    dequantized. x and the bias are bf16 values, so that the case's f32 and
    bf16 storage share the reference. sm_90 only: the CPU has no such
    kernels."""
    x = bf16_exact(f32(m, k))
    weights, w = fp8_checkpoint_weight(n, k)
    ty, xty = f"tensor<{m}x{n}xf32>", f"tensor<{m}x{k}xf32>"
    codes, wty = f"tensor<{m}x{k}xf8E4M3FN>", f"tensor<{n}x{k}xf8E4M3FN>"
    sty = f"tensor<{-(-n // 128)}x{-(-k // 128)}xf32>"
    lines = [f'  %w = llmserve.weight "w" quantized fp8_block128 values from fp8_block128 : {wty}',
             f'  %s = llmserve.weight "w" quantized fp8_block128 scales from fp8_block128 : {sty}',
             f"  %c, %cs = llmserve.quantize_fp8 %a0 : {xty} -> {codes}"]
    ref = t(fp8_activations(x)) @ w.double().T
    b, bty = "", ""
    if bias:
        weights["b"] = torch.from_numpy(bf16_exact(f32(n)))
        lines.append(f'  %b = llmserve.weight "b" : tensor<{n}xf32>')
        ref = ref + t(weights["b"])
        b, bty = " bias %b", f", tensor<{n}xf32>"
    lines.append(f"  %y = llmserve.linear %c input_scales %cs, %w scales %s{b} : {codes}, "
                 f"{wty}{bty} -> {ty}")
    return [x], module([x], "\n".join(lines), [("%y", ty)]), [ref], weights


def case_gated_mlp(m, k, n, return_up=False):
    """silu(x·Wgᵀ) * (x·Wuᵀ) with checkpoint weights: llmc puts the two
    linears and silu_mul in one dispatch region (one kernel). With
    `return_up`, the up projection is also a result, so it stays outside and
    the region's epilogue reads it as an input."""
    x, wg, wu = f32(m, k), f32(n, k), f32(n, k)
    ty = f"tensor<{m}x{n}xf32>"
    body = "\n".join([
        f'  %wg = llmserve.weight "wg" : {mlir_type(wg)}',
        f'  %wu = llmserve.weight "wu" : {mlir_type(wu)}',
        f"  %g = llmserve.linear %a0, %wg : {mlir_type(x)}, {mlir_type(wg)} -> {ty}",
        f"  %u = llmserve.linear %a0, %wu : {mlir_type(x)}, {mlir_type(wu)} -> {ty}",
        f"  %y = llmserve.silu_mul %g, %u : {ty}"])
    gate, up = t(x) @ t(wg).T, t(x) @ t(wu).T
    ref = gate / (1 + torch.exp(-gate)) * up
    results, refs = [("%y", ty)], [ref]
    if return_up:
        results.append(("%u", ty))
        refs.append(up)
    return [x], module([x], body, results), refs, {"wg": wg, "wu": wu}


def case_sibling_linears(m, k, ns, bias=1):
    """Linears of one input x [m, k] with weights of `ns` rows, the `bias`th
    with a bias (a layer's q, k and v), all arguments after x: sm_90 runs
    them as one kernel (llmserve-group-sibling-linears), the CPU one after
    another."""
    x = f32(m, k)
    inputs, lines, results, refs = [x], [], [], []
    for i, n in enumerate(ns):
        w = f32(n, k)
        inputs.append(w)
        ty = f"tensor<{m}x{n}xf32>"
        operands, types, ref = f"%a{len(inputs) - 1}", mlir_type(w), t(x) @ t(w).T
        if i == bias:
            inputs.append(f32(n))
            operands += f" bias %a{len(inputs) - 1}"
            types += f", tensor<{n}xf32>"
            ref = ref + t(inputs[-1])
        lines.append(f"  %y{i} = llmserve.linear %a0, {operands} : {mlir_type(x)}, {types} -> {ty}")
        results.append((f"%y{i}", ty))
        refs.append(ref)
    return inputs, module(inputs, "\n".join(lines), results), refs


def sibling_linears_invariance_pair(m):
    """The same 3 rows of sibling linears (q, k and v shapes, K = 1024: 8
    splits for all three) in an m-row step and alone."""
    inputs, text, _ = case_sibling_linears(m, k=1024, ns=(256, 64, 64))
    few = [inputs[0][:3]] + inputs[1:]
    return (inputs, text), (few, text.replace(f"tensor<{m}x", "tensor<3x"))


def case_linear_bias_gelu(m, k, n):
    """gelu(x·Wᵀ + b) with checkpoint weights (GPT-2's c_fc): one dispatch
    region."""
    x, w, b = f32(m, k), f32(n, k), f32(n)
    ty = f"tensor<{m}x{n}xf32>"
    body = "\n".join([
        f'  %w = llmserve.weight "w" : {mlir_type(w)}',
        f'  %b = llmserve.weight "b" : tensor<{n}xf32>',
        f"  %l = llmserve.linear %a0, %w bias %b : {mlir_type(x)}, {mlir_type(w)}, "
        f"tensor<{n}xf32> -> {ty}",
        f"  %y = llmserve.gelu %l approximation tanh : {ty}"])
    ref = torch.nn.functional.gelu(t(x) @ t(w).T + t(b), approximate="tanh")
    return [x], module([x], body, [("%y", ty)]), [ref], {"w": w, "b": b}


def case_tied_embedding():
    """One checkpoint weight as an embedding table and as the linear weight
    (tied word embeddings): stored in panels, read by both kernels."""
    v, d, n = 48, 24, 9
    table, ids = f32(v, d), i32(0, v, n)
    body = "\n".join([
        f'  %w = llmserve.weight "w" : {mlir_type(table)}',
        f"  %x = llmserve.embedding %w, %a0 : {mlir_type(table)}, {mlir_type(ids)} -> tensor<{n}x{d}xf32>",
        f"  %y = llmserve.linear %x, %w : tensor<{n}x{d}xf32>, {mlir_type(table)} -> tensor<{n}x{v}xf32>"])
    rows = t(table)[torch.from_numpy(ids).long()]
    results = [("%x", f"tensor<{n}x{d}xf32>"), ("%y", f"tensor<{n}x{v}xf32>")]
    return [ids], module([ids], body, results), [rows, rows @ t(table).T], {"w": table}


def case_embedding(scale=None):
    """`scale`: Gemma's embeddings times sqrt(hidden)."""
    v, d, n = 50, 24, 9
    table, ids = f32(v, d), i32(0, v, n)
    ty = f"tensor<{n}x{d}xf32>"
    attr = f" scale {scale}" if scale is not None else ""
    body = f"  %y = llmserve.embedding %a0, %a1{attr} : {mlir_type(table)}, {mlir_type(ids)} -> {ty}"
    rows = t(table)[torch.from_numpy(ids).long()]
    return [table, ids], module([table, ids], body, [("%y", ty)]), [rows * (scale or 1.0)]


def case_gather_rows():
    x, rows = f32(11, 16), i32(0, 11, 4)
    ty = "tensor<4x16xf32>"
    body = f"  %y = llmserve.gather_rows %a0, %a1 : {mlir_type(x)}, {mlir_type(rows)} -> {ty}"
    return [x, rows], module([x, rows], body, [("%y", ty)]), [t(x)[torch.from_numpy(rows).long()]]


def norm_case(kind, residual, group=None, weight_offset=None):
    """`group`: a weight (and bias) of that width, normalizing each row as
    d / group groups (per-head norms); `weight_offset`: added to the weight
    (Gemma's 1 + weight)."""
    n, d, eps = 6, 48, 1e-5
    g = group or d
    x, w, b, r = f32(n, d), f32(g), f32(g), f32(n, d)
    ty = mlir_type(x)
    inputs = [x, w] + ([b] if kind == "layer_norm" else []) + ([r] if residual else [])
    operands = "%a0, %a1" + (", %a2" if kind == "layer_norm" else "")
    types = ", ".join(mlir_type(a) for a in inputs)
    res = f" residual %a{len(inputs) - 1}" if residual else ""
    names = "%y, %s" if residual else "%y"
    offset = f" weight_offset {weight_offset}" if weight_offset is not None else ""
    body = f"  {names} = llmserve.{kind} {operands}{res} epsilon {eps:e}{offset} : {types}"
    w_eff = t(w) + (weight_offset or 0.0)
    s = t(x) + (t(r) if residual else 0)
    groups = s.view(n, d // g, g)
    if kind == "rms_norm":
        y = groups * torch.rsqrt((groups * groups).mean(-1, keepdim=True) + eps) * w_eff
    else:
        mean = groups.mean(-1, keepdim=True)
        var = ((groups - mean) ** 2).mean(-1, keepdim=True)
        y = (groups - mean) * torch.rsqrt(var + eps) * t(w) + t(b)
    y = y.reshape(n, d)
    results = [("%y", ty)] + ([("%s", ty)] if residual else [])
    return inputs, module(inputs, body, results), [y] + ([s] if residual else [])


def hf_inv_freq(rotary, theta, scaling):
    """Inverse frequencies as transformers computes them (in float32); for
    longrope, [short, long]."""
    shape = torch.arange(0, rotary, 2, dtype=torch.int64).float() / rotary
    inv = 1.0 / (theta ** shape)
    if scaling is None:
        return inv
    if scaling["type"] == "longrope":
        return [1.0 / (torch.tensor(scaling[k], dtype=torch.float32) * theta ** shape)
                for k in ("short", "long")]
    if scaling["type"] == "linear":
        return inv / scaling["factor"]
    factor, low, high, old = (scaling[k] for k in ("factor", "low", "high", "original"))
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > old / low, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < old / high) * ~(wavelen > old / low)
    return torch.where(medium, smoothed, scaled)


def rope_case(style, rotary, scaling):
    n, heads, head_dim, theta = 5, 3, 16, 10000.0
    x, pos = f32(n, heads * head_dim), i32(0, 4096, n)
    # The angle is a float32 product, as in transformers; cos and sin of it exact.
    angle = (torch.from_numpy(pos).float()[:, None] * hf_inv_freq(rotary, theta, scaling)[None, :])
    attrs = f"style {style} head_dim {head_dim} rotary_dim {rotary} theta {theta:e}"
    if scaling and scaling["type"] == "linear":
        attrs += f" scaling linear scaling_factor {scaling['factor']:e}"
    elif scaling:
        attrs += (f" scaling llama3 scaling_factor {scaling['factor']:e} low_freq_factor "
                  f"{scaling['low']:e} high_freq_factor {scaling['high']:e} "
                  f"original_max_position {scaling['original']}")
    y = rotate(t(x).view(n, heads, head_dim), style, rotary, angle.double(), 1.0)
    body = f"  %y = llmserve.rope %a0, %a1 {attrs} : {mlir_type(x)}, {mlir_type(pos)}"
    return [x, pos], module([x, pos], body, [("%y", mlir_type(x))]), [y.view(n, -1)]


def case_sibling_ropes(style, rotary):
    """A layer's q (4 heads) and k (2 heads) rotated by one position array:
    sm_90 runs the two ropes as one kernel (llmserve-group-sibling-ropes),
    the CPU one after the other."""
    n, head_dim, theta = 6, 16, 10000.0
    q, k, pos = f32(n, 4 * head_dim), f32(n, 2 * head_dim), i32(0, 4096, n)
    angle = (torch.from_numpy(pos).float()[:, None] * hf_inv_freq(rotary, theta, None)[None, :])
    attrs = f"style {style} head_dim {head_dim} rotary_dim {rotary} theta {theta:e}"
    body = "\n".join(f"  %y{i} = llmserve.rope %a{i}, %a2 {attrs} : {mlir_type(x)}, {mlir_type(pos)}"
                     for i, x in enumerate((q, k)))
    refs = [rotate(t(x).view(n, -1, head_dim), style, rotary, angle.double(), 1.0).view(n, -1)
            for x in (q, k)]
    return ([q, k, pos], module([q, k, pos], body, [("%y0", mlir_type(q)), ("%y1", mlir_type(k))]),
            refs)


def rotate(xs, style, rotary, angle, attention_factor):
    """xs [T, heads, head_dim] with the first `rotary` channels of each head
    rotated by angle [T, rotary / 2], cos and sin times attention_factor."""
    cos, sin = torch.cos(angle) * attention_factor, torch.sin(angle) * attention_factor
    y = xs.clone()
    half = rotary // 2
    if style == "neox":
        a, b = xs[..., :half], xs[..., half:rotary]
        y[..., :half] = a * cos[:, None] - b * sin[:, None]
        y[..., half:rotary] = b * cos[:, None] + a * sin[:, None]
    else:
        a, b = xs[..., 0:rotary:2], xs[..., 1:rotary:2]
        y[..., 0:rotary:2] = a * cos[:, None] - b * sin[:, None]
        y[..., 1:rotary:2] = b * cos[:, None] + a * sin[:, None]
    return y


def case_rope_longrope():
    """LongRoPE over a step of four sequences with original_max_position 16:
    contexts 9 (short factors), 17 (long: its tokens at positions 13-16 all
    take the long factors, since the sequence's context decides), 16 (short,
    at the boundary) and 40 (a long decode row). Partial rotary: 12 of 16."""
    heads, head_dim, rotary, theta, original, attention = 3, 16, 12, 10000.0, 16, 1.19
    context, qlen = [9, 17, 16, 40], [3, 4, 1, 1]
    starts = np.cumsum([0] + qlen).astype(np.int32)
    pos = np.concatenate([np.arange(c - q, c) for c, q in zip(context, qlen)]).astype(np.int32)
    n = len(pos)
    x = f32(n, heads * head_dim)
    factors = {k: RNG.uniform(1.0, 8.0, rotary // 2).astype(np.float32) for k in ("short", "long")}
    short, long = hf_inv_freq(rotary, theta, {"type": "longrope", **factors})
    long_rows = torch.tensor([c > original for c, q in zip(context, qlen) for _ in range(q)])
    inv = torch.where(long_rows[:, None], long[None, :], short[None, :])
    angle = (torch.from_numpy(pos).float()[:, None] * inv).double()
    y = rotate(t(x).view(n, heads, head_dim), "neox", rotary, angle, attention)
    cl = np.array(context, np.int32)
    inputs = [x, pos, cl, starts]

    def dense(values):
        return f"dense<[{', '.join(repr(float(v)) for v in values)}]> : tensor<{len(values)}xf32>"

    body = (f"  %y = llmserve.rope %a0, %a1 context_len %a2 query_start %a3 style neox "
            f"head_dim {head_dim} rotary_dim {rotary} theta {theta:e} scaling longrope "
            f"original_max_position {original} short_factor {dense(factors['short'])} "
            f"long_factor {dense(factors['long'])} attention_factor {attention} : "
            f"{', '.join(mlir_type(a) for a in inputs)}")
    return inputs, module(inputs, body, [("%y", mlir_type(x))]), [y.view(n, -1)]


def case_silu_mul():
    g, u = f32(7, 33, scale=3), f32(7, 33)
    body = f"  %y = llmserve.silu_mul %a0, %a1 : {mlir_type(g)}"
    ref = t(g) / (1 + torch.exp(-t(g))) * t(u)
    return [g, u], module([g, u], body, [("%y", mlir_type(g))]), [ref]


def case_softcap():
    x = f32(5, 40, scale=20)
    body = f"  %y = llmserve.softcap %a0 cap 3.0e+01 : {mlir_type(x)}"
    return [x], module([x], body, [("%y", mlir_type(x))]), [30.0 * torch.tanh(t(x) / 30.0)]


def case_gelu_mul(approximation):
    g, u = f32(6, 35, scale=3), f32(6, 35)
    body = f"  %y = llmserve.gelu_mul %a0, %a1 approximation {approximation} : {mlir_type(g)}"
    ref = torch.nn.functional.gelu(t(g), approximate=approximation) * t(u)
    return [g, u], module([g, u], body, [("%y", mlir_type(g))]), [ref]


def gelu_case(approximation):
    x = f32(5, 40, scale=3)
    body = f"  %y = llmserve.gelu %a0 approximation {approximation} : {mlir_type(x)}"
    approx = "tanh" if approximation == "tanh" else "none"
    ref = torch.nn.functional.gelu(t(x), approximate=approx)
    return [x], module([x], body, [("%y", mlir_type(x))]), [ref]


def attention_case(window, d=8, context=None, qlen=None, softcap=None, kv_scales=None,
                   heads=4, kvh=2, rope=None):
    """kv_write of this step's K and V into a paged cache that already holds
    earlier tokens, then paged_attention: by default two sequences, one
    mid-prefill and one decoding, with scattered blocks. The head size `d`
    sets how the CPU kernel splits a head into vectors (8: one of 8 lanes, 12:
    three of 4, 6: six of 1). Given `context` (KV length after the step) and
    `qlen` (tokens this step), the blocks are a random permutation of the
    pool; all-decode steps with contexts past 256 keys run sm_90's
    split-context kernels over several chunks. `softcap`: scores become
    softcap * tanh(score / softcap) (Gemma 2). `kv_scales` (key, value):
    FP8 e4m3 caches with those scales, each one number or a list of one per
    KV head; the earlier tokens' codes are their
    K and V rounded to e4m3 (llmrun call's conversion), and the step's are
    written by kv_write (a sequence of one token attends to its own value
    alone: its output is that value's code times the scale). `heads` query
    heads share `kvh` KV heads; the CPU kernel attends with up to 4 heads of
    a group at once. `rope` (style, rotary): q and k are first rotated by
    their tokens' positions, as a layer does (on sm_90 the ropes and the
    writes are one kernel, which stores the rotated keys straight into the
    cache)."""
    bs = 4
    if context is None:
        nb = 10
        tables = [[7, 2, 9, 0], [5, 1, 8]]
        context, qlen = [13, 10], [5, 1]
    else:
        counts = [-(-c // bs) for c in context]
        nb = sum(counts) + 3
        order = [int(b) for b in RNG.permutation(nb)]
        tables = [order[sum(counts[:s]):sum(counts[:s + 1])] for s in range(len(context))]
    kc, vc = f32(nb, bs, kvh, d), f32(nb, bs, kvh, d)  # earlier tokens' K and V
    tnum = sum(qlen)
    q, k, v = f32(tnum, heads * d), f32(tnum, kvh * d), f32(tnum, kvh * d)
    slots, qs = [], [0]
    for s in range(len(context)):
        for p in range(context[s] - qlen[s], context[s]):
            slots.append(tables[s][p // bs] * bs + p % bs)
        qs.append(qs[-1] + qlen[s])
    mb = max(len(r) for r in tables)
    bt = np.array([r + [-1] * (mb - len(r)) for r in tables], dtype=np.int32)
    slots, qs, cl = (np.array(a, dtype=np.int32) for a in (slots, qs, context))
    positions = np.array([p for c, n in zip(context, qlen) for p in range(c - n, c)], np.int32)
    queries, keys = t(q), k
    if rope:
        style, rotary = rope
        angle = (torch.from_numpy(positions).float()[:, None] *
                 hf_inv_freq(rotary, 10000.0, None)[None, :]).double()
        queries = rotate(queries.view(tnum, heads, d), style, rotary, angle, 1.0).view(tnum, -1)
        keys = rotate(t(k).view(tnum, kvh, d), style, rotary, angle, 1.0).view(tnum, -1)

    # Reference: write the new K, V, then attend over each sequence's cache
    # (of codes times the scales, when FP8).
    # x [..., kvh, d] as stored; scales [1 or kvh, 1] broadcast over heads.
    def stored(x, scale):
        return t(x) if kv_scales is None else t(e4m3_round(np.asarray(x) / scale))

    key_scale, value_scale = (np.asarray(s, dtype=np.float32).reshape(-1, 1)
                              for s in (kv_scales or (1, 1)))
    kref = stored(kc * key_scale, key_scale).reshape(nb * bs, kvh, d).clone()
    vref = stored(vc * value_scale, value_scale).reshape(nb * bs, kvh, d).clone()
    kref[torch.from_numpy(slots).long()] = stored(keys.reshape(tnum, kvh, d), key_scale)
    vref[torch.from_numpy(slots).long()] = stored(v.reshape(tnum, kvh, d), value_scale)
    kref, vref = kref * t(key_scale), vref * t(value_scale)
    out = torch.zeros(tnum, heads, d, dtype=torch.float64)
    lse = torch.zeros(tnum, heads, dtype=torch.float64)
    scale = 1 / math.sqrt(d)
    for s in range(len(context)):
        kv_slots = torch.tensor([tables[s][j // bs] * bs + j % bs for j in range(context[s])])
        cached_keys, values = kref[kv_slots], vref[kv_slots]
        for i in range(qs[s], qs[s + 1]):
            pos = context[s] - qlen[s] + (i - qs[s])
            first = max(0, pos - window + 1) if window else 0
            for h in range(heads):
                g = h // (heads // kvh)
                scores = (cached_keys[first:pos + 1, g] @ queries[i].view(heads, d)[h]) * scale
                if softcap is not None:
                    scores = softcap * torch.tanh(scores / softcap)
                lse[i, h] = torch.logsumexp(scores, 0)
                out[i, h] = torch.softmax(scores, 0) @ values[first:pos + 1, g]

    inputs = [q, k, v, kc, vc, slots, bt, cl, qs] + ([positions] if rope else [])
    return (inputs, attention_module(inputs, heads, scale, window, softcap, kv_scales, rope),
            [out.view(tnum, -1), lse])


def attention_module(inputs, heads, scale, window, softcap=None, kv_scales=None, rope=None):
    """kv_write of K and V, then paged_attention, over attention_case's
    inputs (q, k, v, k_cache, v_cache, slots, block_table, context_len,
    query_start, and with `rope` positions); with `kv_scales`, into FP8
    caches; with `rope` (style, rotary), q and k rotated first."""
    q, k, v, kc, _, slots, bt, cl, qs = inputs[:9]
    tnum, cty = q.shape[0], mlir_type(kc)
    win = f" sliding_window {window}" if window else ""
    win += f" softcap {softcap}" if softcap is not None else ""
    writes = ["", ""]
    if kv_scales:
        cty = cty.replace("xf32>", "xf8E4M3FN>")
        arrays = ["[" + ", ".join(f"{x:e}" for x in np.atleast_1d(s)) + "]" for s in kv_scales]
        writes = [f" scale {arrays[0]}", f" scale {arrays[1]}"]
        win += f" kv_scales {arrays[0]}, {arrays[1]}"
    query, key, ropes = "%a0", "%a1", []
    if rope:
        attrs = f"style {rope[0]} head_dim {q.shape[1] // heads} rotary_dim {rope[1]} theta 1.0e4"
        query, key = "%rq", "%rk"
        ropes = [f"  {r} = llmserve.rope {a}, %a9 {attrs} : {mlir_type(x)}, {mlir_type(inputs[9])}"
                 for r, a, x in ((query, "%a0", q), (key, "%a1", k))]
    body = "\n".join(ropes + [
        f"  %kc = llmserve.kv_write {key} into %a3 at %a5{writes[0]} : {mlir_type(k)}, {cty}, "
        f"{mlir_type(slots)}",
        f"  %vc = llmserve.kv_write %a2 into %a4 at %a5{writes[1]} : {mlir_type(v)}, {cty}, "
        f"{mlir_type(slots)}",
        f"  %o, %lse = llmserve.paged_attention {query}, %kc, %vc block_table %a6 context_len %a7 "
        f"query_start %a8 num_heads {heads} scale {scale:e}{win} : {mlir_type(q)}, {cty}, "
        f"{mlir_type(bt)}, {mlir_type(cl)}, {mlir_type(qs)} -> tensor<{tnum}x{heads}xf32>",
    ])
    results = [("%o", mlir_type(q)), ("%lse", f"tensor<{tnum}x{heads}xf32>")]
    text = module(inputs, body, results)
    # FP8 caches' f32 inputs are their codes' values (llmrun call rounds
    # them).
    for a in ("%a3", "%a4"):
        text = text.replace(f"{a}: {mlir_type(kc)}", f"{a}: {cty}")
    return text


def top_k_reference(scores, k):
    """Each row's k highest scores and their indices, the lower index first
    among equals (moe_router's order)."""
    order = np.stack([np.lexsort((np.arange(len(row)), -row))[:k] for row in scores])
    return np.take_along_axis(scores, order, axis=1), order


def case_moe_router(scoring, normalized, t_=9, e=8, k=3, tie=False):
    logits = f32(t_, e, scale=2.0)
    if tie:  # row 2: two experts tie for the top, the lower index first
        logits[2, 5] = logits[2, 1] = logits[2].max() + 1
    scores = t(logits)
    scores = torch.softmax(scores, dim=1) if scoring == "softmax" else torch.sigmoid(scores)
    weights, experts = top_k_reference(scores.numpy(), k)
    if normalized:
        weights = weights / weights.sum(axis=1, keepdims=True)
    wty, ety = f"tensor<{t_}x{k}xf32>", f"tensor<{t_}x{k}xi32>"
    flag = " normalized" if normalized else ""
    body = (f"  %w, %e = llmserve.moe_router %a0 top_k {k} scoring {scoring}{flag} : "
            f"{mlir_type(logits)} -> {wty}, {ety}")
    return ([logits], module([logits], body, [("%w", wty), ("%e", ety)]),
            [t(weights), t(experts.astype(np.float64))])


def routed_experts(t_, e, k):
    """[T, k] distinct experts per token, expert 0 chosen by most tokens
    (so that its pairs fill 4-row tiles) and one expert by none."""
    chosen = [np.concatenate([[0], RNG.choice(np.arange(1, e - 1), size=k - 1, replace=False)])
              if row % 4 else RNG.choice(e - 1, size=k, replace=False) for row in range(t_)]
    return np.array(chosen, dtype=np.int32)


def expert_linear_reference(x, w, experts, per_slot):
    t_, k = experts.shape
    rows = []
    for token in range(t_):
        for j in range(k):
            source = x[token * k + j] if per_slot else x[token]
            rows.append(t(w[experts[token, j]]) @ t(source))
    return torch.stack(rows)


def case_expert_linear(per_slot, t_=13, e=5, k=2, depth=40, n=24):
    """expert_linear on function arguments: edge tiles of rows and columns,
    a K that is no multiple of the vector width."""
    experts = routed_experts(t_, e, k)
    x, w = f32(t_ * k if per_slot else t_, depth), f32(e, n, depth)
    ty = f"tensor<{t_ * k}x{n}xf32>"
    flag = " per_slot" if per_slot else ""
    body = (f"  %y = llmserve.expert_linear %a0, %a1 experts %a2{flag} : {mlir_type(x)}, "
            f"{mlir_type(w)}, {mlir_type(experts)} -> {ty}")
    inputs = [x, w, experts]
    return inputs, module(inputs, body, [("%y", ty)]), [expert_linear_reference(x, w, experts,
                                                                                 per_slot)]


def case_expert_linear_checkpoint(t_=70, e=6, k=3, depth=96, n=80, transposed=False):
    """expert_linear of a stacked checkpoint weight, one tensor per expert
    (stored [K, N] with `transposed`): 70 tokens, so an expert's pairs span
    whole 4-row tiles and its columns more than one 64-column block."""
    experts = routed_experts(t_, e, k)
    x, w = f32(t_, depth), f32(e, n, depth)
    weights = {f"experts.{i}.w": (w[i].T.copy() if transposed else w[i]) for i in range(e)}
    wty, ty = mlir_type(w), f"tensor<{t_ * k}x{n}xf32>"
    flag = " transposed" if transposed else ""
    body = (f'  %w = llmserve.weight "experts.{{}}.w" stacked {e}{flag} : {wty}\n'
            f"  %y = llmserve.expert_linear %a0, %w experts %a1 : {mlir_type(x)}, {wty}, "
            f"{mlir_type(experts)} -> {ty}")
    inputs = [x, experts]
    return (inputs, module(inputs, body, [("%y", ty)]),
            [expert_linear_reference(x, w, experts, False)], weights)


def case_expert_linear_int8(t_=13, e=4, k=2, depth=96, n=40):
    """expert_linear of a stacked checkpoint weight quantized at load
    (int8_channel, each expert's rows on their own): x against each
    expert's values converted to f32, times its rows' scales."""
    experts = routed_experts(t_, e, k)
    x, w = f32(t_, depth), f32(e, n, depth)
    weights = {f"experts.{i}.w": w[i] for i in range(e)}
    quantized = [quantize_int8_channel(w[i]) for i in range(e)]
    dequantized = np.stack([values.astype(np.float64) * scales[:, None].astype(np.float64)
                            for values, scales in quantized])
    vty, sty, ty = (f"tensor<{e}x{n}x{depth}xi8>", f"tensor<{e}x{n}xf32>",
                    f"tensor<{t_ * k}x{n}xf32>")
    body = (f'  %v = llmserve.weight "experts.{{}}.w" stacked {e} quantized int8_channel values : {vty}\n'
            f'  %s = llmserve.weight "experts.{{}}.w" stacked {e} quantized int8_channel scales : {sty}\n'
            f"  %y = llmserve.expert_linear %a0, %v scales %s experts %a1 : {mlir_type(x)}, {vty}, "
            f"{mlir_type(experts)} -> {ty}")
    inputs = [x, experts]
    return (inputs, module(inputs, body, [("%y", ty)]),
            [expert_linear_reference(x, dequantized, experts, False)], weights)


def case_moe_combine(t_=11, k=3, n=40):
    x, weights = f32(t_ * k, n), np.abs(f32(t_, k))
    ref = (t(weights)[:, :, None] * t(x).reshape(t_, k, n)).sum(dim=1)
    ty = f"tensor<{t_}x{n}xf32>"
    body = f"  %y = llmserve.moe_combine %a0, %a1 : {mlir_type(x)}, {mlir_type(weights)} -> {ty}"
    return [x, weights], module([x, weights], body, [("%y", ty)]), [ref]


def expert_linear_invariance_pair():
    """The same 3 tokens' expert_linear rows in a 70-token step (expert 0's
    pairs in 4-row tiles on the CPU) and alone."""
    inputs, text, _ = case_expert_linear(False, t_=70, e=6, k=3, depth=96, n=80)
    x, w, experts = inputs
    few_text = text.replace("tensor<70x", "tensor<3x").replace("tensor<210x", "tensor<9x")
    return (inputs, text), ([x[:3], w, experts[:3]], few_text)


def decode_invariance_pair(window=None):
    """The same two decode rows (contexts 300 and 530: 2 and 3 chunks of 256
    keys) inside a mixed step, beside a 5-token prefill of a third sequence,
    and alone as a decode-only step: ((inputs, module) mixed, (inputs, module)
    decode-only). On sm_90 the two run different kernels, whose results for
    those rows must be bitwise equal (test/gpu/gpu_checks.py)."""
    inputs, text, _ = attention_case(window, context=[300, 530, 40], qlen=[1, 1, 5])
    q, k, v, kc, vc, slots, bt, cl, qs = inputs
    decode = [q[:2], k[:2], v[:2], kc, vc, slots[:2], bt[:2], cl[:2], qs[:3]]
    heads, d = 4, kc.shape[3]
    return (inputs, text), (decode, attention_module(decode, heads, 1 / math.sqrt(d), window))


def linear_invariance_pair(m):
    """The same 3 rows of x·Wᵀ + b in an m-row step and alone, with K cut
    into 8 splits: ((inputs, module) of m rows, (inputs, module) of 3). On
    sm_90 the large-tile (m > 64) or the 64-row kernel (m > 16), and the
    small-M kernel run them, whose results for those rows must be bitwise
    equal (test/gpu/gpu_checks.py)."""
    inputs, text, _ = case_linear(True, m=m, k=1024, n=256)
    few = [inputs[0][:3]] + inputs[1:]
    return (inputs, text), (few, linear_module(few))


def three_rows_pair(case):
    """The same 3 rows of a linear `case` with checkpoint weights, in the
    case's step and alone: ((inputs, module, weights) of its rows, (inputs,
    module, weights) of 3). On sm_90 a step of more than 64 rows runs the
    large-tile kernel and one of 17 to 64 the 64-row kernel, alone the
    small-M kernel; on the CPU a larger step tiles rows 4 at a time."""
    inputs, text, _, weights = case
    few_text = text.replace(f"tensor<{len(inputs[0])}x", "tensor<3x")
    return (inputs, text, weights), ([inputs[0][:3]], few_text, weights)


def invariance_pairs():
    """Every (name, pair) whose rows must be bitwise equal in the larger step
    and alone: decode rows with and without a window, linear rows (the
    three sm_90 kernels), int8, int4, FP8 and bf16 linear rows, and the rows
    of sibling linears."""
    return ([(f"attention_window_{window}", decode_invariance_pair(window))
             for window in (None, 200)] +
            [("linear_split_k", linear_invariance_pair(80)),
             ("linear_split_k_medium_rows", linear_invariance_pair(40)),
             # The VNNI kernel where the CPU has it.
             ("linear_int8", three_rows_pair(case_linear_int8(m=70, k=256, n=40))),
             # K = 256: two splits of a group each.
             ("linear_int4", three_rows_pair(case_linear_int4(m=70, k=256, n=48))),
             ("linear_int4_medium_rows", three_rows_pair(case_linear_int4(m=40, k=256, n=48))),
             # K = 320: three splits, the last group half past K.
             ("linear_fp8", three_rows_pair(case_linear_fp8(m=70, k=320, n=200))),
             ("linear_fp8_medium_rows", three_rows_pair(case_linear_fp8(m=40, k=320, n=200))),
             # The vdpbf16ps kernel where the CPU has it; alone, each row
             # takes a 1-row tile.
             ("linear_bf16", three_rows_pair(case_linear_bf16(m=70, k=256, n=40))),
             ("sibling_linears", sibling_linears_invariance_pair(70)),
             ("sibling_linears_medium_rows", sibling_linears_invariance_pair(40)),
             ("expert_linear", expert_linear_invariance_pair())])


def case_sample_greedy():
    s, v = 5, 300
    logits = f32(s, v)
    logits[2, 17] = logits[2, 250] = logits[2].max() + 1  # a tie: lowest index wins
    temperature, top_p, min_p = (np.zeros(s, np.float32), np.ones(s, np.float32),
                                 np.zeros(s, np.float32))
    top_k, seed, offset = np.zeros(s, np.int32), np.arange(s, dtype=np.int64), i32(0, 100, s)
    inputs = [logits, temperature, top_p, top_k, min_p, seed, offset]
    body = (f"  %y = llmserve.sample %a0 temperature %a1 top_p %a2 top_k %a3 min_p %a4 seed %a5 "
            f"rng_offset %a6 : {mlir_type(logits)}, {', '.join(mlir_type(a) for a in inputs[1:])}"
            f" -> tensor<{s}xi32>")
    ref = torch.from_numpy(np.argmax(logits, axis=1)).double()
    return inputs, module(inputs, body, [("%y", f"tensor<{s}xi32>")]), [ref]


def case_adjust_logits():
    s, v = 6, 70
    words = (v + 31) // 32
    logits = f32(s, v, scale=2.0)
    starts, tokens, counts = [0], [], []
    for row in range(s):
        n = 0 if row == 3 else int(RNG.integers(1, 20))  # row 3: no entries
        distinct = RNG.choice(v, size=n, replace=False)
        tokens += list(distinct)
        # 0: a prompt-only token; -1: a biased token in neither
        counts += list(RNG.integers(-1, 4, size=n))
        if row == 1:  # ignored: outside the vocabulary
            tokens += [v, -1]
            counts += [2, 1]
        starts.append(len(tokens))
    starts, tokens, counts = (np.array(a, np.int32) for a in (starts, tokens, counts))
    bias = RNG.uniform(-5, 5, len(tokens)).astype(np.float32)
    bias[::7] = -np.inf  # a banned token, as min_tokens bans end-of-sequence
    presence = RNG.uniform(-2, 2, s).astype(np.float32)
    frequency = RNG.uniform(-2, 2, s).astype(np.float32)
    repetition = RNG.uniform(0.5, 2, s).astype(np.float32)
    repetition[4] = 1.0
    # Rows 0 and 2 share mask row 1, row 5 uses row 0; row 4 names a row past
    # the end (no mask); the others have none.
    mask_index = np.array([1, -1, 1, -1, 2, 0], np.int32)
    allowed = RNG.random((2, words * 32)) < 0.4
    mask = np.packbits(allowed.reshape(2, words, 32)[..., ::-1], axis=-1, bitorder="big")
    mask = mask.view(">u4").astype(np.uint32).view(np.int32).reshape(-1)
    inputs = [logits, starts, tokens, counts, bias, presence, frequency, repetition,
              mask_index, mask]
    ty = mlir_type(logits)
    body = (f"  %y = llmserve.adjust_logits %a0 entries %a1 tokens %a2 counts %a3 bias %a4 "
            f"presence %a5 frequency %a6 repetition %a7 mask_index %a8 mask %a9 : "
            f"{', '.join(mlir_type(a) for a in inputs)} -> {ty}")
    # vLLM's formulation: masks and bin counts over the vocabulary.
    ref = t(logits)
    for row in range(s):
        history = torch.zeros(v, dtype=torch.bool)
        output_counts = torch.zeros(v, dtype=torch.float64)
        row_bias = torch.zeros(v, dtype=torch.float64)
        for e in range(starts[row], starts[row + 1]):
            if 0 <= tokens[e] < v:
                history[tokens[e]] = bool(counts[e] >= 0)
                output_counts[tokens[e]] = float(max(counts[e], 0))
                row_bias[tokens[e]] = float(bias[e])
        x = ref[row]
        penalised = torch.where(x > 0, x / float(repetition[row]), x * float(repetition[row]))
        penalised = penalised - float(frequency[row]) * output_counts
        penalised = penalised - float(presence[row]) * (output_counts > 0).double()
        x = torch.where(history, penalised, x) + row_bias
        if 0 <= mask_index[row] < len(allowed):
            x = torch.where(torch.from_numpy(allowed[mask_index[row], :v]), x,
                            torch.tensor(-np.inf, dtype=torch.float64))
        ref[row] = x
    return inputs, module(inputs, body, [("%y", ty)]), [ref]


class Masked:
    """A reference whose entries outside `mask` are unspecified."""

    def __init__(self, values, mask):
        self.values, self.mask = values, mask


def case_logprobs():
    s, v, k = 6, 300, 20
    logits = f32(s, v, scale=3.0)
    logits[2, [7, 40, 41, 299]] = logits[2].max() + 1  # ties: lower index first
    num = np.array([-1, 0, 4, 20, 1, 7], np.int32)
    tokens = i32(0, v, s)
    inputs = [logits, tokens, num]
    body = (f"  %lp, %tt, %tl = llmserve.logprobs %a0 tokens %a1 num %a2 : "
            f"{', '.join(mlir_type(a) for a in inputs)} -> tensor<{s}xf32>, "
            f"tensor<{s}x{k}xi32>, tensor<{s}x{k}xf32>")
    logp = torch.log_softmax(t(logits), dim=1)
    token_lp = logp[torch.arange(s), torch.from_numpy(tokens).long()]
    top_tokens = torch.full((s, k), -1.0, dtype=torch.float64)
    top_lp = torch.full((s, k), -math.inf, dtype=torch.float64)
    for row in range(s):
        order = np.argsort(-logits[row], kind="stable")[: max(num[row], 0)]
        top_tokens[row, : len(order)] = torch.from_numpy(order).double()
        top_lp[row, : len(order)] = logp[row, order]
    asked = torch.from_numpy(num >= 0)
    results = [("%lp", f"tensor<{s}xf32>"), ("%tt", f"tensor<{s}x{k}xi32>"),
               ("%tl", f"tensor<{s}x{k}xf32>")]
    return inputs, module(inputs, body, results), [
        Masked(token_lp, asked), Masked(top_tokens, asked), Masked(top_lp, asked)]


def case_logprobs_fewer_than_asked():
    """Rows with fewer ordered logits than top entries asked (a 10-token
    vocabulary; NaN ranks nowhere): the entries past them are token -1 with
    log-probability -inf. The NaN row's log-probabilities are NaN, unchecked."""
    s, v, k = 3, 10, 20
    logits = f32(s, v, scale=2.0)
    logits[1, [2, 5]] = -np.inf
    logits[2, [0, 3, 4]] = np.nan
    num = np.array([20, 12, 20], np.int32)
    tokens = np.array([3, 2, 1], np.int32)
    inputs = [logits, tokens, num]
    body = (f"  %lp, %tt, %tl = llmserve.logprobs %a0 tokens %a1 num %a2 : "
            f"{', '.join(mlir_type(a) for a in inputs)} -> tensor<{s}xf32>, "
            f"tensor<{s}x{k}xi32>, tensor<{s}x{k}xf32>")
    logp = torch.log_softmax(t(logits), dim=1)
    top_tokens = torch.full((s, k), -1.0, dtype=torch.float64)
    top_lp = torch.full((s, k), -math.inf, dtype=torch.float64)
    for row in range(s):
        ordered = [i for i in range(v) if not np.isnan(logits[row, i])]
        order = sorted(ordered, key=lambda i: (-logits[row, i], i))[: num[row]]
        top_tokens[row, : len(order)] = torch.tensor(order, dtype=torch.float64)
        top_lp[row, : len(order)] = logp[row, order]
    finite = torch.tensor([True, True, False])
    results = [("%lp", f"tensor<{s}xf32>"), ("%tt", f"tensor<{s}x{k}xi32>"),
               ("%tl", f"tensor<{s}x{k}xf32>")]
    return inputs, module(inputs, body, results), [
        Masked(logp[torch.arange(s), torch.from_numpy(tokens).long()], finite),
        top_tokens, Masked(top_lp, finite[:, None].expand(s, k))]


class Distribution:
    """The expected probability of each token: checked against the empirical
    frequencies of many independently seeded samples, with tokens outside the
    support never drawn."""

    def __init__(self, probs):
        self.probs = probs


class Support:
    """The tokens each row may draw (a boolean [rows, vocab]): every draw is
    among them."""

    def __init__(self, allowed):
        self.allowed = allowed


def filtered_probs(logits, temperature, top_k=0, top_p=1.0, min_p=0.0):
    """The sampling distribution after top_k, then top_p over the survivors,
    then min_p, as vLLM applies them."""
    x = torch.from_numpy(logits).double() / temperature
    keep = torch.ones_like(x, dtype=torch.bool)
    if top_k:
        keep &= x >= torch.topk(x, top_k).values[-1]
    if top_p < 1.0:
        p = torch.softmax(x.masked_fill(~keep, -math.inf), 0)
        order = torch.argsort(p, descending=True)
        before = torch.cumsum(p[order], 0) - p[order]  # mass of strictly better tokens
        keep_sorted = before < top_p
        keep &= torch.zeros_like(keep).scatter(0, order, keep_sorted)
    if min_p > 0.0:
        p = torch.softmax(x, 0)
        keep &= p >= min_p * p.max()
    return torch.softmax(x.masked_fill(~keep, -math.inf), 0)


def sample_distribution_case(temperature, top_k=0, top_p=1.0, min_p=0.0):
    s, v = 6000, 24
    row = f32(v, scale=1.5)
    logits = np.tile(row, (s, 1))
    inputs = [logits, np.full(s, temperature, np.float32), np.full(s, top_p, np.float32),
              np.full(s, top_k, np.int32), np.full(s, min_p, np.float32),
              RNG.integers(0, 2**62, s).astype(np.int64), i32(0, 1 << 20, s)]
    body = (f"  %y = llmserve.sample %a0 temperature %a1 top_p %a2 top_k %a3 min_p %a4 seed %a5 "
            f"rng_offset %a6 : {mlir_type(logits)}, {', '.join(mlir_type(a) for a in inputs[1:])}"
            f" -> tensor<{s}xi32>")
    probs = filtered_probs(row, temperature, top_k, top_p, min_p)
    return inputs, module(inputs, body, [("%y", f"tensor<{s}xi32>")]), [Distribution(probs)]


def sample_finite_noise_case():
    """A token far below the best whose seed, offset and index draw the
    largest 24 bits of splitmix64 (found by search): were that draw rounded
    up to u = 1, its Gumbel noise would be infinite and it would win. Every
    finite noise is within 20 of any other, so the best token, 30 above the
    rest, is the only right draw."""
    logits = np.array([[30, 0, 0, 0, 0, -30, 0, 0]], np.float32)
    inputs = [logits, np.ones(1, np.float32), np.ones(1, np.float32), np.zeros(1, np.int32),
              np.zeros(1, np.float32), np.array([8101579], np.int64), np.zeros(1, np.int32)]
    body = (f"  %y = llmserve.sample %a0 temperature %a1 top_p %a2 top_k %a3 min_p %a4 seed %a5 "
            f"rng_offset %a6 : {mlir_type(logits)}, {', '.join(mlir_type(a) for a in inputs[1:])}"
            f" -> tensor<1xi32>")
    return inputs, module(inputs, body, [("%y", "tensor<1xi32>")]), [t([0])]


def sample_large_vocabulary_case():
    """Rows of a 40,000-token vocabulary under top_k, top_p or both: the
    sampler's bisections start over more logits than fit in its lists (on
    sm_90, 16 a thread), so they pass over the row before they narrow. A
    token whose better tokens hold within 1e-5 of top_p may or may not be
    kept, as summing in float32 decides."""
    s, v = 48, 40000
    logits = f32(s, v, scale=3.0)
    settings = [(40, 1.0), (0, 0.5), (40, 0.8), (1000, 0.95)]
    top_k = np.array([settings[r % 4][0] for r in range(s)], np.int32)
    top_p = np.array([settings[r % 4][1] for r in range(s)], np.float32)
    temperature = np.full(s, 0.9, np.float32)
    allowed = np.stack([filtered_probs(logits[r], 0.9, int(top_k[r]),
                                       min(1.0, float(top_p[r]) + 1e-5)).numpy() > 0
                        for r in range(s)])
    inputs = [logits, temperature, top_p, top_k, np.zeros(s, np.float32),
              RNG.integers(0, 2**62, s).astype(np.int64), i32(0, 1 << 20, s)]
    body = (f"  %y = llmserve.sample %a0 temperature %a1 top_p %a2 top_k %a3 min_p %a4 seed %a5 "
            f"rng_offset %a6 : {mlir_type(logits)}, {', '.join(mlir_type(a) for a in inputs[1:])}"
            f" -> tensor<{s}xi32>")
    return inputs, module(inputs, body, [("%y", f"tensor<{s}xi32>")]), [Support(allowed)]


CASES = {
    "linear": lambda: case_linear(False),
    "linear_bias": lambda: case_linear(True),
    # Row and column edge tiles and a K that is no multiple of the vector width.
    "linear_edges": lambda: case_linear(True, m=9, k=37, n=70),
    # More than 64 rows: on sm_90 the large-tile kernel, where the cases above
    # (K a multiple of 8) run the small-M one.
    "linear_many_rows": lambda: case_linear(True, m=80, k=64, n=40),
    # 17 to 64 rows: on sm_90 the 64-row kernel, one split and a column edge
    # tile.
    "linear_medium_rows": lambda: case_linear(True, m=40, k=64, n=40),
    # On sm_90 K in 8 splits (16 column tiles, the last split short): the
    # small-M kernel's cluster reduction, and the large-tile kernel's sum of
    # the same splits.
    "linear_split_k": lambda: case_linear(True, m=5, k=1016, n=256),
    "linear_split_k_many_rows": lambda: case_linear(True, m=80, k=1016, n=256),
    "linear_split_k_medium_rows": lambda: case_linear(True, m=33, k=1016, n=256),
    # Checkpoint weights in panels: 8-row and 3-panel tiles with rows and
    # panels left over, blocks of rows and panels that end mid-tile, and k in
    # 256-long chunks with a partial last one.
    "linear_panels": lambda: case_linear_checkpoint(False, m=13, k=40, n=64),
    "linear_panels_bias": lambda: case_linear_checkpoint(True, m=77, k=600, n=176),
    # bf16 weights: 4-row tiles and a row left over, 4- and 8-column tiles;
    # a decode row with 6 columns left over; two workgroups of rows, blocks
    # of 16 and a short one, a short last workgroup of columns; a K that is
    # no multiple of 32 (the widening kernel).
    "linear_bf16": lambda: case_linear_bf16(m=13, k=96, n=40),
    "linear_bf16_decode": lambda: case_linear_bf16(m=1, k=256, n=70, bias=False),
    "linear_bf16_blocks": lambda: case_linear_bf16(m=70, k=64, n=136),
    "linear_bf16_ragged_k": lambda: case_linear_bf16(m=5, k=40, n=24),
    "linear_int8": lambda: case_linear_int8(m=13, k=600, n=176, bias=False),
    "linear_int8_bias_edges": lambda: case_linear_int8(m=9, k=37, n=70),
    # int4: a 1-row and a 13-row step (the two tiles), 3 groups of 128; bf16
    # storage, a transposed slice of rows.
    "linear_int4": lambda: case_linear_int4(m=13, k=384, n=40, bias=False),
    "linear_int4_decode": lambda: case_linear_int4(m=1, k=256, n=64),
    "linear_int4_bf16_transposed_rows": lambda: case_linear_int4(
        m=5, k=256, n=24, transposed=True, dtype=torch.bfloat16),
    # int4 linears of GPTQ and AWQ checkpoints, with their zero points: a
    # 13-row and a 1-row step, rows of a fused projection.
    "linear_int4_gptq": lambda: case_linear_int4_checkpoint("gptq", m=13, k=384, n=40),
    "linear_int4_gptq_v2_decode": lambda: case_linear_int4_checkpoint("gptq_v2", m=1, k=256,
                                                                       n=64, bias=False),
    "linear_int4_awq_rows": lambda: case_linear_int4_checkpoint("awq", m=5, k=256, n=48,
                                                                rows=(16, 40)),
    # An FP8 checkpoint's linears (block scales of 128 x 128; rows from a
    # block's first, a K that ends within a block), which sm_90 reads as
    # stored: the small-M, 64-row and large-tile kernels.
    "linear_fp8": lambda: case_linear_fp8(m=13, k=384, n=200),
    "linear_fp8_rows_ragged_k": lambda: case_linear_fp8(m=40, k=320, n=300, rows=(128, 300)),
    "linear_fp8_many_rows": lambda: case_linear_fp8(m=70, k=256, n=136, bias=False),
    "linear_int8_bf16_transposed_rows": lambda: case_linear_int8(
        m=5, k=64, n=48, transposed=True, dtype=torch.bfloat16),
    "linear_int8_blocks": lambda: case_linear_int8(m=13, k=640, n=296, bias=False),
    "linear_int8_blocks_ragged_n": lambda: case_linear_int8(m=3, k=640, n=300),
    "linear_int8_blocks_bias": lambda: case_linear_int8(m=70, k=128, n=40),
    "embedding": case_embedding,
    "embedding_scaled": lambda: case_embedding(scale=4.898979485566356),
    "embedding_tied_linear": case_tied_embedding,
    # 70 rows: two row blocks; 112 columns: 7 panels, a full block of 6 and
    # one (3-panel tiles and a single); k = 300: a full and a partial chunk.
    "gated_mlp_region": lambda: case_gated_mlp(m=70, k=300, n=112),
    "gated_mlp_region_input": lambda: case_gated_mlp(m=9, k=32, n=48, return_up=True),
    "linear_bias_gelu_region": lambda: case_linear_bias_gelu(m=13, k=40, n=48),
    # A layer's q, k and v: one kernel on sm_90 (its small-M, 64-row and
    # large-tile forms), whose blocks each take a tile of one linear.
    "sibling_linears": lambda: case_sibling_linears(m=13, k=256, ns=(200, 40, 40)),
    "sibling_linears_medium_rows": lambda: case_sibling_linears(m=40, k=256, ns=(200, 40, 40)),
    "sibling_linears_many_rows": lambda: case_sibling_linears(m=70, k=384, ns=(128, 72, 64),
                                                              bias=2),
    "gather_rows": case_gather_rows,
    "rms_norm": lambda: norm_case("rms_norm", False),
    "rms_norm_residual": lambda: norm_case("rms_norm", True),
    # Per-head norms (Qwen3's q and k): 3 heads of 16, and 2 groups of 24
    # after a residual add.
    "rms_norm_per_head": lambda: norm_case("rms_norm", False, group=16),
    # Gemma's norms: (1 + weight), per head for q and k.
    "rms_norm_weight_offset": lambda: norm_case("rms_norm", True, weight_offset=1.0),
    "rms_norm_per_head_weight_offset": lambda: norm_case("rms_norm", False, group=12,
                                                         weight_offset=1.0),
    "rms_norm_grouped_residual": lambda: norm_case("rms_norm", True, group=24),
    "layer_norm_grouped": lambda: norm_case("layer_norm", False, group=16),
    "layer_norm": lambda: norm_case("layer_norm", False),
    "layer_norm_residual": lambda: norm_case("layer_norm", True),
    "rope_neox": lambda: rope_case("neox", 16, None),
    "rope_gptj_partial": lambda: rope_case("gptj", 8, None),
    "rope_neox_partial": lambda: rope_case("neox", 12, None),
    "rope_linear": lambda: rope_case("neox", 16, {"type": "linear", "factor": 2.0}),
    "rope_llama3": lambda: rope_case("neox", 16, {"type": "llama3", "factor": 8.0, "low": 1.0,
                                                  "high": 4.0, "original": 64}),
    "rope_longrope": case_rope_longrope,
    # A layer's q and k: one kernel on sm_90; partial rotary copies the rest.
    "sibling_ropes": lambda: case_sibling_ropes("neox", 16),
    "sibling_ropes_gptj_partial": lambda: case_sibling_ropes("gptj", 8),
    "silu_mul": case_silu_mul,
    "gelu_mul_tanh": lambda: case_gelu_mul("tanh"),
    "softcap": case_softcap,
    "gelu_mul_exact": lambda: case_gelu_mul("none"),
    "gelu_tanh": lambda: gelu_case("tanh"),
    "gelu_exact": lambda: gelu_case("none"),
    "kv_write_paged_attention": lambda: attention_case(None),
    "paged_attention_sliding_window": lambda: attention_case(3),
    # A layer's ropes, then its writes: one kernel on sm_90. Prefill and
    # decode rows; then a decode-only step over several 256-key chunks with
    # partial GPT-J rotation.
    "rope_kv_write_paged_attention": lambda: attention_case(None, rope=("neox", 8)),
    "rope_kv_write_paged_attention_decode": lambda: attention_case(
        None, context=[300, 7], qlen=[1, 1], d=16, rope=("gptj", 12)),
    # Gemma 2's attention soft-capping, small enough to bend the scores; and
    # over several 256-key chunks (sm_90's split-context kernels).
    "paged_attention_softcap": lambda: attention_case(None, softcap=0.5),
    "paged_attention_decode_softcap": lambda: attention_case(None, context=[300, 7], qlen=[1, 1],
                                                             softcap=0.5),
    "paged_attention_head_dim_12": lambda: attention_case(None, d=12),
    # Groups of 8 (two workgroups of 4 heads per KV head on the CPU), of 6
    # (two of 3) and of 1 (multi-head attention).
    "paged_attention_group_8": lambda: attention_case(None, heads=8, kvh=1),
    "paged_attention_group_6_decode": lambda: attention_case(
        None, context=[300, 7], qlen=[1, 1], heads=12, kvh=2),
    "paged_attention_group_1": lambda: attention_case(3, heads=2, kvh=2),
    "paged_attention_head_dim_6": lambda: attention_case(3, d=6),
    # Decode-only steps over several 256-key chunks (sm_90: decode and merge
    # kernels), one with a window that leaves the first chunk empty.
    "paged_attention_decode_long": lambda: attention_case(None, context=[300, 530, 7],
                                                          qlen=[1, 1, 1]),
    "paged_attention_decode_window": lambda: attention_case(200, context=[300, 530],
                                                            qlen=[1, 1]),
    # FP8 e4m3 caches: one with the scale of a checkpoint without KV scales,
    # one with other scales, over several 256-key chunks.
    "paged_attention_fp8": lambda: attention_case(None, kv_scales=(1.0, 1.0)),
    "paged_attention_fp8_scaled_decode": lambda: attention_case(
        None, context=[300, 1, 530, 7], qlen=[1, 1, 1, 1], kv_scales=(0.5, 0.125)),
    # Scales per KV head (compressed-tensors' attn_head), a step of prefill
    # and decode, and a decode-only one over 4 KV heads (sm_90's
    # split-context kernels).
    "paged_attention_fp8_per_head": lambda: attention_case(
        None, kv_scales=([0.5, 0.03125], [2.0, 0.25])),
    "paged_attention_fp8_per_head_decode": lambda: attention_case(
        None, context=[300, 1, 530, 7], qlen=[1, 1, 1, 1], heads=8, kvh=4,
        kv_scales=([0.5, 0.0625, 1.0, 0.25], [0.125, 2.0, 0.5, 0.03125])),
    "moe_router_softmax_normalized": lambda: case_moe_router("softmax", True),
    "moe_router_sigmoid_tie": lambda: case_moe_router("sigmoid", False, tie=True),
    "moe_router_top_1": lambda: case_moe_router("softmax", False, t_=4, e=3, k=1),
    "expert_linear": lambda: case_expert_linear(False),
    "expert_linear_per_slot": lambda: case_expert_linear(True),
    "expert_linear_stacked_weight": case_expert_linear_checkpoint,
    "expert_linear_stacked_transposed": lambda: case_expert_linear_checkpoint(
        t_=9, e=4, k=2, depth=32, n=16, transposed=True),
    "expert_linear_int8": case_expert_linear_int8,
    "moe_combine": case_moe_combine,
    "adjust_logits": case_adjust_logits,
    "logprobs": case_logprobs,
    "logprobs_fewer_than_asked": case_logprobs_fewer_than_asked,
    "sample_greedy": case_sample_greedy,
    "sample_temperature": lambda: sample_distribution_case(1.3),
    "sample_top_k": lambda: sample_distribution_case(0.8, top_k=4),
    "sample_top_p": lambda: sample_distribution_case(1.0, top_p=0.6),
    "sample_top_k_top_p": lambda: sample_distribution_case(1.0, top_k=6, top_p=0.8),
    "sample_min_p": lambda: sample_distribution_case(1.0, min_p=0.2),
    "sample_large_vocabulary": sample_large_vocabulary_case,
    "sample_finite_noise": sample_finite_noise_case,
}
# Cases of ops that only sm_90 has kernels for, which test/gpu/gpu_checks.py
# compares with their references: W8A8 linears of the small-M, 64-row and
# large-tile kernels, K ending within a group.
SM90_CASES = {
    "linear_w8a8": lambda: case_linear_w8a8(m=13, k=384, n=200),
    "linear_w8a8_ragged_k": lambda: case_linear_w8a8(m=40, k=320, n=300),
    "linear_w8a8_many_rows": lambda: case_linear_w8a8(m=70, k=256, n=136, bias=False),
}


def sm90_invariance_pairs():
    """The invariance pairs of SM90_CASES' ops."""
    return [("linear_w8a8", three_rows_pair(case_linear_w8a8(m=70, k=320, n=200))),
            ("linear_w8a8_medium_rows", three_rows_pair(case_linear_w8a8(m=40, k=320, n=200)))]


# Largest allowed |empirical - expected| frequency over 6000 samples (about
# five standard deviations of a frequency near 0.5).
FREQUENCY_TOLERANCE = 0.035


def run(*args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}\n{result.stdout}{result.stderr}")


def write_weights(directory, weights):
    """<directory>/model.safetensors of a case's checkpoint `weights` (name
    -> array, tensor or E4M3 codes), which `llmrun call --weights` binds."""
    write_safetensors(os.path.join(directory, "model.safetensors"),
                      {name: torch.from_numpy(a) if isinstance(a, np.ndarray) else a
                       for name, a in weights.items()})


def compile_and_call(build, directory, inputs, text, weights=None):
    """`text` compiled into <directory>/op.llmb and run on `inputs` (and the
    checkpoint `weights`, name -> array or tensor); the results."""
    os.makedirs(directory, exist_ok=True)
    source = os.path.join(directory, "op.mlir")
    with open(source, "w") as f:
        f.write(text)
    bundle = os.path.join(directory, "op.llmb")
    cpu = ("--cpu", TARGET_CPU) if TARGET_CPU else ()
    run(os.path.join(build, "bin", "llmc"), "compile", source, "-o", bundle, *cpu)
    paths = []
    for i, a in enumerate(inputs):
        paths.append(os.path.join(directory, f"input_{i}.npy"))
        np.save(paths[-1], a)
    out = os.path.join(directory, "out")
    checkpoint = []
    if weights:
        write_weights(directory, weights)
        checkpoint = ["--weights", directory]
    run(os.path.join(build, "bin", "llmrun"), "call", bundle, "--entry", "op",
        "--input", *paths, "--output-dir", out, *checkpoint)
    return [np.load(os.path.join(out, f"result_{i}.npy")) for i in range(len(os.listdir(out)))]


def check_invariance(build, work):
    """Rows computed in a larger step and alone are bitwise equal: decode rows
    in a mixed and a decode-only step, and linear rows."""
    ok = True
    for name, pair in invariance_pairs():
        larger, alone = (compile_and_call(build, os.path.join(work, "invariance", name, kind),
                                          inputs, text, *weights)
                         for kind, (inputs, text, *weights) in zip(("larger", "alone"), pair))
        rows = len(alone[0])
        passed = all(np.array_equal(m[:rows], d) for m, d in zip(larger, alone))
        print(f"{'ok' if passed else 'FAIL'} rows bitwise equal in a larger step and alone "
              f"({name})")
        ok &= passed
    return ok


def check(build, work, name):
    inputs, text, references, *weights = CASES[name]()
    results = compile_and_call(build, os.path.join(work, name), inputs, text, *weights)
    worst, ok = 0.0, True
    for i, want in enumerate(references):
        got = results[i]
        if isinstance(want, Support):
            passed = bool(want.allowed[np.arange(len(got)), got].all())
            ok &= passed
            worst = max(worst, 0.0 if passed else 1.0)
            continue
        if isinstance(want, Distribution):
            counts = np.bincount(got, minlength=len(want.probs)).astype(np.float64)
            outside = counts[(want.probs == 0).numpy()].sum()
            error = float(np.abs(counts / len(got) - want.probs.numpy()).max())
            ok &= outside == 0 and error < FREQUENCY_TOLERANCE
            worst = max(worst, error)
            continue
        got = torch.from_numpy(got.astype(np.float64))
        if isinstance(want, Masked):
            got, want = got[want.mask], want.values[want.mask]
        infinite = torch.isinf(want)
        ok &= torch.equal(got[infinite], want[infinite])
        got, want = got[~infinite], want[~infinite]
        error = float((got - want).abs().max() / max(float(want.abs().max()), 1e-30))
        ok &= error < TOLERANCE
        worst = max(worst, error)
    print(f"{'ok' if ok else 'FAIL'} {name}: max error {worst:.2e}")
    return ok


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    global TARGET_CPU
    build, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    names = sys.argv[3:]
    if names[:1] == ["--cpu"]:
        if len(names) < 2 or names[1] not in NO_VNNI_CPUS:
            sys.exit(f"--cpu takes one of {', '.join(NO_VNNI_CPUS)}")
        TARGET_CPU, names = names[1], names[2:]
    chosen = bool(names)
    names = names or list(CASES)
    torch.set_num_threads(1)
    results = []
    for name in names:
        try:
            results.append(check(build, work, name))
        except RuntimeError as e:
            print(f"FAIL {name}: {e}")
            results.append(False)
    if not chosen:
        results.append(check_invariance(build, work))
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
