"""A small safetensors reader and writer (torch tensors), written from the
format description so the fixtures and the reference need no `safetensors`
package: 8-byte little-endian header length, JSON header, tensor bytes."""

import json
import os
import struct

import torch

DTYPES = {
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I32": torch.int32,
    "I64": torch.int64,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
NAMES = {dtype: name for name, dtype in DTYPES.items()}
FP8_E4M3 = "F8_E4M3"


class E4M3Codes:
    """An F8_E4M3 tensor (torch 1.13 has no float8 type): its codes as a
    uint8 tensor, written and read under the F8_E4M3 dtype."""

    def __init__(self, codes):
        assert codes.dtype == torch.uint8
        self.codes = codes
        self.shape = codes.shape

# Same-width integer types: torch 1.13 cannot hand bfloat16 to numpy.
_BYTES_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def tensor_bytes(tensor):
    t = tensor.detach().contiguous().cpu()
    return t.view(_BYTES_VIEW[t.element_size()]).numpy().tobytes()


def header_for(entries):
    """The header bytes for (name, dtype, shape) entries laid out in order."""
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, dtype, shape in entries:
        nbytes = 1 if dtype == FP8_E4M3 else torch.empty((), dtype=dtype).element_size()
        for d in shape:
            nbytes *= d
        header[name] = {"dtype": dtype if dtype == FP8_E4M3 else NAMES[dtype], "shape": list(shape),
                        "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    return text + b" " * (-len(text) % 8)


def write_safetensors(path, tensors):
    """Writes {name: tensor} in order. `tensors` may also map a name to a
    (dtype, shape, make) triple, `make()` returning the tensor, so a large
    checkpoint is produced one tensor at a time."""
    entries, makers = [], []
    for name, value in tensors.items():
        if isinstance(value, E4M3Codes):
            entries.append((name, FP8_E4M3, tuple(value.shape)))
            makers.append(lambda value=value: value.codes)
        elif isinstance(value, torch.Tensor):
            entries.append((name, value.dtype, tuple(value.shape)))
            makers.append(lambda value=value: value)
        else:
            dtype, shape, make = value
            entries.append((name, dtype, tuple(shape)))
            makers.append(make)
    header = header_for(entries)
    tmp = path + ".tmp"
    with open(tmp, "wb") as out:
        out.write(struct.pack("<Q", len(header)))
        out.write(header)
        for (name, dtype, shape), make in zip(entries, makers):
            tensor = make()
            stored = torch.uint8 if dtype == FP8_E4M3 else dtype
            if tensor.dtype != stored or tuple(tensor.shape) != shape:
                raise ValueError(f"{path}: tensor '{name}' is {tensor.dtype} {tuple(tensor.shape)}, "
                                 f"declared {dtype} {shape}")
            out.write(tensor_bytes(tensor))
    os.replace(tmp, path)


def read_safetensors(path):
    """{name: tensor} of a safetensors file, checking the layout as it goes."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: too short for a header length")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > len(data) - 8:
        raise ValueError(f"{path}: header length {header_len} runs past the end of the file")
    header = json.loads(data[8:8 + header_len])
    body = bytearray(data[8 + header_len:])
    tensors, spans = {}, []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        fp8 = info["dtype"] == FP8_E4M3
        if info["dtype"] not in DTYPES and not fp8:
            continue  # a dtype llmserve does not read either (F64, I8, ...)
        dtype = torch.uint8 if fp8 else DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        count = 1
        for d in info["shape"]:
            count *= d
        size = torch.empty((), dtype=dtype).element_size()
        if not 0 <= begin <= end <= len(body) or end - begin != count * size:
            raise ValueError(f"{path}: tensor '{name}': data_offsets {info['data_offsets']} "
                             f"do not fit shape {info['shape']} of {info['dtype']}")
        spans.append((begin, end, name))
        raw = body[begin:end]
        tensors[name] = (torch.frombuffer(raw, dtype=dtype) if count else
                         torch.empty(0, dtype=dtype)).reshape(info["shape"])
        if fp8:
            tensors[name] = E4M3Codes(tensors[name])
    covered = 0
    for begin, end, name in sorted(spans):
        if begin < covered:
            raise ValueError(f"{path}: tensor '{name}' overlaps the previous tensor")
        covered = end
    return tensors


def read_checkpoint(directory):
    """{name: tensor} of a Hugging Face checkpoint directory: model.safetensors,
    or the shards listed in model.safetensors.index.json."""
    single = os.path.join(directory, "model.safetensors")
    if os.path.exists(single):
        return read_safetensors(single)
    with open(os.path.join(directory, "model.safetensors.index.json")) as f:
        weight_map = json.load(f)["weight_map"]
    tensors = {}
    for shard in sorted(set(weight_map.values())):
        tensors.update(read_safetensors(os.path.join(directory, shard)))
    missing = sorted(set(weight_map) - set(tensors))
    if missing:
        raise ValueError(f"{directory}: index lists tensors its shards lack: {missing}")
    return tensors
