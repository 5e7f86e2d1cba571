#!/usr/bin/python3
"""The CUDA executor against the CPU executor, on bundles `llmc compile
--target sm_90` writes. Two halves, because the GPU machine has no MLIR:

    gpu_checks.py prepare <build-dir> <out-dir> [--tinyllama] [--qwen3-moe=LAYERS]
        (where llmc is) compiles every op case of test/e2e/op_numerics_test.py
        and the tiny `llama` fixture, each for cpu and for sm_90, with their
        inputs, the shipped model for bench ppl (prepare_quality), and each
        model family for sm_90 in bf16 with the steps of
        e2e.step_logits and the float64 reference's logits (and, for
        transformers_parity.py, one pass over a sequence); --tinyllama also
        compiles a TinyLlama-1.1B-shaped model for
        sm_90 (config only: write its weights on the GPU machine with
        test/fixtures/make_fixtures.py --tinyllama); --qwen3-moe=LAYERS
        compiles a Qwen3-30B-A3B-shaped model of that many of its layers
        for sm_90 the same way (make_fixtures.py --qwen3-moe --layers).
    gpu_checks.py check <build-dir> <out-dir>
        (where the GPU is; needs llmrun and numpy only) runs each op on both
        bundles through `llmrun call` and compares (max |gpu - cpu| / max |cpu|
        at most 1e-4 for f32 cases, 1e-2 for the `.bf16` cases, whose GPU
        kernels store bf16 and whose inputs are rounded to bf16 for both
        devices; integers equal);
        runs rows in a larger step and alone (decode rows in a mixed and in a
        decode-only step; linear rows in the large-tile and the small-M
        kernel), whose results must be bitwise equal;
        runs the int8, int4 and FP8 linear cases against the CPU's kernels
        that compute x in f32 (its AVX2 set: the VNNI kernels round x to
        int8), and the cases of ops only sm_90 has (W8A8 linears:
        op_numerics_test.SM90_CASES) against their float64 references (at
        most 1e-3 for f32 storage);
        runs every model family (FAMILIES), the act-order GPTQ checkpoint
        (DEQUANTIZED) and the FP8 and 4-bit ones that sm_90 reads as stored
        (AS_STORED) in bf16 through the step driver on the steps of
        e2e.step_logits, against the float64 reference;
        serves the llama fixture on both devices and sends 64 concurrent
        greedy requests (every fourth with a frequency penalty), whose
        continuations must be the CPU's, and on the GPU the same at
        concurrency 1 as at 64, with CUDA graphs as without, overlapped as
        with --no-overlap, and from kernels.ptx through the driver's JIT as
        from the cubin; runs compute-sanitizer (memcheck,
        racecheck, initcheck) over generations and the GPU unit tests.
    gpu_checks.py all <build-dir> <out-dir>     both, on one machine

Exit status: 0 when every check passed, 1 when one failed, 77 (ctest's skip)
with the reason on stdout when there is no GPU or no sm_90 compiler output.
"""

import concurrent.futures
import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = 77
# Largest max |gpu - cpu| / max |cpu|: f32 cases, and cases whose GPU kernel
# stores bf16 (llmrun call writes its results widened to f32).
F32_TOLERANCE, BF16_TOLERANCE = 1e-4, 1e-2
# The same against the float64 reference, for the f32 cases of ops only
# sm_90 has (op_numerics_test.SM90_CASES): FP8 tensor cores add a k32 step's
# products with fewer bits than f32 has.
REFERENCE_TOLERANCE = 1e-3
BF16_SUFFIX = ".bf16"
# Ops that read the f32 logits in a narrowed model.
F32_ONLY_CASES = {"adjust_logits", "logprobs", "logprobs_fewer_than_asked", "sample_greedy",
                  "sample_temperature", "sample_top_k", "sample_top_p", "sample_top_k_top_p",
                  "sample_min_p", "sample_large_vocabulary", "sample_finite_noise"}
CONCURRENCY = 64
MAX_TOKENS = 8
# Every model family in bf16 on sm_90 against the float64 torch reference,
# on the steps of e2e.step_logits: largest max |gpu - ref| / max |ref|, at
# most BF16_PEER_FACTOR times that of the same reference run by torch in bf16
# on the same rows (2.2e-2 to 4.1e-2; both round weights and activations to
# bf16, in different places).
FAMILIES = ("llama", "qwen3", "qwen3_window", "qwen3_moe", "mixtral", "gemma2", "gemma3", "phi3",
            "phi3_longrope")
