"""Multilinear interpolation on a regular grid in log space, with coverage — never extrapolation."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.intp]

KNOWN = np.uint8(1)  # grid point has a value (measured or filled)
FLAGGED = np.uint8(2)  # … and it was filled, not measured


@dataclass(frozen=True)
class Located:
    """Where query points fall on one axis: lower node index, weight of the upper node, inside."""

    index: IntArray
    weight: FloatArray
    inside: BoolArray


@dataclass(frozen=True)
class Grid:
    """Log values on a regular grid, prepared for fast lookups."""

    axes_log: tuple[FloatArray, ...]
    values: FloatArray  # log values, 0 where unknown (so sums need no masking)
    status: npt.NDArray[np.uint8]  # KNOWN | FLAGGED bits
    all_known: bool
    any_flagged: bool

    @classmethod
    def build(cls, axes_log: Sequence[FloatArray], log_values: FloatArray,
              flagged: BoolArray | None = None) -> Grid:
        known = np.isfinite(log_values)
        flags = np.zeros_like(known) if flagged is None else flagged & known
        status = known.astype(np.uint8) | (flags.astype(np.uint8) * FLAGGED)
        return cls(tuple(axes_log), np.where(known, log_values, 0.0), status,
                   bool(known.all()), bool(flags.any()))


def log_axis(values: npt.ArrayLike) -> FloatArray:
    return np.log(np.asarray(values, dtype=np.float64))


def log_query(values: npt.ArrayLike) -> FloatArray:
    """Log of query values; 0, negative or NaN give -inf/NaN (not covered), without warnings."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(np.asarray(values, dtype=np.float64))


def locate(axis_log: FloatArray, x_log: FloatArray) -> Located:
    """Bracket each x in a sorted log axis (≥ 2 nodes). At a node the weight is exactly 0 or 1,
    so the interpolant returns the grid value there; outside the axis (or NaN) `inside` is
    False and the weight is clipped, which only keeps the arithmetic finite."""
    with np.errstate(invalid="ignore"):
        inside = (x_log >= axis_log[0]) & (x_log <= axis_log[-1])
    index = np.clip(np.asarray(np.searchsorted(axis_log, x_log, side="right")) - 1, 0,
                    axis_log.size - 2)
    lo = axis_log[index]
    with np.errstate(invalid="ignore"):
        weight = np.clip((x_log - lo) / (axis_log[index + 1] - lo), 0.0, 1.0)
    return Located(index.astype(np.intp, copy=False), weight, np.asarray(inside))


def interpolate(
    grid: Grid, axes: Sequence[Located], shape: tuple[int, ...]
) -> tuple[FloatArray, BoolArray, BoolArray]:
    """Multilinear interpolation at located points (each axis's arrays broadcast to `shape`).

    Returns (log value, ok, touches_flagged): ok is False outside the box or where a corner
    with non-zero weight is unknown; touches_flagged where such a corner was filled."""
    flat, status = grid.values.ravel(), grid.status.ravel()
    strides = np.cumprod((*grid.values.shape[1:], 1)[::-1])[::-1]
    inside = np.broadcast_to(axes[0].inside, shape)
    for ax in axes[1:]:
        inside = inside & ax.inside
    base = sum((ax.index * int(s) for ax, s in zip(axes, strides, strict=True)),
               start=np.zeros((), dtype=np.intp))
    pairs = [(1.0 - ax.weight, ax.weight) for ax in axes]
    value = np.zeros(shape)
    unknown = np.zeros(shape, dtype=np.bool_)
    touches = np.zeros(shape, dtype=np.bool_)
    for corner in itertools.product((0, 1), repeat=len(axes)):
        weight = pairs[0][corner[0]]
        for pair, c in zip(pairs[1:], corner[1:], strict=True):
            weight = weight * pair[c]
        index = base + int(np.dot(corner, strides))
        value += weight * flat[index]
        if grid.all_known and not grid.any_flagged:
            continue  # nothing to check: every corner is a measured point
        code = status[index]
        used = weight > 0.0
        unknown |= used & ((code & KNOWN) == 0)
        touches |= used & ((code & FLAGGED) != 0)
    ok = np.asarray(inside & ~unknown)
    return value, ok, np.asarray(touches & ok)
