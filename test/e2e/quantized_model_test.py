#!/usr/bin/python3
"""The shipped model (examples/kjv-devil-tiny) compiled with --quantize int8
and int4, with an FP8 KV cache (--kv-cache-dtype fp8), stored as an FP8
checkpoint (its decoder layers' linears in e4m3 with a scale per block of
128 x 128, as Qwen's FP8 checkpoints are), and stored as compressed-tensors
checkpoints in llm-compressor's FP8-dynamic, W8A8 and W4A16 schemes, against
the same model in f32:

- `llmrun bench ppl` of the f32 bundle equals the perplexity the torch
  reference computes on the same windows (so the scoring is right);
- the int8 bundle's perplexity on a text the model did not train on is at
  most 1% above the f32 bundle's, with a small mean KL divergence;
- the int4 bundle's at most 10% above, with a mean KL divergence below 0.3
  nats (and so the compressed-tensors W4A16 checkpoint's);
- the FP8 KV cache's, the FP8 checkpoint's and the compressed-tensors FP8
  and int8 checkpoints' at most 1% above, with a mean KL divergence below
  0.02 nats;
- the int8 and FP8 KV bundles' greedy continuations of the end-to-end prompts
  equal the f32 bundle's
  up to the first step where the reference's two best logits are closer than
  MARGIN (a near-tie that a rounding error may flip);
- bench ppl refuses a bundle without a `logits` entry point, a baseline of
  another vocabulary (the llama fixture's), a context past the model's and a
  text of fewer than 2 tokens.

Usage: quantized_model_test.py <build-dir> <work-dir>
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
sys.path.insert(0, os.path.join(ROOT, "test", "fixtures"))
import torch_reference  # noqa: E402
from checkpoints import quantized  # noqa: E402
from safetensors_io import read_checkpoint, write_safetensors  # noqa: E402

MODEL = os.path.join(ROOT, "examples", "kjv-devil-tiny")
TEXT = "/usr/share/games/fortunes/fortunes"  # Debian's fortunes: held out
PROMPTS = ["And it came to pass", "In the beginning", "LAWYER, n."]
STEPS = 32
CONTEXT = 64
MAX_TOKENS = 600
MARGIN = 0.25


def run(*args, stdin=None, fail=False):
    result = subprocess.run(args, capture_output=True, text=True, input=stdin)
    if (result.returncode != 0) != fail:
        sys.exit(f"FAILED: {' '.join(args)} (exit {result.returncode})\n"
                 f"{result.stdout}{result.stderr}")
    return result.stdout + result.stderr


def report(output, name):
    match = re.search(rf"^{name}\s+([-+0-9.]+)", output, re.MULTILINE)
    if not match:
        sys.exit(f"FAILED: no '{name}' in\n{output}")
    return float(match.group(1))


def reference_perplexity(model, tokens, bos):
    """bench ppl's windows (BOS, then CONTEXT - 1 tokens), in float64."""
    nll, scored = 0.0, 0
    for begin in range(0, len(tokens), CONTEXT - 1):
        window = [bos] + tokens[begin:begin + CONTEXT - 1]
        logits = torch_reference.logits(model, window)
        logprobs = torch.log_softmax(logits, dim=-1)
        for t in range(len(window) - 1):
            nll -= float(logprobs[t, window[t + 1]])
            scored += 1
    return math.exp(nll / scored)


def write_quantized_checkpoint(directory, layout, scheme="mixed"):
    """The shipped model as a quantized checkpoint in `directory`: its config
    with the layout's quantization_config (fp8, or compressed-tensors in
    `scheme`), its tokenizer, and its weights with the decoder layers'
    linears stored so."""
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(MODEL):
        if name.endswith(".json"):
            shutil.copy(os.path.join(MODEL, name), directory)
    with open(os.path.join(MODEL, "config.json")) as f:
        config = json.load(f)
    config["quantization_config"] = quantized.quantization_config(layout, scheme=scheme)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f)
    write_safetensors(os.path.join(directory, "model.safetensors"),
                      quantized.quantize_checkpoint(layout, read_checkpoint(MODEL), scheme=scheme))