BF16_PEER_FACTOR = 2
# Checkpoints stored quantized, checked as the families are (transformers
# reads them only with its GPU kernels): one that sm_90 reads dequantized to
# bf16, and those whose linears it reads as stored, FP8 codes with block
# scales and 4-bit values with zero points (compressed-tensors' FP8 and int8
# ones dequantized).
DEQUANTIZED = ("llama_gptq_act_order",)
AS_STORED = ("llama_fp8", "llama_gptq", "llama_gptq_v2", "llama_awq", "llama_compressed_tensors")
# The op cases (and invariance pairs) of quantized linears, whose weights
# the runtime quantizes at load or reads from a quantized checkpoint.
QUANTIZED_LINEAR_PREFIXES = ("linear_int8", "linear_int4", "linear_fp8", "linear_w8a8")


def run(*args, env=None):
    result = subprocess.run(args, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}\n{result.stdout}{result.stderr}")
    return result.stdout


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


# ----------------------------------------------------------------- prepare --

def compile_both(llmc, source, out, name, *flags, gpu_source=None, cpus="native,x86-64-v3"):
    """<out>/<name>.cpu.llmb from `source` and <out>/<name>.sm90.llmb from
    `gpu_source` (default `source`), the GPU one with the types as written
    (--dtype f32: no narrowing), since the CPU kernels compute only f32. The
    CPU bundle has kernels for `cpus`: by default this machine's CPU and any
    AVX2 CPU, which the GPU machine's runs if it lacks some of this one's
    features."""
    run(llmc, "compile", source, "-o", os.path.join(out, name + ".cpu.llmb"),
        "--cpu", cpus, *flags)
    run(llmc, "compile", gpu_source or source, "-o", os.path.join(out, name + ".sm90.llmb"),
        "--target", "sm_90", "--dtype", "f32", *flags)


def bf16_text(text):
    """The op case with bf16 storage, as a narrowed model stores it:
    every f32 tensor type becomes bf16 except paged_attention's log-sum-exp
    and moe_router's weights, which the dialect keeps f32, and the types of
    dense attributes."""
    # Constant attributes (longrope's factors) keep their f32 type, and a
    # quantized weight's scales theirs.
    narrow = "\n".join(
        line if re.search(r" quantized \w+ scales ", line)
        else re.sub(r"(?<!> : )(tensor<[0-9x?]*)xf32>", r"\1xbf16>", line)
        for line in text.split("\n"))
    # The router's weights, which moe_combine reads, are f32 wherever they
    # appear; the log-sum-exp only where it is a result, since a key or value
    # operand may have its shape.
    for pattern, results_only in ((r"llmserve\.paged_attention .* -> (tensor<[^>]*>)", True),
                                  (r"llmserve\.moe_router .* -> (tensor<[^>]*>), ", False),
                                  (r"llmserve\.moe_combine .* : tensor<[^>]*>, (tensor<[^>]*>)",
                                   False)):
        f32 = re.search(pattern, narrow)
        if not f32:
            continue
        bf16, wide = f32.group(1), f32.group(1).replace("xbf16>", "xf32>")
        if not results_only:
            narrow = narrow.replace(bf16, wide)
            continue
        lines = narrow.split("\n")
        for i, line in enumerate(lines):
            if line.lstrip().startswith(("func.func", "return")) or f32.group(0) in line:
                head, arrow, tail = line.rpartition(" -> " if "return" not in line else " : ")
                lines[i] = head + arrow + tail.replace(bf16, wide)
        narrow = "\n".join(lines)
    return narrow


