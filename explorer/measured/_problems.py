"""Problem collection: every parser reports all problems (row, field, reason), not the first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy.typing as npt
from pydantic import ValidationError

from explorer.base.limits import MAX_PROBLEMS
from explorer.specs.measured import (
    AcceptanceCurve,
    KernelTimings,
    ParseResult,
    Problem,
    Severity,
    StepTimings,
)

T = TypeVar("T")


class Collector:
    """Accumulates problems; every parser reports all of them, not just the first.

    Only a page of them is kept (MAX_PROBLEMS, errors before warnings); the rest are counted and
    summarised in one final "and N more" problem, so a 200k-row file where every row is bad costs
    a page of messages, not 200k of them.
    """

    def __init__(self) -> None:
        self._errors: list[Problem] = []
        self._warnings: list[Problem] = []
        self._dropped: dict[Severity, int] = {"error": 0, "warning": 0}

    def _kept(self, severity: Severity) -> list[Problem]:
        return self._errors if severity == "error" else self._warnings

    def room(self, severity: Severity = "error") -> int:
        """How many more problems of this severity would be listed (callers with one problem
        per bad row format only that many messages and `skip` the rest)."""
        return max(0, MAX_PROBLEMS - len(self._kept(severity)))

    def skip(self, severity: Severity, count: int) -> None:
        """Count problems that are not listed."""
        self._dropped[severity] += max(0, count)

    def add_each(self, severity: Severity, items: Sequence[T] | npt.NDArray[Any],
                 problem: Callable[[T], tuple[str, int | None, str | None]]) -> None:
        """One problem per item (message, row, field), formatting only the ones listed: a
        column of 200k bad cells costs a page of messages."""
        shown = items[: self.room(severity)]
        for item in shown:
            self.add(severity, *problem(item))
        self.skip(severity, len(items) - len(shown))

    def add(
        self, severity: Severity, message: str, row: int | None = None, field: str | None = None
    ) -> None:
        if not self.room(severity):
            self._dropped[severity] += 1
            return
        self._kept(severity).append(
            Problem(row=row, field=field, message=message, severity=severity))

    def error(self, message: str, row: int | None = None, field: str | None = None) -> None:
        self.add("error", message, row, field)

    def warn(self, message: str, row: int | None = None, field: str | None = None) -> None:
        self.add("warning", message, row, field)

    @property
    def has_errors(self) -> bool:
        return bool(self._errors) or self._dropped["error"] > 0

    def error_count(self) -> int:
        return len(self._errors) + self._dropped["error"]

    def problems(self) -> tuple[Problem, ...]:
        """At most a page: errors first, warnings fill what is left; file-level problems first,
        then by row (stable, so related messages stay together); then "and N more"."""
        warnings = self._warnings[: max(0, MAX_PROBLEMS - len(self._errors))]
        hidden: dict[Severity, int] = {
            "error": self._dropped["error"],
            "warning": self._dropped["warning"] + len(self._warnings) - len(warnings),
        }
        items = sorted(self._errors + warnings, key=lambda p: -1 if p.row is None else p.row)
        more = hidden["error"] + hidden["warning"]
        if more:
            kinds = [f"{n} {k}{'s' if n != 1 else ''}" for k, n in hidden.items() if n]
            items.append(
                Problem(
                    message=f"... and {more} more problems ({', '.join(kinds)}) like the ones "
                    f"above (the first {MAX_PROBLEMS} are listed)",
                    severity="error" if hidden["error"] else "warning",
                )
            )
        return tuple(items)


def finish(
    fmt: str,
    summary: str,
    col: Collector,
    *,
    curves: Sequence[AcceptanceCurve] = (),
    step_timings: StepTimings | None = None,
    kernel_timings: KernelTimings | None = None,
) -> ParseResult:
    """Assemble a ParseResult; with any error the datasets are dropped."""
    if col.has_errors:
        n = col.error_count()
        return ParseResult(
            format=fmt,
            summary=f"{fmt}: not loaded, {n} error{'s' if n != 1 else ''} to fix",
            problems=col.problems(),
        )
    return ParseResult(
        format=fmt,
        summary=summary,
        curves=tuple(curves),
        step_timings=step_timings,
        kernel_timings=kernel_timings,
        problems=col.problems(),
    )


def validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()))
        parts.append(f"{loc}: {err.get('msg', '')}" if loc else str(err.get("msg", "")))
    return "; ".join(parts)
