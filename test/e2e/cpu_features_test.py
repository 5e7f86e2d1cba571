#!/usr/bin/python3
"""A CPU bundle names the x86 features its kernels were compiled for
(manifest.json's cpu_features), and the runtime refuses to load it on a CPU
that lacks one, naming it, rather than stop at the first instruction:

- compiled for x86-64-v3 (AVX2), a bundle needs AVX2's features and runs;
- compiled for sapphirerapids, it needs AVX-512 FP16 and AVX-VNNI among
  others: it runs if this CPU has them all (by /proc/cpuinfo), else llmrun
  names the ones it lacks.

Usage: cpu_features_test.py <build-dir> <work-dir>
"""

import json
import os
import subprocess
import sys

import numpy as np

SILU_MUL = """func.func @op(%a0: tensor<4x16xf32>, %a1: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %y = llmserve.silu_mul %a0, %a1 : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
"""
# /proc/cpuinfo's spelling of the features it names otherwise.
CPUINFO = {"sse4.2": "sse4_2", "avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16",
           "avx512fp16": "avx512_fp16", "avxvnni": "avx_vnni"}


def cpuinfo_flags():
    with open("/proc/cpuinfo") as f:
        return next((set(line.split(":", 1)[1].split()) for line in f
                     if line.startswith("flags")), set())


def main():
    build, work = (os.path.abspath(a) for a in sys.argv[1:3])
    os.makedirs(work, exist_ok=True)
    llmc, llmrun = (os.path.join(build, "bin", n) for n in ("llmc", "llmrun"))
    source = os.path.join(work, "op.mlir")
    with open(source, "w") as f:
        f.write(SILU_MUL)
    x = os.path.join(work, "x.npy")
    np.save(x, np.ones((4, 16), np.float32))
    flags, failed = cpuinfo_flags(), 0
    for cpu in ("x86-64-v3", "sapphirerapids"):
        bundle = os.path.join(work, cpu + ".llmb")
        subprocess.run([llmc, "compile", source, "-o", bundle, "--cpu", cpu], check=True)
        with open(os.path.join(bundle, "manifest.json")) as f:
            features = json.load(f)["cpu_features"]
        lacking = [f for f in features if CPUINFO.get(f, f) not in flags]
        result = subprocess.run([llmrun, "call", bundle, "--entry", "op", "--input", x, x,
                                 "--output-dir", os.path.join(work, cpu + ".out")],
                                capture_output=True, text=True)
        if lacking:
            want = f"its kernels need {', '.join(lacking)}, which this CPU lacks"
            ok = result.returncode == 1 and want in result.stderr
        else:
            ok = result.returncode == 0
        expected = "avx2" in features and ("avx512f" in features) == (cpu != "x86-64-v3")
        ok &= expected
        print(f"{'ok' if ok else 'FAIL'} {cpu}: needs {features}; this CPU lacks {lacking}; "
              f"llmrun call exit {result.returncode} {result.stderr.strip()}")
        failed += not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