def prepare_quality(llmc, out):
    """The shipped model for `llmrun bench ppl` on the GPU, against its f32
    bundle on the CPU (AVX2 kernels): sm_90 in bf16, with --quantize int8 and
    int4, and its FP8 checkpoint (e2e.quantized_model's) W8A16 and W8A8; and
    the held-out text."""
    import quantized_model_test  # noqa: E402  (the shipped model, its FP8 checkpoint)
    os.makedirs(out, exist_ok=True)
    shutil.copy(quantized_model_test.TEXT, os.path.join(out, "text"))
    mlir, fp8_mlir = os.path.join(out, "model.mlir"), os.path.join(out, "fp8.mlir")
    run(llmc, "import", quantized_model_test.MODEL, "-o", mlir, "--logits-entry")
    run(llmc, "compile", mlir, "-o", os.path.join(out, "f32.cpu.llmb"), "--cpu", "x86-64-v3")
    for name, flags in (("bf16", ()), ("int8", ("--quantize", "int8")),
                        ("int4", ("--quantize", "int4"))):
        run(llmc, "compile", mlir, "-o", os.path.join(out, f"{name}.sm90.llmb"), "--target",
            "sm_90", *flags)
    checkpoint = os.path.join(out, "fp8_checkpoint")
    quantized_model_test.write_quantized_checkpoint(checkpoint, "fp8")
    run(llmc, "import", checkpoint, "-o", fp8_mlir, "--logits-entry")
    for name, flags in (("w8a16", ()), ("w8a8", ("--fp8-activations",))):
        run(llmc, "compile", fp8_mlir, "-o", os.path.join(out, f"{name}.sm90.llmb"), "--target",
            "sm_90", *flags)


