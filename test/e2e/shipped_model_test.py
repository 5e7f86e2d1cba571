#!/usr/bin/python3
"""The shipped model (examples/kjv-devil-tiny) through import, compile and
the engine's step entry point: its greedy continuation of fixed prompts must
equal the independent torch reference token for token.

Usage: shipped_model_test.py <build-dir> <work-dir>
"""

import json
import os
import subprocess
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
import torch_reference  # noqa: E402

MODEL = os.path.join(ROOT, "examples", "kjv-devil-tiny")
PROMPTS = ["And it came to pass", "In the beginning", "LAWYER, n."]
# Chat turns as the chat template renders them (they carry their own <s>).
CHAT_PROMPTS = ["<s><|user|>Define LAWYER.<|assistant|>", "<s><|user|>Quote John 3:16.<|assistant|>"]
STEPS = 32


def run(*args, stdin=None):
    result = subprocess.run(args, capture_output=True, text=True, input=stdin)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(args)}\n{result.stdout}{result.stderr}")
    return result.stdout


def main():
    build, work = (os.path.abspath(a) for a in sys.argv[1:3])
    os.makedirs(work, exist_ok=True)
    bin_dir = os.path.join(build, "bin")
    mlir, bundle = os.path.join(work, "model.mlir"), os.path.join(work, "model.llmb")
    run(os.path.join(bin_dir, "llmc"), "import", MODEL, "-o", mlir)
    run(os.path.join(bin_dir, "llmc"), "compile", mlir, "-o", bundle)
    torch.set_num_threads(1)
    model = torch_reference.load_model(MODEL)
    encoded = run(os.path.join(bin_dir, "llmrun"), "tokenize", "--tokenizer", MODEL,
                  stdin="".join(json.dumps(p) + "\n" for p in PROMPTS)).splitlines()
    encoded += run(os.path.join(bin_dir, "llmrun"), "tokenize", "--tokenizer", MODEL,
                   "--no-special-tokens",
                   stdin="".join(json.dumps(p) + "\n" for p in CHAT_PROMPTS)).splitlines()
    failed = 0
    for text, line in zip(PROMPTS + CHAT_PROMPTS, encoded):
        prompt = json.loads(line)
        with torch.no_grad():
            want, _ = torch_reference.greedy(model, prompt, STEPS)
        got = json.loads(run(os.path.join(bin_dir, "llmserve-step-driver"), bundle,
                             "--greedy", str(STEPS), "--prompt", ",".join(map(str, prompt))))
        ok = got == want
        failed += not ok
        print(f"{'ok' if ok else 'FAIL'} {text!r}: {got}" + ("" if ok else f" != {want}"))
    print(f"{len(encoded) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
