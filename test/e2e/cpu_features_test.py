#!/usr/bin/python3
"""A CPU bundle names the x86 features its kernels were compiled for
(manifest.json's cpu_features), and the runtime refuses to load them on a
CPU that lacks one, naming it, rather than stop at the first instruction:

- compiled for x86-64-v3 (AVX2), a bundle needs AVX2's features and runs;
- compiled for sapphirerapids, it needs AVX-512 FP16 and AVX-VNNI among
  others: it runs if this CPU has them all (by /proc/cpuinfo), else llmrun
  names the ones it lacks.

A bundle compiled for several CPUs (--cpu sapphirerapids,x86-64-v3) has a
kernel set for each, and the runtime loads the first this CPU can run, or
the one LLMSERVE_CPU_KERNELS names; every set computes the same results as
a bundle compiled for its CPU alone: an op here, and the shipped model's
greedy continuation with int8 weights (VNNI's kernels and AVX2's).

Usage: cpu_features_test.py <build-dir> <work-dir>
"""

import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SILU_MUL = """func.func @op(%a0: tensor<4x16xf32>, %a1: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %y = llmserve.silu_mul %a0, %a1 : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
"""
# /proc/cpuinfo's spelling of the features it names otherwise.
CPUINFO = {"sse4.2": "sse4_2", "avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16",
           "avx512fp16": "avx512_fp16", "avxvnni": "avx_vnni"}
VARIABLE = "LLMSERVE_CPU_KERNELS"


def cpuinfo_flags():
    with open("/proc/cpuinfo") as f:
        return next((set(line.split(":", 1)[1].split()) for line in f
                     if line.startswith("flags")), set())


FLAGS = cpuinfo_flags()


def lacking(features):
    return [f for f in features if CPUINFO.get(f, f) not in FLAGS]


def report(ok, what):
    print(f"{'ok' if ok else 'FAIL'} {what}")
    return ok


class Tools:
    def __init__(self, build, work):
        self.llmc, self.llmrun = (os.path.join(build, "bin", n) for n in ("llmc", "llmrun"))
        self.work = work

    def compile(self, source, name, *flags):
        bundle = os.path.join(self.work, name + ".llmb")
        subprocess.run([self.llmc, "compile", source, "-o", bundle, *flags], check=True)
        with open(os.path.join(bundle, "manifest.json")) as f:
            return bundle, json.load(f)

    def call(self, bundle, x, name, cpu_kernels=None):
        """llmrun call's (exit code, stderr, result or None)."""
        out = os.path.join(self.work, name + ".out")
        env = dict(os.environ)
        env.pop(VARIABLE, None)
        if cpu_kernels:
            env[VARIABLE] = cpu_kernels
        r = subprocess.run([self.llmrun, "call", bundle, "--entry", "op", "--input", x, x,
                            "--output-dir", out], capture_output=True, text=True, env=env)
        result = np.load(os.path.join(out, "result_0.npy")) if r.returncode == 0 else None
        return r.returncode, r.stderr.strip(), result

    def generate(self, bundle, cpu_kernels=None):
        """llmrun generate's greedy continuation and its stderr."""
        env = dict(os.environ)
        env.pop(VARIABLE, None)
        if cpu_kernels:
            env[VARIABLE] = cpu_kernels
        r = subprocess.run([self.llmrun, "generate", bundle, "--prompt", "And the Lord said",
                            "--max-tokens", "32", "--threads", "2"],
                           capture_output=True, text=True, env=env, check=True)
        return r.stdout, r.stderr


def single_cpu_bundles(tools, source, x):
    ok, results = True, {}
    for cpu in ("x86-64-v3", "sapphirerapids"):
        bundle, manifest = tools.compile(source, cpu, "--cpu", cpu)
        features = manifest["cpu_features"]
        missing = lacking(features)
        code, err, results[cpu] = tools.call(bundle, x, cpu)
        if missing:
            want = f"kernels.cpu.so (for {cpu}) needs {', '.join(missing)}"
            passed = code == 1 and want in err and "this CPU lacks" in err
        else:
            passed = code == 0
        passed &= manifest["cpu"] == cpu and "cpu_fallbacks" not in manifest
        passed &= "avx2" in features and ("avx512f" in features) == (cpu != "x86-64-v3")
        ok &= report(passed, f"{cpu}: needs {features}; this CPU lacks {missing}; "
                             f"llmrun call exit {code} {err}")
    return ok, results