def prepare(build, out, tinyllama, moe_layers):
    llmc = os.path.join(build, "bin", "llmc")
    if not os.path.exists(llmc):
        skip(f"no {llmc}: prepare runs where the compiler is built")
    sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
    import op_numerics_test  # noqa: E402  (the op cases, with random inputs)

    os.makedirs(out, exist_ok=True)
    # The test binaries name their data files by the absolute path of the
    # tree they were built in; run_on_gpu.sh recreates it on the GPU machine.
    with open(os.path.join(out, "source_dir"), "w") as f:
        f.write(ROOT + "\n")
    ops = os.path.join(out, "ops")
    failures = []
    # (name, inputs, text, sm_90 text, weights, references): references for
    # the cases only sm_90 runs, None for those the CPU bundle checks.
    cases = []
    for name, make_case in [*op_numerics_test.CASES.items(),
                            *op_numerics_test.SM90_CASES.items()]:
        inputs, text, references, *weights = make_case()
        quantized = name.startswith(QUANTIZED_LINEAR_PREFIXES)
        if weights and not quantized:
            continue  # other checkpoint-weight cases test CPU layouts
        weights = weights[0] if weights else None
        references = references if name in op_numerics_test.SM90_CASES else None
        cases.append((name, inputs, text, text, weights, references))
        if name not in F32_ONLY_CASES:
            # SM90_CASES' inputs are bf16 values already: one reference.
            narrow = [op_numerics_test.bf16_exact(a) for a in inputs]
            cases.append((name + BF16_SUFFIX, narrow, text, bf16_text(text), weights, references))
    for name, inputs, text, gpu_text, weights, references in cases:
        directory = os.path.join(ops, name)
        os.makedirs(directory, exist_ok=True)
        source, gpu_source = (os.path.join(directory, f) for f in ("op.mlir", "op.sm90.mlir"))
        for path, contents in ((source, text), (gpu_source, gpu_text)):
            with open(path, "w") as f:
                f.write(contents)
        for i, a in enumerate(inputs):
            np.save(os.path.join(directory, f"input_{i}.npy"), a)
        if weights:
            op_numerics_test.write_weights(directory, weights)
        for i, want in enumerate(references or []):
            np.save(os.path.join(directory, f"reference_{i}.npy"), want.numpy())
        try:
            if references:
                run(llmc, "compile", gpu_source, "-o", os.path.join(directory, "op.sm90.llmb"),
                    "--target", "sm_90", "--dtype", "f32")
            else:
                compile_both(llmc, source, directory, "op", gpu_source=gpu_source,
                             **({"cpus": "x86-64-v3"} if weights else {}))
        except RuntimeError as e:
            first = str(e).strip().splitlines()[-1]
            if not failures and "sm_90" in str(e):
                # The first op already fails for sm_90: no GPU compiler here.
                with open(os.path.join(out, "SKIP"), "w") as f:
                    f.write(f"no sm_90 compiler output: {first}\n")
                skip(f"no sm_90 compiler output: {first}")
            failures.append(f"{name}: {first}")
            shutil.rmtree(directory)

    # The same rows in a larger step and alone (bf16 storage, as models run):
    # different kernels on sm_90, bitwise-equal results. Attention: decode
    # rows in a mixed step and in a decode-only step; linear: 3 rows of an
    # 80-row step (large-tile kernel) and of a 40-row step (64-row kernel),
    # and alone (small-M kernel), K in splits.
    for name, pair in [*op_numerics_test.invariance_pairs(),
                       *op_numerics_test.sm90_invariance_pairs()]:
        if any(weights for _, _, *weights in pair) and not name.startswith(
                QUANTIZED_LINEAR_PREFIXES):
            continue  # other checkpoint-weight pairs test CPU kernels
        for kind, (inputs, text, *weights) in zip(("larger", "alone"), pair):
            directory = os.path.join(out, "invariance", name, kind)
            os.makedirs(directory, exist_ok=True)
            source = os.path.join(directory, "op.mlir")
            with open(source, "w") as f:
                f.write(bf16_text(text))
            for i, a in enumerate(inputs):
                np.save(os.path.join(directory, f"input_{i}.npy"), op_numerics_test.bf16_exact(a))
            if weights:
                op_numerics_test.write_weights(directory, weights[0])
            run(llmc, "compile", source, "-o", os.path.join(directory, "op.sm90.llmb"),
                "--target", "sm_90", "--dtype", "f32")

    fixtures = os.path.join(out, "fixtures")
    run(sys.executable, os.path.join(ROOT, "test", "fixtures", "make_fixtures.py"), fixtures,
        "--only", "llama")
    mlir = os.path.join(out, "llama.mlir")
    run(llmc, "import", os.path.join(fixtures, "llama"), "-o", mlir)
    compile_both(llmc, mlir, out, "llama", "--embed-weights")
    run(llmc, "compile", mlir, "-o", os.path.join(out, "llama.sm90-bf16.llmb"),
        "--target", "sm_90", "--dtype", "bf16", "--embed-weights")
    shutil.copy(os.path.join(fixtures, "llama", "reference.json"),
                os.path.join(out, "llama.reference.json"))

    prepare_families(llmc, os.path.join(out, "families"))

    prepare_quality(llmc, os.path.join(out, "quality"))

    if tinyllama:
        sys.path.insert(0, os.path.join(ROOT, "test", "fixtures"))
        import make_fixtures  # noqa: E402
        for name, fp8 in (("tinyllama_config", False), ("tinyllama_fp8_config", True)):
            checkpoint = os.path.join(out, name)
            os.makedirs(checkpoint, exist_ok=True)
            make_fixtures.write_json(os.path.join(checkpoint, "config.json"),
                                     make_fixtures.tinyllama_config("bfloat16", fp8))
            make_fixtures.copy_llama2_tokenizer(checkpoint)
        # The FP8 checkpoint's linears, read as stored.
        mlir = os.path.join(out, "tinyllama-fp8-weights.mlir")
        run(llmc, "import", os.path.join(out, "tinyllama_fp8_config"), "-o", mlir)
        run(llmc, "compile", mlir, "-o", os.path.join(out, "tinyllama-fp8-weights.sm90.llmb"),
            "--target", "sm_90")
        run(llmc, "compile", mlir, "-o", os.path.join(out, "tinyllama-w8a8.sm90.llmb"),
            "--target", "sm_90", "--fp8-activations")
        mlir = os.path.join(out, "tinyllama.mlir")
        run(llmc, "import", os.path.join(out, "tinyllama_config"), "-o", mlir)
        run(llmc, "compile", mlir, "-o", os.path.join(out, "tinyllama.sm90.llmb"),
            "--target", "sm_90")
        run(llmc, "compile", mlir, "-o", os.path.join(out, "tinyllama-fp8kv.sm90.llmb"),
            "--target", "sm_90", "--kv-cache-dtype", "fp8")
        for scheme in ("int8", "int4"):
            run(llmc, "compile", mlir, "-o", os.path.join(out, f"tinyllama-{scheme}.sm90.llmb"),
                "--target", "sm_90", "--quantize", scheme)

    if moe_layers:
        sys.path.insert(0, os.path.join(ROOT, "test", "fixtures"))
        import make_fixtures  # noqa: E402
        checkpoint = os.path.join(out, "qwen3moe_config")
        make_fixtures.write_qwen3_moe(checkpoint, "bfloat16", moe_layers, config_only=True)
        mlir = os.path.join(out, "qwen3moe.mlir")
        run(llmc, "import", checkpoint, "-o", mlir)
        run(llmc, "compile", mlir, "-o", os.path.join(out, "qwen3moe.sm90.llmb"),
            "--target", "sm_90")

    for f in failures:
        print(f"FAIL compile {f}")
    print(f"prepared {out}: {len(cases) - len(failures)} op cases, llama, "
          f"{len(FAMILIES)} families, {len(DEQUANTIZED + AS_STORED)} quantized checkpoints" +
          (", tinyllama" if tinyllama else ""))
    return not failures


