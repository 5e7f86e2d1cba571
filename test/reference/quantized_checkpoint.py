"""Linears a checkpoint stores quantized, as the formats define them:
AutoGPTQ's 4 bits (quant_method gptq; checkpoint_format gptq or gptq_v2),
AutoAWQ's GEMM layout (quant_method awq) and FP8 e4m3 weights with a scale
per block of 128 x 128 (quant_method fp8, transformers' FineGrainedFP8),
and compressed-tensors' FP8, int8 and packed int4 weights (quant_method
compressed-tensors, llm-compressor). `dequantize` turns each quantized
module's qweight, qzeros and scales (and GPTQ's g_idx) back into the float
`<module>.weight` [N, K] the models read, W = (q - z) * s per group, each FP8
weight into weight * weight_scale_inv of its block, and each compressed-
tensors linear into its values times the scales its config group's strategy
shares among them."""

import re

import numpy as np
import torch

from fp8 import e4m3_values
from safetensors_io import E4M3Codes

AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)


def unpack_nibbles(words):
    """int32 [..., C] -> [..., C, 8]: nibble i of each word (bits 4i)."""
    shifts = torch.arange(0, 32, 4, dtype=torch.int64)
    return (words.to(torch.int64)[..., None] >> shifts) & 0xF


def gptq_layout(config):
    """'gptq', 'gptq_v2' or 'awq' for a config.json holding a 4-bit GPTQ or
    AWQ quantization_config, else None."""
    q = config.get("quantization_config")
    if not q or q.get("quant_method") not in ("gptq", "awq"):
        return None
    if q.get("bits") != 4 or q.get("group_size") != 128:
        raise ValueError(f"quantization_config {q} is not 4 bits in groups of 128")
    return "awq" if q["quant_method"] == "awq" else q.get("checkpoint_format", "gptq")


def dequantize_linear(layout, qweight, qzeros, scales, g_idx=None):
    """The float [N, K] weight of one quantized linear."""
    if layout == "awq":
        # qweight [K, N/8], qzeros [G, N/8]: word j's nibble i is column 8j + order[i].
        order = torch.tensor(AWQ_ORDER)
        q = torch.empty(qweight.shape[0], qweight.shape[1] * 8, dtype=torch.int64)
        z = torch.empty(qzeros.shape[0], qzeros.shape[1] * 8, dtype=torch.int64)
        for packed, out in ((qweight, q), (qzeros, z)):
            nibbles = unpack_nibbles(packed)  # [rows, N/8, 8]
            for i in range(8):
                out[:, order[i]::8] = nibbles[:, :, i]
        k = q.shape[0]
        group = torch.arange(k) // (k // scales.shape[0])
    else:
        # qweight [K/8, N]: word r's nibble i is row 8r + i; qzeros [G, N/8]
        # along N, each zero point minus one in the gptq layout.
        q = unpack_nibbles(qweight).permute(0, 2, 1).reshape(-1, qweight.shape[1])
        z = unpack_nibbles(qzeros).reshape(qzeros.shape[0], -1)
        if layout == "gptq":
            z = z + 1
        k = q.shape[0]
        group = g_idx.to(torch.int64) if g_idx is not None else torch.arange(k) // 128
    s = scales.to(torch.float64)
    w = (q.to(torch.float64) - z[group].to(torch.float64)) * s[group]  # [K, N]
    return w.T.contiguous()


FP8_BLOCK = 128


def dequantize_fp8(codes, scale_inv):
    """The float64 [N, K] weight of FP8 codes [N, K] and their block scales
    [ceil(N / 128), ceil(K / 128)]."""
    n, k = codes.shape
    scales = scale_inv.to(torch.float64)
    block = scales.repeat_interleave(FP8_BLOCK, 0)[:n].repeat_interleave(FP8_BLOCK, 1)[:, :k]
    return torch.from_numpy(e4m3_values(codes.numpy())) * block


def compressed_scheme(q, module):
    """The format and weights arguments of the compressed-tensors config
    group whose targets match the linear `module` (a regular expression
    after "re:", matched from the start, or the class name Linear), or None
    for an ignored or unmatched one."""
    def matches(target):
        return (re.match(target[3:], module) is not None if target.startswith("re:")
                else target in ("Linear", module))
    if any(matches(target) for target in q.get("ignore", [])):
        return None
    for group in q["config_groups"].values():
        if any(matches(target) for target in group["targets"]):
            return group.get("format", q.get("format")), group["weights"]
    return None


def dequantize_compressed(form, weights, tensors, module):
    """The float64 [N, K] weight of a compressed-tensors linear."""
    scale = tensors.pop(module + ".weight_scale").to(torch.float64)
    if form == "pack-quantized":
        n, k = tensors.pop(module + ".weight_shape").tolist()
        nibbles = unpack_nibbles(tensors.pop(module + ".weight_packed"))  # [N, K/8, 8]
        values = (nibbles.reshape(n, k) - 8).to(torch.float64)
    else:
        stored = tensors.pop(module + ".weight")
        values = (torch.from_numpy(e4m3_values(stored.codes.numpy())) if form == "float-quantized"
                  else stored.to(torch.float64))
    n, k = values.shape
    strategy = weights["strategy"]
    if strategy == "tensor":
        full = scale.reshape(1, 1).expand(n, k)
    elif strategy == "channel":
        full = scale.reshape(n, 1).expand(n, k)
    elif strategy == "group":
        full = scale.repeat_interleave(weights["group_size"], 1)
    elif strategy == "block":
        rows, cols = weights["block_structure"]
        full = scale.repeat_interleave(rows, 0)[:n].repeat_interleave(cols, 1)[:, :k]
    else:
        raise ValueError(f"{module}: strategy {strategy!r} is not a compressed-tensors one")
    return values * full


def dequantize(config, weights):
    """`weights` with every quantized module's tensors replaced by its
    `<module>.weight`, exactly (float64)."""
    q = config.get("quantization_config") or {}
    if q.get("quant_method") == "compressed-tensors":
        out = dict(weights)
        modules = {n[:-len(".weight_scale")] for n in weights if n.endswith(".weight_scale")}
        for module in sorted(modules):
            scheme = compressed_scheme(q, module)
            if scheme is None:
                raise ValueError(f"{module} has a weight_scale but no config group")
            out[module + ".weight"] = dequantize_compressed(*scheme, out, module)
        return out
    if q.get("quant_method") == "fp8":
        if q.get("weight_block_size") != [FP8_BLOCK, FP8_BLOCK]:
            raise ValueError(f"quantization_config {q} is not FP8 in blocks of 128 x 128")
        out = dict(weights)
        for name in [n for n, t in weights.items() if isinstance(t, E4M3Codes)]:
            out[name] = dequantize_fp8(weights[name].codes, out.pop(name + "_scale_inv"))
        return out
    layout = gptq_layout(config)
    if layout is None:
        return weights
    out = dict(weights)
    for name in [n for n in weights if n.endswith(".qweight")]:
        module = name[:-len(".qweight")]
        tensors = [out.pop(module + suffix) for suffix in (".qweight", ".qzeros", ".scales")]
        g_idx = out.pop(module + ".g_idx", None)
        w = dequantize_linear(layout, *tensors, g_idx)
        out[module + ".weight"] = w
    return out
