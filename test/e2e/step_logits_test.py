#!/usr/bin/python3
"""End to end: Hugging Face checkpoint -> llmc import -> llmc compile -> the
CPU executor over a paged KV cache, against an independent torch reference.

Two sequences share every step and one KV pool whose block tables are
deliberately non-contiguous: sequence A is prefilled in a 7-token chunk and a
6-token chunk, sequence B in one 5-token chunk, then both decode 4 tokens.
Every step's logits must match the reference's, fed the same chunks,
and greedy decoding through the compiled sampler (the `step` entry point)
must continue the fixture's prompt exactly as the reference does. A few
fixtures also run with an FP8 KV cache, against the reference storing its
keys and values in e4m3.

Usage: step_logits_test.py <build-dir> <work-dir> [fixture ...]
"""

import json
import os
import random
import subprocess
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
import torch_reference  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import op_numerics_test  # noqa: E402  (host_has_vnni)

BLOCK_SIZE = 4
NUM_BLOCKS = 12
# Physical blocks of each sequence, in logical order: scattered on purpose.
BLOCK_TABLES = {"A": [9, 2, 7, 0, 5], "B": [1, 8, 3, 6]}
# The tokens each sequence feeds per step: A in chunks of 7 and 6 then four
# decodes, B in one chunk of 5 then five decodes.
SCHEDULE = [{"A": 7, "B": 5}, {"A": 6, "B": 1}] + [{"A": 1, "B": 1}] * 4
# Relative error bound: max |ours - reference| / max |reference| (an FP8,
# compressed-tensors 8-bit or act-order GPTQ checkpoint's weights are
# dequantized at load); for a GPTQ, AWQ or compressed-tensors checkpoint
# whose int4 linears run on the VNNI kernel, which
# quantizes activations to int8 in blocks of 64 (op_numerics_test.py checks
# that kernel exactly), a looser one. Those checkpoints also run compiled
# for a CPU without VNNI (PORTABLE_CPU), whose int4 kernel computes in f32.
# The bf16 fixtures also run with their linears' weights bf16 (--dtype bf16),
# exactly as they are stored: compiled for a CPU without AVX-512 BF16, which
# widens them to f32, within TOLERANCE; for one with it (the host, where it
# has it), whose linears round their activations to bf16 for vdpbf16ps as a
# GPU's do, within BF16_ACTIVATIONS_TOLERANCE (op_numerics_test.py checks
# that kernel exactly).
TOLERANCE = 1e-4
QUANTIZED_TOLERANCE = 5e-2
QUANTIZED_MARGIN = 0.25
BF16_ACTIVATIONS_TOLERANCE = 3e-2
PORTABLE_CPU = "x86-64-v3"
# With an FP8 KV cache (--kv-cache-dtype fp8) the reference rounds keys and
# values to e4m3 as they are stored. A key computed in f32 here and in
# float64 there may round to neighbouring codes (1/16 apart) where it falls
# near a midpoint, so the bound is looser; leaving the cache unrounded in
# the reference costs more than it allows (about 10x; the test prints both).
# A checkpoint with KV-cache scales has its keys and values divided by
# them, in the reference too: one per tensor (llama_compressed_tensors,
# compiled for a CPU without VNNI, whose int4 kernel adds no error of its
# own) or one per KV head (qwen3_moe_compressed_tensors).
FP8_KV_FLAGS = ("--kv-cache-dtype", "fp8")
FP8_KV_FIXTURES = {"llama": (), "gemma2": (), "qwen3_moe": (),
                   "llama_compressed_tensors": ("--cpu", PORTABLE_CPU),
                   "qwen3_moe_compressed_tensors": ()}
FP8_KV_TOLERANCE = 5e-3


def run(*args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(args)}\n{result.stdout}{result.stderr}")
    return result.stdout