def prepare_families(llmc, out):
    """<out>/<family>.sm90.llmb (bf16, the weights read from <out>/<family>,
    with the logits entry point), the steps of e2e.step_logits and the reference's logits of their
    rows (reference.npz: step_<i>, [rows, vocab], and torch_bf16_error, the
    worst relative error of the reference run in bf16 on those rows); and for the transformers
    comparison the checkpoint, its sequence A and the reference's logits of
    one pass over it (full.npy)."""
    sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
    import step_logits_test  # noqa: E402  (its schedule, steps and reference)
    import torch  # noqa: E402
    run(sys.executable, os.path.join(ROOT, "test", "fixtures", "make_fixtures.py"), out,
        "--only", ",".join(FAMILIES + DEQUANTIZED + AS_STORED))
    for name in FAMILIES + DEQUANTIZED + AS_STORED:
        checkpoint = os.path.join(out, name)
        mlir = os.path.join(out, name + ".mlir")
        run(llmc, "import", checkpoint, "-o", mlir, "--logits-entry",
            f"--block-size={step_logits_test.BLOCK_SIZE}")
        bundle = os.path.join(out, name + ".sm90.llmb")
        run(llmc, "compile", mlir, "-o", bundle, "--target", "sm_90")
        # A compute capability 9.0 device loads the cubin; the PTX path is
        # checked on the llama bundles, so the copy to carry stays small.
        if os.path.exists(os.path.join(bundle, "kernels.sm_90a.cubin")):
            os.remove(os.path.join(bundle, "kernels.ptx"))
        steps, rows_at, reference, tokens, model = step_logits_test.steps_and_reference(
            checkpoint)
        with open(os.path.join(out, name + ".steps.json"), "w") as f:
            json.dump({"num_blocks": step_logits_test.NUM_BLOCKS, "steps": steps}, f)
        wanted = {f"step_{i}": np.stack([reference[seq][position].numpy()
                                         for seq, position in rows])
                  for i, rows in enumerate(rows_at)}
        bf16_model = step_logits_test.torch_reference.load_model(checkpoint, torch.bfloat16)
        with torch.no_grad():
            bf16 = {seq: step_logits_test.reference_logits(
                        bf16_model, [chunk[seq] for chunk in step_logits_test.SCHEDULE],
                        tokens[seq]).double().numpy()
                    for seq in tokens}
        torch_bf16_error = max(
            relative_error(np.stack([bf16[seq][position] for seq, position in rows]),
                           wanted[f"step_{i}"])
            for i, rows in enumerate(rows_at))
        np.savez(os.path.join(out, name + ".reference.npz"),
                 torch_bf16_error=torch_bf16_error, **wanted)
        with torch.no_grad():
            full = model.forward(tokens["A"], step_logits_test.torch_reference.KVCache(model.layers))
        with open(os.path.join(out, name + ".sequence.json"), "w") as f:
            json.dump(tokens["A"], f)
        np.save(os.path.join(out, name + ".full.npy"), full.double().numpy())


# ------------------------------------------------------------------- check --

def no_gpu_reason():
    try:
        cuda = ctypes.CDLL(os.environ.get("LLMSERVE_CUDA_DRIVER") or "libcuda.so.1")
    except OSError as e:
        return f"cannot load libcuda.so.1 ({e})"
    if cuda.cuInit(0) != 0:
        return "cuInit failed"
    count = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return "no CUDA device"
    return None


def call(llmrun, directory, device):
    """Runs <directory>/op.<device>.llmb on its input_*.npy; the results."""
    inputs = sorted((f for f in os.listdir(directory) if f.startswith("input_")),
                    key=lambda f: int(f[6:-4]))
    target = os.path.join(directory, device)
    checkpoint = (["--weights", directory]
                  if os.path.exists(os.path.join(directory, "model.safetensors")) else [])
    run(llmrun, "call", os.path.join(directory, f"op.{device}.llmb"), "--entry", "op",
        "--input", *(os.path.join(directory, f) for f in inputs), "--output-dir", target,
        *checkpoint)
    return [np.load(os.path.join(target, f)) for f in sorted(os.listdir(target))]


