"""`llmrun call` end to end, the way the compiler's op-numerics tests use it:
numpy writes the inputs, llmrun runs an entry point of a bundle, numpy reads
the results and compares them with its own computation.

usage: /usr/bin/python3 llmrun_call_test.py <llmrun> <test_kernels.so>
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np

LLMRUN, KERNELS = sys.argv[1], sys.argv[2]

# The versions this build's runtime accepts, from the header it shares with
# the compiler.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                       "runtime", "include", "llmserve", "abi.h")) as header:
    ABI = dict(re.findall(r"constexpr int (k\w+Version) = (\d+);", header.read()))


def write_safetensors(path, tensors):
    header, data = {}, b""
    for name, array in tensors.items():
        dtype = {np.float32: "F32", np.float16: "F16"}[array.dtype.type]
        raw = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def manifest():
    def dispatch(kernel, bindings, push_constants, grid):
        return {"kernel": kernel, "bindings": bindings,
                "push_constants": push_constants, "grid": grid}
    return {
        "format": "llmserve-bundle", "format_version": int(ABI["kBundleFormatVersion"]),
        "kernel_abi_version": int(ABI["kKernelAbiVersion"]),
        "target": "cpu",
        "model": {"architecture": "llama", "vocab_size": 8, "hidden_size": 4,
                  "num_layers": 1, "num_heads": 1, "num_kv_heads": 1, "head_dim": 4,
                  "max_position_embeddings": 64, "bos_token_id": 1, "eos_token_ids": [2]},
        "kv_cache": {"block_size": 2, "dtype": "f32", "layout": "block,slot,head,dim",
                     "num_layers": 1, "num_kv_heads": 1, "head_dim": 4,
                     "bytes_per_token": 32},
        "weights": {"checkpoint": "../ckpt"},  # relative to the bundle
        "buffers": [
            {"kind": "argument", "name": "a", "dtype": "f32", "shape": ["T"]},
            {"kind": "argument", "name": "b", "dtype": "f32", "shape": ["T"]},
            {"kind": "activation", "dtype": "f32", "shape": ["T"]},
            {"kind": "result", "name": "sum", "dtype": "f32", "shape": ["T"]},
            {"kind": "argument", "name": "x", "dtype": "f32", "shape": [2, 4]},
            {"kind": "weight", "name": "proj", "dtype": "f32", "shape": [4, 3],
             "tensor": "proj", "transform": "transpose"},
            {"kind": "result", "name": "projected", "dtype": "f32", "shape": [2, 3]},
        ],
        "kernels": [{"name": "add", "symbol": "test_add"},
                    {"name": "matmul", "symbol": "test_matmul"}],
        "entry_points": [
            {"name": "add", "arguments": [0, 1], "results": [3], "dispatches": [
                dispatch("add", [0, 1, 2], ["T"], ["ceildiv(T,4)", 1, 1]),
                dispatch("add", [2, 0, 3], ["T"], ["ceildiv(T,4)", 1, 1])]},
            {"name": "project", "arguments": [4], "results": [6], "dispatches": [
                dispatch("matmul", [4, 5, 6], [4, 3], [2, 3, 1])]},
        ],
    }


class LlmrunCall(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="llmrun_call_")
        self.bundle = os.path.join(self.dir, "ops.llmb")
        os.makedirs(self.bundle)
        with open(os.path.join(self.bundle, "manifest.json"), "w") as f:
            json.dump(manifest(), f)
        shutil.copy(KERNELS, os.path.join(self.bundle, "kernels.cpu.so"))
        self.rng = np.random.default_rng(0)
        self.proj = self.rng.standard_normal((3, 4)).astype(np.float32)
        self.checkpoint("ckpt", {"proj": self.proj})

    def checkpoint(self, name, tensors):
        path = os.path.join(self.dir, name)
        os.makedirs(path)
        write_safetensors(os.path.join(path, "model.safetensors"), tensors)
        return path

    def tearDown(self):
        shutil.rmtree(self.dir)

    def save(self, name, array):
        path = os.path.join(self.dir, name)
        np.save(path, array)
        return path

    def call(self, *args):
        out = os.path.join(self.dir, "out")
        proc = subprocess.run([LLMRUN, "call", self.bundle, *args, "--output-dir", out],
                              capture_output=True, text=True, timeout=60)
        return proc, out

    def test_dynamic_entry_point(self):
        a = self.rng.standard_normal(7).astype(np.float32)
        b = self.rng.standard_normal(7).astype(np.float32)
        proc, out = self.call("--entry", "add", "--sym", "T=7", "--threads", "2",
                              "--input", self.save("a.npy", a), self.save("b.npy", b))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        result = np.load(os.path.join(out, "result_0.npy"))
        self.assertEqual(result.dtype, np.float32)
        np.testing.assert_array_equal(result, (a + b) + a)

    def test_weights_from_the_recorded_checkpoint(self):
        x = self.rng.standard_normal((2, 4)).astype(np.float32)
        proc, out = self.call("--entry", "project", "--input", self.save("x.npy", x))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        result = np.load(os.path.join(out, "result_0.npy"))
        np.testing.assert_allclose(result, x @ self.proj.T, rtol=1e-6)

    def test_weights_from_a_checkpoint_given_on_the_command_line(self):
        proj = self.rng.standard_normal((3, 4)).astype(np.float16)
        other = self.checkpoint("other", {"proj": proj})
        x = self.rng.standard_normal((2, 4)).astype(np.float32)
        proc, out = self.call("--entry", "project", "--weights", other,
                              "--input", self.save("x.npy", x))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        result = np.load(os.path.join(out, "result_0.npy"))
        np.testing.assert_allclose(result, x @ proj.astype(np.float32).T, rtol=1e-6)

    def test_errors_name_the_problem(self):
        x = self.save("x.npy", np.zeros((4, 2), np.float32))
        proc, _ = self.call("--entry", "project", "--input", x)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("argument 0 'x': got f32 [4, 2], expected f32 [2, 4]", proc.stderr)

        proc, _ = self.call("--entry", "add", "--sym", "Q=3")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("unknown symbol 'Q'", proc.stderr)

        proc, _ = self.call("--entry", "add", "--sym", "T=x")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--sym 'T=x': not an integer", proc.stderr)

        proc, _ = self.call("--input", x)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--entry", proc.stderr)

        proc, _ = self.call("--entry", "add", "--frobnicate")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("argument was not expected: --frobnicate", proc.stderr)

        proc, _ = self.call("--entry", "add", "--threads", "-3")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--threads '-3': must be in [0, 4096]", proc.stderr)

        proc, _ = self.call("--entry", "add", "--sym", "NB=-1")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--sym 'NB=-1': NB must be in [0, 2147483647]", proc.stderr)

        proc, _ = self.call("--entry", "add", "--input", os.path.join(self.dir, "absent.npy"))
        self.assertEqual(proc.returncode, 1)
        self.assertIn("absent.npy: cannot open", proc.stderr)

        proc, _ = self.call("--entry", "project", "--weights",
                            os.path.join(self.dir, "nowhere"), "--input", x)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("nowhere: not a directory", proc.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
