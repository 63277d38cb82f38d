"""Closed triangle solids for the visual meshes (numpy only): prisms of a polygon, solids of
revolution, the slotted profile and link 4's fork.

A solid is (F, 3, 3) triangles in metres, each counter-clockwise seen from outside (its normal,
by the right-hand rule, points out), every edge shared by exactly two of them.
"""

from __future__ import annotations

import math

import numpy as np

#: The axes (u, v, axis) of a right-handed frame around each axis.
FRAMES = {"x": (1, 2, 0), "y": (2, 0, 1), "z": (0, 1, 2)}


class MeshError(ValueError):
    """Dimensions that make no mesh (a slot wider than its face, a spindle longer than the bit...)."""


def _frame(axis: str) -> np.ndarray:
    """(3, 3) rows u, v, a: a right-handed frame whose third vector is the world `axis`."""
    return np.eye(3)[list(FRAMES[axis])]


def polygon_triangles(points: np.ndarray) -> list[tuple[int, int, int]]:
    """Ear clipping of a simple counter-clockwise polygon (N, 2): N - 2 index triangles."""
    remaining = list(range(len(points)))
    triangles = []

    def cross(o: int, a: int, b: int) -> float:
        (ox, oy), (ax, ay), (bx, by) = points[o], points[a], points[b]
        return (ax - ox) * (by - oy) - (ay - oy) * (bx - ox)

    while len(remaining) > 3:
        for i in range(len(remaining)):
            a, b, c = remaining[i - 1], remaining[i], remaining[(i + 1) % len(remaining)]
            if cross(a, b, c) <= 0.0:
                continue  # reflex or flat corner: not an ear
            inside = any(
                cross(a, b, p) >= 0.0 and cross(b, c, p) >= 0.0 and cross(c, a, p) >= 0.0
                for p in remaining
                if p not in (a, b, c)
            )
            if not inside:
                triangles.append((a, b, c))
                remaining.pop(i)
                break
        else:
            raise MeshError("the profile polygon is not simple and counter-clockwise")
    triangles.append(tuple(remaining))
    return triangles


def extrude(polygon: np.ndarray, start: float, end: float, axis: str, offset=(0.0, 0.0, 0.0)) -> np.ndarray:
    """A prism: the counter-clockwise polygon (N, 2) in the (u, v) plane of `axis` (x: y z, y: z x,
    z: x y) swept from `start` to `end` (m) along it, moved by `offset` (3,)."""
    frame = _frame(axis)
    polygon = np.asarray(polygon, dtype=float)

    def lift(points: np.ndarray, s: float) -> np.ndarray:
        return points[:, :1] * frame[0] + points[:, 1:2] * frame[1] + s * frame[2] + np.asarray(offset)

    low, high = lift(polygon, start), lift(polygon, end)
    triangles = []
    for a, b, c in polygon_triangles(polygon):
        triangles.append((high[a], high[b], high[c]))
        triangles.append((low[a], low[c], low[b]))
    for k in range(len(polygon)):
        n = (k + 1) % len(polygon)
        triangles += [(low[k], low[n], high[n]), (low[k], high[n], high[k])]
    return np.array(triangles)


def _ring_angles(segments: int) -> np.ndarray:
    return 2.0 * math.pi * np.arange(segments) / segments


def circle(radius: float, segments: int) -> np.ndarray:
    """(segments, 2) counter-clockwise regular polygon with its vertices on the circle, the first
    at angle 0 (so with segments % 4 == 0 it reaches +-radius on both axes)."""
    angles = _ring_angles(segments)
    return radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)


def revolve(
    profile: list[tuple[float, float]], axis: str, segments: int, offset=(0.0, 0.0, 0.0)
) -> np.ndarray:
    """A solid of revolution about `axis`: profile [(s, r), ...] from a point on the axis (r = 0)
    to another (s non-decreasing along the axis, r > 0 in between), moved by `offset` (3,)."""
    points = np.asarray(profile, dtype=float)
    if points[0, 1] != 0.0 or points[-1, 1] != 0.0 or np.any(points[1:-1, 1] <= 0.0):
        raise MeshError("a revolved profile starts and ends on the axis and stays off it in between")
    frame = _frame(axis)
    ring = circle(1.0, segments)
    triangles = []

    def at(i: int, k: int) -> np.ndarray:
        s, r = points[i]
        u, v = ring[k % segments]
        return s * frame[2] + r * (u * frame[0] + v * frame[1]) + np.asarray(offset)

    for i in range(len(points) - 1):
        for k in range(segments):
            a, b, c, d = at(i, k), at(i, k + 1), at(i + 1, k + 1), at(i + 1, k)
            if points[i, 1] == 0.0:
                triangles.append((a, c, d))  # cone from the start point
            elif points[i + 1, 1] == 0.0:
                triangles.append((a, b, c))  # cone to the end point
            else:
                triangles += [(a, b, c), (a, c, d)]
    return np.array(triangles)