def references(directory):
    """The float64 reference_*.npy of a case only sm_90 runs; None for one
    that the CPU bundle checks."""
    files = sorted((f for f in os.listdir(directory) if f.startswith("reference_")),
                   key=lambda f: int(f[10:-4]))
    return [np.load(os.path.join(directory, f)) for f in files] or None


def check_ops(llmrun, out):
    """Each op case's sm_90 results against the CPU bundle's, or against
    its float64 reference where only sm_90 has the op."""
    ops = os.path.join(out, "ops")
    ok = True
    for name in sorted(os.listdir(ops)):
        directory = os.path.join(ops, name)
        results = {"cpu": references(directory)}
        try:
            for device in ("cpu", "sm90") if results["cpu"] is None else ("sm90",):
                results[device] = call(llmrun, directory, device)
        except RuntimeError as e:
            print(f"FAIL {name}: {e}")
            ok = False
            continue
        worst, passed = 0.0, len(results["cpu"]) == len(results["sm90"])
        for want, got in zip(results["cpu"], results["sm90"]):
            reference = want.dtype == np.float64  # the CPU's results are f32
            if want.shape != got.shape or (want.dtype != got.dtype and not reference):
                passed = False
            elif want.dtype.kind in "iu":
                passed &= bool(np.array_equal(want, got))
            else:
                # Infinities (log-probs of masked tokens) and NaNs must match
                # exactly; the finite values within the tolerance.
                finite = np.isfinite(want)
                passed &= bool(np.array_equal(want[~finite], got[~finite], equal_nan=True))
                if finite.any():
                    error = float(np.abs(got[finite].astype(np.float64) - want[finite]).max() /
                                  max(float(np.abs(want[finite]).max()), 1e-30))
                    worst = max(worst, error)
                    passed &= error <= (BF16_TOLERANCE if name.endswith(BF16_SUFFIX)
                                        else REFERENCE_TOLERANCE if reference
                                        else F32_TOLERANCE)
        print(f"{'ok' if passed else 'FAIL'} op {name}: max relative error {worst:.2e}")
        ok &= passed
    return ok


def check_invariance(llmrun, out):
    """Rows computed in a larger step and alone must be bitwise equal: decode
    rows from the mixed attention kernel and from the split-context decode
    and merge kernels; linear rows from the large-tile, 64-row and small-M
    kernels."""
    ok = True
    root = os.path.join(out, "invariance")
    for name in sorted(os.listdir(root)):
        try:
            larger = call(llmrun, os.path.join(root, name, "larger"), "sm90")
            alone = call(llmrun, os.path.join(root, name, "alone"), "sm90")
        except RuntimeError as e:
            print(f"FAIL invariance {name}: {e}")
            ok = False
            continue
        rows = len(alone[0])
        passed = all(np.array_equal(m[:rows], d, equal_nan=True) for m, d in zip(larger, alone))
        print(f"{'ok' if passed else 'FAIL'} rows bitwise equal in a larger step and alone "
              f"({name})")
        ok &= passed
    return ok


def relative_error(got, want):
    """The largest max |got - want| / max |want| over rows (a NaN counts as
    infinite)."""
    errors = np.abs(got - want).max(axis=1) / np.abs(want).max(axis=1)
    return float(np.nan_to_num(errors, nan=np.inf).max())


def check_families(build, out):
    """Each family's bf16 sm_90 bundle through the step driver on the steps
    of e2e.step_logits: its worst relative error against the float64
    reference at most BF16_PEER_FACTOR times that of torch running the
    reference in bf16."""
    driver = os.path.join(build, "bin", "llmserve-step-driver")
    root = os.path.join(out, "families")
    ok = True
    for name in FAMILIES + DEQUANTIZED + AS_STORED:
        try:
            logits = json.loads(run(driver, os.path.join(root, name + ".sm90.llmb"),
                                    os.path.join(root, name + ".steps.json")))["logits"]
        except RuntimeError as e:
            print(f"FAIL family {name}: {e}")
            ok = False
            continue
        reference = np.load(os.path.join(root, name + ".reference.npz"))
        worst = max(relative_error(np.asarray(rows, dtype=np.float64), reference[f"step_{i}"])
                    for i, rows in enumerate(logits))
        peer = float(reference["torch_bf16_error"])
        passed = worst <= BF16_PEER_FACTOR * peer
        print(f"{'ok' if passed else 'FAIL'} family {name}: bf16 on sm_90 against the float64 "
              f"reference, worst relative error {worst:.2e} (torch in bf16: {peer:.2e}, "
              f"at most {BF16_PEER_FACTOR}x)")
        ok &= passed
    return ok


