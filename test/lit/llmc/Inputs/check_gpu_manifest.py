"""Checks an sm_90 bundle's manifest and prints what the lit test compares.

Every kernel must carry its launch shape (docs/bundle.md, "NVIDIA bundles");
the summary names the storage types of weights, KV caches and activations
and the type of the logits the sampler reads.
"""
import json
import sys

manifest = json.load(open(sys.argv[1]))
kernels = manifest["kernels"]
for k in kernels:
    block = k.get("block")
    if (not isinstance(block, list) or len(block) != 3
            or block[0] * block[1] * block[2] > 1024
            or not isinstance(k.get("shared_bytes"), int) or k["shared_bytes"] < 0):
        sys.exit(f"kernel {k['name']} has no valid launch shape: {k}")
buffers = manifest["buffers"]
def dtypes(kind):
    return " ".join(sorted({b["dtype"] for b in buffers if b["kind"] == kind}))
sampled = [buffers[d["bindings"][0]]["dtype"]
           for e in manifest["entry_points"] for d in e["dispatches"]
           if d["kernel"].endswith("_sample")]
print("target", manifest["target"])
print("kernels", len(kernels), "with launch shapes")
print("weights", dtypes("weight"))
print("kv_cache", dtypes("kv_cache"), manifest["kv_cache"]["dtype"])
print("activations", dtypes("activation"))
print("sampled logits", " ".join(sampled))