def slotted_profile(width: float, height: float, slot_width: float, slot_depth: float) -> np.ndarray:
    """(20, 2) counter-clockwise outline of a width x height (u, v) profile centred at the origin
    with a rectangular slot in the middle of each face."""
    if not (slot_width < min(width, height) and 2 * slot_depth < min(width, height)):
        raise MeshError(
            f"a {slot_width} m x {slot_depth} m slot does not fit a {width} m x {height} m profile"
        )
    w, h, s, d = width / 2, height / 2, slot_width / 2, slot_depth
    return np.array(
        [
            (-w, -h), (-s, -h), (-s, -h + d), (s, -h + d), (s, -h),
            (w, -h), (w, -s), (w - d, -s), (w - d, s), (w, s),
            (w, h), (s, h), (s, h - d), (-s, h - d), (-s, h),
            (-w, h), (-w, s), (-w + d, s), (-w + d, -s), (-w, -s),
        ]
    )  # fmt: skip


def fork(radius: float, length: float, gap: float, fork_length: float, segments: int) -> np.ndarray:
    """Link 4: a z column of `radius` from z = 0 down to z = -length whose lower `fork_length` is
    cut by a slot `gap` wide across y (the cheeks |y| >= gap / 2 hold the theta5 axis, along y at
    z = -length). One closed shell: the ring carries the cheeks' edge angles."""
    if not (0.0 < gap < 2 * radius and 0.0 < fork_length < length):
        raise MeshError(
            f"a {gap} m fork gap {fork_length} m long does not fit link 4 ({radius} m, {length} m)"
        )
    edge = math.asin(gap / (2 * radius))
    edges = np.array([edge, math.pi - edge, math.pi + edge, 2 * math.pi - edge])
    angles = np.unique(np.concatenate([_ring_angles(segments), edges]))
    ring = radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    in_cheek = np.abs(ring[:, 1]) >= gap / 2 - 1e-12  # the edge angles belong to both
    top, roof, bottom = 0.0, -(length - fork_length), -length

    def p(k: int, z: float) -> np.ndarray:
        x, y = ring[k % len(ring)]
        return np.array([x, y, z])

    triangles = []
    count = len(ring)
    for k in range(count):
        n = (k + 1) % count
        triangles += [(p(k, roof), p(n, roof), p(n, top)), (p(k, roof), p(n, top), p(k, top))]
        if in_cheek[k] and in_cheek[n] and abs(ring[k, 1] + ring[n, 1]) > gap:  # a cheek's facet
            triangles += [(p(k, bottom), p(n, bottom), p(n, roof)), (p(k, bottom), p(n, roof), p(k, roof))]
    top_cap = polygon_triangles(ring)
    triangles += [(p(a, top), p(b, top), p(c, top)) for a, b, c in top_cap]
    # the cheeks' floors (z = -length) and the slot's roof (z = roof), split by the edge angles
    index = {round(float(a), 12): k for k, a in enumerate(angles)}
    e0, e1, e2, e3 = (index[round(float(a), 12)] for a in edges)
    for first, last in ((e0, e1), (e2, e3)):  # cheek y > 0, cheek y < 0: arc first..last, chord back
        cheek = list(range(first, last + 1))
        for a, b, c in polygon_triangles(ring[cheek]):
            triangles.append((p(cheek[a], bottom), p(cheek[c], bottom), p(cheek[b], bottom)))
        # the slot's wall: the chord last -> first, from the roof down to the floor
        triangles += [
            (p(last, roof), p(first, bottom), p(first, roof)),
            (p(last, roof), p(last, bottom), p(first, bottom)),
        ]
    slot = [*range(e3, count), *range(0, e0 + 1), *range(e1, e2 + 1)]  # |y| <= gap / 2, ccw
    for a, b, c in polygon_triangles(ring[slot]):
        triangles.append((p(slot[a], roof), p(slot[c], roof), p(slot[b], roof)))
    return np.array(triangles)