def completions(server, prompts, concurrency):
    """Greedy continuations; every fourth request has a frequency penalty,
    so decode steps carry logit entries (padded to buckets in graphs)."""
    def one(indexed):
        i, prompt = indexed
        request = {"prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0,
                   "ignore_eos": True}
        if i % 4 == 3:
            request["frequency_penalty"] = 0.5
        status, _, body = server.post("/v1/completions", request, timeout=300)
        if status != 200:
            raise RuntimeError(f"status {status}: {body}")
        return body["choices"][0]["text"]
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(one, enumerate(prompts)))


def check_llama(llmrun, out):
    sys.path.insert(0, os.path.join(ROOT, "test", "server"))
    from server_process import ServerProcess  # noqa: E402
    with open(os.path.join(out, "llama.reference.json")) as f:
        prompt = json.load(f)["prompt"]
    # The fixture's reference prompt, whose greedy continuation has wide
    # margins (test/fixtures/make_fixtures.py), and its prefixes, which give
    # steps of many shapes.
    prompts = [prompt] * 8 + [prompt[:4 + i % (len(prompt) - 3)] for i in range(CONCURRENCY - 8)]
    texts = {}
    jit = tempfile.TemporaryDirectory()
    runs = (("cpu", "cpu", ()), ("sm90", "sm90", ()),
            ("sm90 uncaptured", "sm90", ("--no-cuda-graphs",)),
            ("sm90 serial", "sm90", ("--no-overlap",)), ("sm90-bf16", "sm90-bf16", ()),
            ("sm90 ptx", ptx_only(out, "sm90", jit.name), ()),
            ("sm90-bf16 ptx", ptx_only(out, "sm90-bf16", jit.name), ()))
    for device, bundle, flags in runs:
        with ServerProcess(llmrun, bundle if os.path.isabs(bundle) else
                           os.path.join(out, f"llama.{bundle}.llmb"),
                           "--max-num-seqs", str(CONCURRENCY), *flags) as server:
            texts[device] = completions(server, prompts, CONCURRENCY)
            if device == "sm90":
                texts["sm90 alone"] = completions(server, prompts[:8], 1)
            if device in ("sm90", "sm90 ptx"):
                print(server.output().splitlines()[0])  # the device line: which kernel file
            server.stop()
    mismatches = [i for i in range(CONCURRENCY) if texts["sm90"][i] != texts["cpu"][i]]
    for i in mismatches[:5]:
        print(f"  prompt {i} ({len(prompts[i])} tokens): cpu {texts['cpu'][i]!r}, "
              f"gpu {texts['sm90'][i]!r}")
    alone = texts["sm90 alone"] == texts["sm90"][:8]
    print(f"{'ok' if not mismatches else 'FAIL'} llama: {CONCURRENCY - len(mismatches)} of "
          f"{CONCURRENCY} concurrent greedy continuations equal the CPU's")
    print(f"{'ok' if alone else 'FAIL'} llama: the GPU's continuations at concurrency 1 equal "
          f"those at {CONCURRENCY}")
    uncaptured = texts["sm90 uncaptured"] == texts["sm90"]
    print(f"{'ok' if uncaptured else 'FAIL'} llama: CUDA graph replay gives the continuations "
          "of uncaptured execution")
    serial = texts["sm90 serial"] == texts["sm90"]
    print(f"{'ok' if serial else 'FAIL'} llama: overlapped scheduling gives the continuations "
          "of --no-overlap")
    # bf16 storage rounds every activation, so only the reference prompt,
    # whose greedy margins are wide, must keep the f32 CPU's continuation.
    bf16 = texts["sm90-bf16"][:8] == texts["cpu"][:8]
    print(f"{'ok' if bf16 else 'FAIL'} llama bf16: the reference prompt's greedy continuation "
          f"{texts['sm90-bf16'][0]!r} (cpu {texts['cpu'][0]!r}); "
          f"{sum(a == b for a, b in zip(texts['sm90-bf16'], texts['cpu']))} of {CONCURRENCY} "
          "prompts equal")
    # The driver compiles kernels.ptx itself on a device other than
    # compute capability 9.0; the PTX must then compute what the cubin does.
    ptx = texts["sm90 ptx"] == texts["sm90"] and texts["sm90-bf16 ptx"] == texts["sm90-bf16"]
    print(f"{'ok' if ptx else 'FAIL'} llama: kernels.ptx through the driver's JIT gives the "
          "cubin's continuations (f32 and bf16)")
    return not mismatches and alone and uncaptured and serial and bf16 and ptx


