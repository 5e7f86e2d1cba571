"""Reads and writes the safetensors format (8-byte little-endian header length,
JSON header of dtype/shape/data_offsets per tensor, raw little-endian data)
without the safetensors package, which Debian does not ship."""
import json
import struct

import numpy as np
import torch

DTYPES = {"F16": np.float16, "F32": np.float32}


class SafetensorsError(RuntimeError):
    pass


def save(path, tensors, dtype="F16"):
    """Writes {name: torch.Tensor} converted to dtype, names sorted."""
    header = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name in sorted(tensors):
        data = tensors[name].detach().float().numpy().astype(DTYPES[dtype]).astype("<" + np.dtype(DTYPES[dtype]).str[1:])
        raw = data.tobytes()
        header[name] = {"dtype": dtype, "shape": list(data.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * (-len(head) % 8)  # align the data to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for raw in blobs:
            f.write(raw)


def load(path):
    """Returns {name: float32 torch.Tensor}."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise SafetensorsError(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise SafetensorsError(f"{path}: header length {n} runs past the end of the file ({len(blob)} bytes)")
    header = json.loads(blob[8:8 + n])
    data = memoryview(blob)[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in DTYPES:
            raise SafetensorsError(f"{path}: tensor {name} has dtype {info['dtype']}, expected one of {sorted(DTYPES)}")
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[begin:end], dtype="<" + np.dtype(DTYPES[info["dtype"]]).str[1:])
        tensors[name] = torch.from_numpy(array.astype(np.float32).reshape(info["shape"]))
    return tensors
