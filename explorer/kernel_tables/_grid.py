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


@dataclass(frozen=True)
class Located:
    """Where query points fall on one axis: lower node index, weight of the upper node, inside."""

    index: IntArray
    weight: FloatArray
    inside: BoolArray


def log_axis(values: npt.ArrayLike) -> FloatArray:
    return np.log(np.asarray(values, dtype=np.float64))


def locate(axis_log: FloatArray, x_log: FloatArray) -> Located:
    """Bracket each x in a sorted log axis (≥ 2 nodes). At a node the weight is exactly 0 or 1,
    so the interpolant returns the measured value there; outside the axis range `inside` is
    False (NaN too) and the weight is clipped, which only keeps the arithmetic finite."""
    with np.errstate(invalid="ignore"):
        inside = (x_log >= axis_log[0]) & (x_log <= axis_log[-1])
    index = np.clip(np.searchsorted(axis_log, x_log, side="right") - 1, 0, axis_log.size - 2)
    lo, hi = axis_log[index], axis_log[index + 1]
    weight = np.clip(np.nan_to_num((x_log - lo) / (hi - lo)), 0.0, 1.0)
    return Located(index.astype(np.intp), weight, np.asarray(inside, dtype=np.bool_))


def interpolate(
    grid: FloatArray, known: BoolArray, flagged: BoolArray, axes: Sequence[Located]
) -> tuple[FloatArray, BoolArray, BoolArray]:
    """Multilinear interpolation of `grid` (NaN where unknown) at located points.

    Returns (value, ok, touches_flagged): ok is False outside the box or where a corner with
    non-zero weight is unknown; touches_flagged where such a corner is flagged (e.g. filled)."""
    flat, known_flat, flag_flat = grid.ravel(), known.ravel(), flagged.ravel()
    strides = np.cumprod((*grid.shape[1:], 1)[::-1])[::-1]
    n = axes[0].index.size
    value = np.zeros(n)
    ok = np.ones(n, dtype=np.bool_)
    touches = np.zeros(n, dtype=np.bool_)
    for ax in axes:
        ok &= ax.inside
    for corner in itertools.product((0, 1), repeat=len(axes)):
        weight = np.ones(n)
        index = np.zeros(n, dtype=np.intp)
        for c, ax, stride in zip(corner, axes, strides, strict=True):
            weight = weight * (ax.weight if c else 1.0 - ax.weight)
            index = index + (ax.index + c) * int(stride)
        used = weight > 0.0
        corner_known = known_flat[index]
        ok &= ~used | corner_known
        touches |= used & flag_flat[index]
        value += np.where(used & corner_known, weight * np.where(corner_known, flat[index], 0.0),
                          0.0)
    return value, ok, touches
