"""compare_models.py A.safetensors B.safetensors TOL: exit 0 when both files
hold the same F32 tensors and no element differs by more than TOL; prints
the largest difference and the tensor it is in."""
import json
import struct
import sys

import numpy as np


def tensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len])
    base = 8 + header_len
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            sys.exit(f"{path}: {name} is {info['dtype']}, expected F32")
        start, end = info["data_offsets"]
        out[name] = np.frombuffer(data[base + start:base + end], dtype=np.float32)
    return out


def main():
    a, b, tol = tensors(sys.argv[1]), tensors(sys.argv[2]), float(sys.argv[3])
    if a.keys() != b.keys():
        sys.exit(f"different tensors: {sorted(a.keys() ^ b.keys())}")
    worst, where = 0.0, ""
    for name in a:
        diff = float(np.abs(a[name] - b[name]).max())
        if diff > worst:
            worst, where = diff, name
    print(f"  max |difference| {worst:.3g} ({where or 'none'}), tolerance {tol:g}")
    sys.exit(0 if worst <= tol else 1)


main()
