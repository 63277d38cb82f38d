"""Binary STL: write triangles deterministically (fixed header, float32, no date) and read them."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from quirobot_description.mesh_solids import MeshError

STL_HEADER = b"quirobot_description.visual_meshes binary STL, metres"
#: One binary STL triangle: normal, three vertices (float32 little-endian), attribute word.
STL_TRIANGLE = np.dtype([("normal", "<f4", (3,)), ("vertices", "<f4", (3, 3)), ("attribute", "<u2")])


def stl_bytes(triangles: np.ndarray) -> bytes:
    """Binary STL of (F, 3, 3) triangles: fixed header, float32 normals and vertices."""
    vertices = np.asarray(triangles, dtype=np.float32)
    normals = np.cross(vertices[:, 1] - vertices[:, 0], vertices[:, 2] - vertices[:, 0]).astype(np.float64)
    lengths = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = np.divide(normals, lengths, out=np.zeros_like(normals), where=lengths > 0)
    records = np.zeros(len(vertices), dtype=STL_TRIANGLE)
    records["normal"], records["vertices"] = normals, vertices
    return STL_HEADER.ljust(80, b" ") + struct.pack("<I", len(records)) + records.tobytes()


def read_stl(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """(triangles (F, 3, 3), stored normals (F, 3)) of a binary STL, float64, m."""
    data = Path(path).read_bytes()
    if len(data) < 84:
        raise MeshError(f"{path}: not a binary STL ({len(data)} bytes)")
    (count,) = struct.unpack_from("<I", data, 80)
    if len(data) != 84 + count * STL_TRIANGLE.itemsize:
        raise MeshError(f"{path}: {len(data)} bytes, a binary STL of {count} triangles has {84 + count * 50}")
    records = np.frombuffer(data, dtype=STL_TRIANGLE, count=count, offset=84)
    return records["vertices"].astype(np.float64), records["normal"].astype(np.float64)
