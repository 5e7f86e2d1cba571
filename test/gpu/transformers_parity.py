#!/usr/bin/env python3
"""The float64 torch reference (test/reference/) against Hugging Face
transformers' own modeling code, on the random-weight fixture of every model
family that `gpu_checks.py prepare` wrote:

    transformers_parity.py <prepared-dir>

For each family, transformers' logits of one pass over the prepared sequence
(float64, on the CPU, its eager attention: the SDPA path drops Gemma 2's
score soft-capping) against the reference's (<family>.full.npy): the largest
|transformers - reference| over the sequence's largest |reference| logit
(a row of a zeroed padding token's logits is all zero), which must be at
most 1e-6. Every sequence-level figure of e2e.step_logits
and gpu_checks.py is measured against this reference. Needs torch and
transformers; the GPU machine's python3 has both.
"""

import json
import os
import sys

import numpy as np
import torch
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_checks import FAMILIES  # noqa: E402

TOLERANCE = 1e-6


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = os.path.join(sys.argv[1], "families")
    import transformers
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    ok = True
    for name in FAMILIES:
        with open(os.path.join(root, name + ".sequence.json")) as f:
            sequence = json.load(f)
        want = np.load(os.path.join(root, name + ".full.npy"))
        with open(os.path.join(root, name, "config.json")) as f:
            config = json.load(f)
        # A mixture's experts run eagerly too: torch's grouped GEMM has no float64.
        experts = ({"experts_implementation": "eager"}
                   if "num_experts" in config or "num_local_experts" in config else {})
        try:
            model = AutoModelForCausalLM.from_pretrained(
                os.path.join(root, name), dtype=torch.float64, attn_implementation="eager",
                **experts)
            model.eval()
            with torch.no_grad():
                got = model(torch.tensor([sequence])).logits[0].numpy()
        except Exception as e:  # a family transformers cannot load is a failure
            print(f"FAIL {name}: transformers: {type(e).__name__}: {e}")
            ok = False
            continue
        worst = float(np.abs(got - want).max() / np.abs(want).max())
        passed = worst <= TOLERANCE
        print(f"{'ok' if passed else 'FAIL'} {name}: transformers "
              f"{type(model).__name__} against the reference over {len(sequence)} positions, "
              f"worst relative difference {worst:.2e} (at most {TOLERANCE:.0e})")
        ok &= passed
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