def build_steps(tokens):
    """The step-contract arrays of every step of SCHEDULE, and for each step
    the (sequence, position) of each logits row."""
    done = {name: 0 for name in tokens}
    steps, rows_at = [], []
    for chunk in SCHEDULE:
        step = {k: [] for k in ("token_ids", "positions", "context_len",
                                "block_table", "slot_mapping", "logits_rows")}
        step["query_start"] = [0]
        rows = []
        for name, count in chunk.items():
            table = BLOCK_TABLES[name]
            for position in range(done[name], done[name] + count):
                step["token_ids"].append(tokens[name][position])
                step["positions"].append(position)
                step["slot_mapping"].append(
                    table[position // BLOCK_SIZE] * BLOCK_SIZE + position % BLOCK_SIZE)
            done[name] += count
            step["query_start"].append(len(step["token_ids"]))
            step["context_len"].append(done[name])
            step["block_table"].append(table)
            step["logits_rows"].append(len(step["token_ids"]) - 1)
            rows.append((name, done[name] - 1))
        steps.append(step)
        rows_at.append(rows)
    return steps, rows_at


def reference_logits(model, chunks, tokens, store=None):
    """The reference's logits of `tokens` fed in chunks of the given sizes
    against its KV cache, as the steps feed them: the same as one pass over
    the whole sequence, except where a pass's length matters (LongRoPE's
    factors, docs/models.md). `store`: what the cache makes of keys and
    values."""
    cache, logits, done = torch_reference.KVCache(model.layers, store), [], 0
    for count in chunks:
        logits.append(model.forward(tokens[done:done + count], cache))
        done += count
    return torch.cat(logits)


def steps_and_reference(checkpoint, store=None):
    """The steps of SCHEDULE over random tokens (seeded by the fixture's name),
    the (sequence, position) of each step's logits rows, the reference's
    logits by sequence ([positions, vocab]), the tokens by sequence and the
    reference model. `store`: what the reference's KV cache makes of keys
    and values."""
    name = os.path.basename(checkpoint)
    with open(os.path.join(checkpoint, "config.json")) as f:
        vocab = json.load(f)["vocab_size"]
    rng = random.Random(name)
    lengths = {n: sum(chunk[n] for chunk in SCHEDULE) for n in BLOCK_TABLES}
    tokens = {n: [rng.randrange(vocab) for _ in range(lengths[n])] for n in lengths}
    steps, rows_at = build_steps(tokens)
    model = torch_reference.load_model(checkpoint)
    with torch.no_grad():
        reference = {n: reference_logits(model, [chunk[n] for chunk in SCHEDULE], tokens[n],
                                         store)
                     for n in tokens}
    return steps, rows_at, reference, tokens, model


def check_fixture(build, work, checkpoint, flags=()):
    """The fixture compiled with llmc compile's `flags`."""
    name = os.path.basename(checkpoint) + (f" ({' '.join(flags)})" if flags else "")
    bin_dir = os.path.join(build, "bin")
    mlir = os.path.join(work, os.path.basename(checkpoint) + ".mlir")
    bundle = os.path.join(work, os.path.basename(checkpoint) + "".join(flags) + ".llmb")
    run(os.path.join(bin_dir, "llmc"), "import", checkpoint, "-o", mlir,
        "--logits-entry", f"--block-size={BLOCK_SIZE}")
    run(os.path.join(bin_dir, "llmc"), "compile", mlir, "-o", bundle, *flags)

    with open(os.path.join(checkpoint, "config.json")) as f:
        stored = json.load(f).get("quantization_config") or {}
    # Act-order GPTQ linears are dequantized at load, as FP8 ones and
    # compressed-tensors' 8-bit ones are; its packed ones are int4.
    packed = any(group.get("format", stored.get("format")) == "pack-quantized"
                 for group in stored.get("config_groups", {}).values())
    quantized = (stored.get("quant_method") in ("gptq", "awq") and not stored.get("desc_act")
                 or packed)
    vnni = op_numerics_test.host_has_vnni() and "--cpu" not in flags
    tolerance = QUANTIZED_TOLERANCE if quantized and vnni else TOLERANCE
    if "bf16" in flags and op_numerics_test.host_has_bf16() and "--cpu" not in flags:
        tolerance = BF16_ACTIVATIONS_TOLERANCE
    fp8_kv = "fp8" in flags
    store = torch_reference.fp8_kv(torch_reference.kv_scales(checkpoint)) if fp8_kv else None
    if fp8_kv:
        tolerance = FP8_KV_TOLERANCE
    steps, rows_at, reference, _, model = steps_and_reference(checkpoint, store)
    steps_path = bundle[:-len(".llmb")] + ".steps.json"
    with open(steps_path, "w") as f:
        json.dump({"num_blocks": NUM_BLOCKS, "steps": steps}, f)
    ours = json.loads(run(os.path.join(bin_dir, "llmserve-step-driver"), bundle,
                          steps_path))["logits"]

    def worst_error(reference):
        return max(float((torch.tensor(row, dtype=torch.float64) - reference[seq][position])
                         .abs().max() / reference[seq][position].abs().max())
                   for rows, logits in zip(rows_at, ours)
                   for (seq, position), row in zip(rows, logits))

    worst = worst_error(reference)
    if worst > tolerance:
        print(f"FAIL {name}: relative error {worst:.2e} > {tolerance:.0e}")
        return False
    note = ""
    if fp8_kv:
        unrounded = steps_and_reference(checkpoint)[2]
        note = f" ({worst_error(unrounded):.2e} against a reference with a float64 cache)"
    # Greedy continuation through the compiled sampler, token for token.
    with open(os.path.join(checkpoint, "reference.json")) as f:
        reference_json = json.load(f)
    prompt, want = reference_json["prompt"], reference_json["greedy"]
    if fp8_kv:
        with torch.no_grad():
            want = torch_reference.greedy(model, prompt, len(want), store)[0]
    got = json.loads(run(os.path.join(bin_dir, "llmserve-step-driver"), bundle,
                         "--greedy", str(len(want)), "--prompt",
                         ",".join(map(str, prompt))))
    # The VNNI int4 kernel's error may flip a near-tie: its continuation is
    # the reference's up to the first step whose two best logits are closer
    # than QUANTIZED_MARGIN (the same prompt compiled for PORTABLE_CPU must
    # continue it to the end).
    checked = len(want)
    if tolerance == QUANTIZED_TOLERANCE:
        checked = next((i for i, m in enumerate(reference_json["greedy_margins"])
                        if m < QUANTIZED_MARGIN), len(want))
    if got[:checked] != want[:checked]:
        print(f"FAIL {name}: greedy continuation {got}, reference {want}")
        return False
    agreed = "" if checked == len(want) else f" to the first near-tie ({checked} of {len(want)})"
    print(f"ok {name}: {len(steps)} steps, worst relative error {worst:.2e}{note}, "
          f"greedy {got} as the reference{agreed}")
    return True


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    build, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    names = sys.argv[3:] or ["llama"]
    torch.set_num_threads(1)
    fixtures = os.path.join(work, "fixtures")
    run("/usr/bin/python3", os.path.join(ROOT, "test", "fixtures", "make_fixtures.py"),
        fixtures, "--only", ",".join(names))
    results = [check_fixture(build, work, os.path.join(fixtures, n)) for n in names]
    results += [check_fixture(build, work, os.path.join(fixtures, n), ("--cpu", PORTABLE_CPU))
                for n in names
                if n.startswith("llama_gptq") or n in ("llama_awq", "llama_compressed_tensors")]
    # bf16 checkpoints with their linears' weights kept bf16, for the host and
    # for a CPU without AVX-512 BF16.
    results += [check_fixture(build, work, os.path.join(fixtures, n), ("--dtype", "bf16", *cpu))
                for n in names if n.endswith("_bf16")
                for cpu in ((), ("--cpu", PORTABLE_CPU))]
    results += [check_fixture(build, work, os.path.join(fixtures, n),
                              FP8_KV_FLAGS + FP8_KV_FIXTURES[n])
                for n in names if n in FP8_KV_FIXTURES]
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
