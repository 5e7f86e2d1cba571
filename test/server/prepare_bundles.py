#!/usr/bin/python3
"""Writes the fixture checkpoints the server tests serve and compiles each to
a bundle: <work-dir>/<name>.llmb, weights read from <work-dir>/fixtures/<name>;
"shipped" is the shipped model (examples/kjv-devil-tiny), weights embedded;
"<name>-fp8kv" is the fixture <name> with an FP8 KV cache.

Usage: prepare_bundles.py <llmc> <work-dir> name...
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(args)}\n{result.stdout}{result.stderr}")


def main():
    llmc, work, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    fixtures = os.path.join(work, "fixtures")
    os.makedirs(work, exist_ok=True)
    fp8_kv = "-fp8kv"
    written = {name.removesuffix(fp8_kv) for name in names if name != "shipped"}
    run("/usr/bin/python3", os.path.join(ROOT, "test", "fixtures", "make_fixtures.py"),
        fixtures, "--only", ",".join(sorted(written)))
    for name in names:
        mlir = os.path.join(work, name + ".mlir")
        shipped = name == "shipped"
        source = os.path.join(ROOT, "examples", "kjv-devil-tiny") if shipped else \
            os.path.join(fixtures, name.removesuffix(fp8_kv))
        run(llmc, "import", source, "-o", mlir)
        run(llmc, "compile", mlir, "-o", os.path.join(work, name + ".llmb"),
            *(["--embed-weights"] if shipped else []),
            *(["--kv-cache-dtype", "fp8"] if name.endswith(fp8_kv) else []))
    print(f"bundles of {', '.join(names)} in {work}")


if __name__ == "__main__":
    main()