def ptx_only(out, bundle, into):
    """A copy of llama.<bundle>.llmb without its cubin (links to the other
    files), which the executor loads from kernels.ptx."""
    source = os.path.join(out, f"llama.{bundle}.llmb")
    copy = os.path.join(into, f"llama.{bundle}-ptx.llmb")
    os.makedirs(copy)
    for name in os.listdir(source):
        if not name.endswith(".cubin"):
            os.symlink(os.path.join(source, name), os.path.join(copy, name))
    return copy


def check_sanitizer(build, llmrun, out):
    sanitizer = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    if not os.path.exists(sanitizer):
        print("SKIP compute-sanitizer: not installed")
        return True
    def generate(bundle):
        return [llmrun, "generate", os.path.join(out, f"llama.{bundle}.llmb"),
                "--prompt", "And it came to pass", "--max-tokens", "16", "--ignore-eos"]
    ok = True
    for tool, what, command in (
            ("memcheck", "llmrun generate", generate("sm90")),
            ("memcheck", "llmrun generate bf16", generate("sm90-bf16")),
            # Without the two tests whose driver errors are the point
            # (memcheck reports every failed driver call).
            ("memcheck", "cuda_gpu_tests", [os.path.join(build, "bin", "cuda_gpu_tests"),
                                            "--gtest_filter=-Gpu.PtxThatDoesNotCompileReportsTheJitLog:"
                                            "Gpu.AKernelMissingFromTheModuleIsNamed"]),
            # Shared-memory hazards in the tiled linear and attention kernels.
            ("racecheck", "llmrun generate", generate("sm90")),
            ("racecheck", "llmrun generate bf16", generate("sm90-bf16")),
            # Reads of device memory nothing wrote (padded decode rows, KV).
            ("initcheck", "llmrun generate", generate("sm90")),
            ("initcheck", "llmrun generate bf16", generate("sm90-bf16"))):
        result = subprocess.run([sanitizer, "--tool", tool, "--error-exitcode", "3",
                                 *command], capture_output=True, text=True)
        passed = result.returncode == 0
        lines = (result.stdout + result.stderr).strip().splitlines()
        print(f"{'ok' if passed else 'FAIL'} compute-sanitizer {tool} {what}: "
              f"{lines[-1] if lines else ''}")
        if not passed:  # each error's first lines: what and where
            reports = [i for i, line in enumerate(lines) if line.startswith("========= ")
                       and "ERROR SUMMARY" not in line and not line.startswith("=========     ")]
            for i in reports[:6]:
                print("  " + " | ".join(lines[i:i + 3]))
        ok &= passed
    return ok


def check(build, out):
    reason = no_gpu_reason()
    if reason:
        skip(f"needs an NVIDIA GPU: {reason}")
    if os.path.exists(os.path.join(out, "SKIP")):
        with open(os.path.join(out, "SKIP")) as f:
            skip(f.read().strip())
    if not os.path.isdir(os.path.join(out, "ops")):
        skip(f"nothing prepared in {out}: run gpu_checks.py prepare where llmc is")
    llmrun = os.path.join(build, "bin", "llmrun")
    results = [check_ops(llmrun, out), check_invariance(llmrun, out),
               check_families(build, out), check_llama(llmrun, out),
               check_sanitizer(build, llmrun, out)]
    return all(results)


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("prepare", "check", "all"):
        sys.exit(__doc__)
    command, build, out = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    if command == "all" and no_gpu_reason(): # before the compiling
        skip(f"needs an NVIDIA GPU: {no_gpu_reason()}")
    ok = True
    if command in ("prepare", "all"):
        flags = sys.argv[4:]
        moe = [int(f.split("=", 1)[1]) for f in flags if f.startswith("--qwen3-moe=")]
        ok &= prepare(build, out, "--tinyllama" in flags, moe[-1] if moe else 0)
    if command in ("check", "all"):
        ok &= check(build, out)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