def multi_cpu_bundle(tools, source, x, alone):
    bundle, manifest = tools.compile(source, "both", "--cpu", "sapphirerapids,x86-64-v3")
    fallbacks = manifest.get("cpu_fallbacks", [])
    ok = report(manifest["cpu"] == "sapphirerapids" and len(fallbacks) == 1
                and fallbacks[0]["cpu"] == "x86-64-v3"
                and fallbacks[0]["kernels"] == "kernels.x86-64-v3.so"
                and os.path.exists(os.path.join(bundle, "kernels.x86-64-v3.so"))
                and "avx512f" not in fallbacks[0]["cpu_features"],
                f"two CPUs: kernels.cpu.so for {manifest['cpu']}, fallbacks {fallbacks}")
    first_runs = not lacking(manifest["cpu_features"])
    code, err, result = tools.call(bundle, x, "both")
    want = alone["sapphirerapids" if first_runs else "x86-64-v3"]
    ok &= report(code == 0 and np.array_equal(result, want),
                 f"loads the {'first' if first_runs else 'fallback'} set by itself, "
                 f"with its CPU's results: exit {code} {err}")
    code, err, result = tools.call(bundle, x, "both-v3", cpu_kernels="x86-64-v3")
    ok &= report(code == 0 and np.array_equal(result, alone["x86-64-v3"]),
                 f"{VARIABLE}=x86-64-v3: x86-64-v3's results, exit {code} {err}")
    code, err, result = tools.call(bundle, x, "both-spr", cpu_kernels="sapphirerapids")
    missing = lacking(manifest["cpu_features"])
    if missing:
        passed = code == 1 and f"that {VARIABLE} chooses need {', '.join(missing)}" in err
    else:
        passed = code == 0 and np.array_equal(result, alone["sapphirerapids"])
    ok &= report(passed, f"{VARIABLE}=sapphirerapids: exit {code} {err}")
    code, err, _ = tools.call(bundle, x, "both-none", cpu_kernels="znver9")
    ok &= report(code == 1 and f"{VARIABLE} names CPU 'znver9', and the bundle has kernels "
                 "for sapphirerapids, x86-64-v3" in err, f"{VARIABLE}=znver9: exit {code} {err}")
    return ok


def model_bundles(tools):
    """The shipped model, int8: the host's kernels (VNNI where it has it) and
    x86-64-v3's (f32 FMAs) in one bundle, each as its own bundle does."""
    mlir = os.path.join(tools.work, "kjv.mlir")
    subprocess.run([tools.llmc, "import", os.path.join(ROOT, "examples", "kjv-devil-tiny"),
                    "-o", mlir], check=True)
    both, manifest = tools.compile(mlir, "kjv-both", "--quantize", "int8",
                                   "--cpu", "native,x86-64-v3")
    host = manifest["cpu"]
    ok, continuations = True, {}
    for name, cpu, chosen in (("kjv-native", "native", None),
                              ("kjv-v3", "x86-64-v3", "x86-64-v3")):
        alone, _ = tools.compile(mlir, name, "--quantize", "int8", "--cpu", cpu)
        want, _ = tools.generate(alone)
        continuations[cpu] = want
        got, err = tools.generate(both, chosen)
        line = f"kernels for {chosen or host}" + (f" (chosen by {VARIABLE})" if chosen else ";")
        ok &= report(got == want and line in err,
                     f"the shipped model, int8, kernels for {chosen or host}: "
                     f"{'the same' if got == want else 'another'} continuation as its own "
                     f"bundle's; {err.splitlines()[0]}")
    # A first set this CPU may lack: the start-up line says why it is passed over.
    spr, manifest = tools.compile(mlir, "kjv-spr", "--quantize", "int8",
                                  "--cpu", "sapphirerapids,x86-64-v3")
    got, err = tools.generate(spr)
    missing = lacking(manifest["cpu_features"])
    if missing:
        line = ("kernels for x86-64-v3 (this CPU lacks what the kernels before need: "
                f"kernels.cpu.so (for sapphirerapids) needs {', '.join(missing)})")
        passed = line in err and got == continuations["x86-64-v3"]
    else:
        passed = "kernels for sapphirerapids;" in err
    ok &= report(passed, f"the shipped model for sapphirerapids and x86-64-v3: "
                         f"{err.splitlines()[0]}")
    return ok


def main():
    build, work = (os.path.abspath(a) for a in sys.argv[1:3])
    os.makedirs(work, exist_ok=True)
    tools = Tools(build, work)
    source = os.path.join(work, "op.mlir")
    with open(source, "w") as f:
        f.write(SILU_MUL)
    x = os.path.join(work, "x.npy")
    np.save(x, np.linspace(-3, 3, 64, dtype=np.float32).reshape(4, 16))
    ok, alone = single_cpu_bundles(tools, source, x)
    if alone["sapphirerapids"] is None:
        alone["sapphirerapids"] = alone["x86-64-v3"]  # not run here
    ok &= multi_cpu_bundle(tools, source, x, alone)
    ok &= model_bundles(tools)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
