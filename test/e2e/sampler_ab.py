#!/usr/bin/python3
"""Whether two builds' CPU `sample` and `logprobs` kernels give bitwise the
same results: both compile the same ops (op_numerics_test's module format)
and run them through `llmrun call` on rows of many kinds (normal, many ties,
a wide range, mostly -inf, some NaN, all equal, Cauchy) with every sampling
setting mixed across the rows. Prints the rows that differ; exits 1 if any.

    python3 test/e2e/sampler_ab.py BUILD_A BUILD_B [ROWS VOCAB SEED]

A build is a directory with bin/llmc and bin/llmrun (a build tree, or a
copy of another commit's llmc beside a llmrun).
"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_numerics_test as o  # noqa: E402


def rows(rng, s, v):
    out = []
    for r in range(s):
        kind = r % 7
        if kind == 0:
            x = rng.normal(0, 3, v)
        elif kind == 1:
            x = np.round(rng.normal(0, 2, v) * 4) / 4
        elif kind == 2:
            x = rng.normal(0, 30, v)
        elif kind == 3:
            x = np.where(rng.random(v) < 0.7, -np.inf, rng.normal(0, 1, v))
        elif kind == 4:
            x = np.where(rng.random(v) < 0.02, np.nan, rng.normal(0, 1, v))
        elif kind == 5:
            x = np.full(v, 1.5)
        else:
            x = rng.standard_cauchy(v)
        out.append(x.astype(np.float32))
    return np.stack(out)


def sample_case(rng, s, v):
    logits = rows(rng, s, v)
    inputs = [logits, rng.choice([0.0, 0.3, 0.8, 1.0, 1.7], s).astype(np.float32),
              rng.choice([1.0, 0.95, 0.9, 0.5, 0.1, 1e-6], s).astype(np.float32),
              rng.choice([0, 1, 2, 5, 20, 50, v - 1, v, v + 7], s).astype(np.int32),
              rng.choice([0.0, 0.0, 0.05, 0.5], s).astype(np.float32),
              rng.integers(0, 2**62, s).astype(np.int64),
              rng.integers(0, 1 << 20, s).astype(np.int32)]
    body = (f"  %y = llmserve.sample %a0 temperature %a1 top_p %a2 top_k %a3 min_p %a4 "
            f"seed %a5 rng_offset %a6 : {', '.join(o.mlir_type(a) for a in inputs)}"
            f" -> tensor<{s}xi32>")
    return inputs, o.module(inputs, body, [("%y", f"tensor<{s}xi32>")])


def logprobs_case(rng, s, v, k=20):
    inputs = [rows(rng, s, v), rng.integers(-2, v + 2, s).astype(np.int32),
              rng.choice([-1, 0, 1, 3, 7, 20, 25], s).astype(np.int32)]
    body = (f"  %lp, %tt, %tl = llmserve.logprobs %a0 tokens %a1 num %a2 : "
            f"{', '.join(o.mlir_type(a) for a in inputs)} -> tensor<{s}xf32>, "
            f"tensor<{s}x{k}xi32>, tensor<{s}x{k}xf32>")
    results = [("%lp", f"tensor<{s}xf32>"), ("%tt", f"tensor<{s}x{k}xi32>"),
               ("%tl", f"tensor<{s}x{k}xf32>")]
    return inputs, o.module(inputs, body, results)


def main():
    if len(sys.argv) not in (3, 6):
        sys.exit(__doc__)
    builds = [os.path.abspath(b) for b in sys.argv[1:3]]
    s, v, seed = (int(x) for x in sys.argv[3:6]) if len(sys.argv) == 6 else (512, 3001, 7)
    rng = np.random.default_rng(seed)
    differ = 0
    with tempfile.TemporaryDirectory() as work:
        for name, (inputs, text) in (("sample", sample_case(rng, s, v)),
                                     ("logprobs", logprobs_case(rng, s, v))):
            a, b = (o.compile_and_call(build, os.path.join(work, f"{name}{i}"), inputs, text)
                    for i, build in enumerate(builds))
            rows_differ = np.zeros(s, bool)
            for x, y in zip(a, b):  # bitwise, NaN included
                rows_differ |= (x.view(np.uint8).reshape(s, -1) !=
                                y.view(np.uint8).reshape(s, -1)).any(1)
            if name == "logprobs":  # rows that ask nothing are unspecified
                rows_differ &= inputs[2] >= 0
            differ += int(rows_differ.sum())
            print(f"{name}: {s} rows of {v} logits, {int(rows_differ.sum())} differ"
                  + (f" (rows {np.nonzero(rows_differ)[0][:10].tolist()})"
                     if rows_differ.any() else ""))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