def main():
    build, work = (os.path.abspath(a) for a in sys.argv[1:3])
    os.makedirs(work, exist_ok=True)
    llmc, llmrun = (os.path.join(build, "bin", name) for name in ("llmc", "llmrun"))
    driver = os.path.join(build, "bin", "llmserve-step-driver")
    mlir, plain_mlir = os.path.join(work, "model.mlir"), os.path.join(work, "plain.mlir")
    f32, int8 = os.path.join(work, "f32.llmb"), os.path.join(work, "int8.llmb")
    int4 = os.path.join(work, "int4.llmb")
    fp8_kv = os.path.join(work, "fp8-kv.llmb")
    fp8_checkpoint, fp8_mlir = os.path.join(work, "fp8-checkpoint"), os.path.join(work, "fp8.mlir")
    fp8 = os.path.join(work, "fp8.llmb")
    plain = os.path.join(work, "plain.llmb")
    run(llmc, "import", MODEL, "-o", mlir, "--logits-entry")
    run(llmc, "compile", mlir, "-o", f32)
    run(llmc, "compile", mlir, "-o", int8, "--quantize", "int8")
    run(llmc, "compile", mlir, "-o", int4, "--quantize", "int4")
    run(llmc, "compile", mlir, "-o", fp8_kv, "--kv-cache-dtype", "fp8")
    write_quantized_checkpoint(fp8_checkpoint, "fp8")
    run(llmc, "import", fp8_checkpoint, "-o", fp8_mlir, "--logits-entry")
    run(llmc, "compile", fp8_mlir, "-o", fp8)
    # llm-compressor's schemes, each checkpoint written to
    # compressed-<scheme>/ and compiled to compressed-<scheme>.llmb.
    compressed = {}
    for scheme in ("fp8-dynamic", "w8a8", "w4a16"):
        checkpoint = os.path.join(work, "compressed-" + scheme)
        write_quantized_checkpoint(checkpoint, "compressed-tensors", scheme)
        run(llmc, "import", checkpoint, "-o", checkpoint + ".mlir", "--logits-entry")
        run(llmc, "compile", checkpoint + ".mlir", "-o", checkpoint + ".llmb")
        compressed[scheme] = checkpoint + ".llmb"
    torch.set_num_threads(1)
    model = torch_reference.load_model(MODEL)
    failed = 0

    def check(ok, what):
        nonlocal failed
        failed += not ok
        print(f"{'ok' if ok else 'FAIL'} {what}")

    ppl = ["bench", "ppl", "--text", TEXT, "--context", str(CONTEXT),
           "--max-tokens", str(MAX_TOKENS), "--threads", "2"]
    ours = report(run(llmrun, *ppl[:2], f32, *ppl[2:]), "perplexity")
    with open(TEXT, encoding="utf-8") as f:
        text = f.read()
    tokens = json.loads(run(llmrun, "tokenize", "--tokenizer", MODEL, "--no-special-tokens",
                            stdin=json.dumps(text) + "\n"))[:MAX_TOKENS]
    with open(os.path.join(MODEL, "config.json")) as f:
        bos = json.load(f)["bos_token_id"]
    with torch.no_grad():
        want = reference_perplexity(model, tokens, bos)
    check(abs(ours / want - 1) < 1e-4,
          f"f32 perplexity {ours:.4f} equals the reference's {want:.4f}")

    def check_against_f32(bundle, what, ppl_bound, kl_bound):
        """`bundle`'s perplexity within ppl_bound of the f32 bundle's, and
        the mean KL of its next-token distributions below kl_bound."""
        out = run(llmrun, *ppl[:2], bundle, "--baseline", f32, *ppl[2:])
        perplexity, baseline, kl = (report(out, n)
                                    for n in ("perplexity", "baseline ppl", "mean KL"))
        check(baseline == ours, f"{what}: the baseline is scored as the f32 bundle alone")
        check(perplexity / baseline - 1 < ppl_bound,
              f"{what} perplexity {perplexity:.4f} at most {ppl_bound:.0%} above f32's "
              f"{baseline:.4f}")
        check(0 < kl < kl_bound, f"mean KL(f32 || {what}) {kl:.6f} nats")

    check_against_f32(int8, "int8", 0.01, 0.01)
    # int4 has 16 levels a group where int8 has 255 a row: on this 384-wide
    # model it costs about 5% of perplexity (docs/benchmarks.md).
    check_against_f32(int4, "int4", 0.10, 0.3)
    # e4m3 keeps 3 mantissa bits of each key and value: about +0.1% here.
    check_against_f32(fp8_kv, "FP8 KV", 0.01, 0.02)
    # e4m3 weights with a scale per block of 128 x 128, dequantized at load.
    check_against_f32(fp8, "FP8 checkpoint", 0.01, 0.02)
    # compressed-tensors: FP8 and int8 per row dequantized at load, 4-bit in
    # groups of 128 (symmetric, so coarser than --quantize int4's) as stored.
    check_against_f32(compressed["fp8-dynamic"], "compressed-tensors FP8", 0.01, 0.02)
    check_against_f32(compressed["w8a8"], "compressed-tensors int8", 0.01, 0.01)
    check_against_f32(compressed["w4a16"], "compressed-tensors int4", 0.10, 0.3)

    encoded = run(llmrun, "tokenize", "--tokenizer", MODEL,
                  stdin="".join(json.dumps(p) + "\n" for p in PROMPTS)).splitlines()
    for text, line in zip(PROMPTS, encoded):
        prompt = json.loads(line)
        with torch.no_grad():
            _, margins = torch_reference.greedy(model, prompt, STEPS)
        confident = next((i for i, m in enumerate(margins) if m < MARGIN), STEPS)
        f32_tokens, int8_tokens, fp8_kv_tokens = (
            json.loads(run(driver, bundle, "--greedy", str(STEPS), "--prompt",
                           ",".join(map(str, prompt))))
            for bundle in (f32, int8, fp8_kv))
        for kind, tokens in (("int8", int8_tokens), ("FP8 KV", fp8_kv_tokens)):
            same = next((i for i, (a, b) in enumerate(zip(f32_tokens, tokens)) if a != b), STEPS)
            check(same >= confident,
                  f"{text!r}: {kind} greedy equals f32 for {same} of {STEPS} tokens "
                  f"(the first near-tie is at {confident})")

    run(llmc, "import", MODEL, "-o", plain_mlir)
    run(llmc, "compile", plain_mlir, "-o", plain)
    out = run(llmrun, "bench", "ppl", plain, "--text", TEXT, fail=True)
    check("no 'logits' entry point (import the model with llmc import --logits-entry)" in out,
          "bench ppl refuses a bundle without a logits entry point")
    other_mlir, other = os.path.join(work, "other.mlir"), os.path.join(work, "other.llmb")
    run(llmc, "import", os.path.join(build, "fixtures", "llama"), "-o", other_mlir,
        "--logits-entry")
    run(llmc, "compile", other_mlir, "-o", other)
    empty = os.path.join(work, "empty.txt")
    open(empty, "w").close()
    for args, message in [
            ((f32, "--baseline", other, "--text", TEXT),
             "the baseline's vocabulary has 300 tokens, the model's 4096"),
            ((f32, "--text", TEXT, "--context", "300"), "context 300 is not in [2, 256]"),
            ((f32, "--text", empty), "the text is 0 token(s); scoring needs at least 2")]:
        out = run(llmrun, "bench", "ppl", *args, fail=True)
        check(f"llmrun bench ppl: error: {message}" in out, f"bench ppl refuses: {message}")
    print(f"{failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
