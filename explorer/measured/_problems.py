"""Problem collection: every parser reports all problems (row, field, reason), not the first."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from explorer.specs.measured import (
    AcceptanceCurve,
    KernelTimings,
    ParseResult,
    Problem,
    Severity,
    StepTimings,
)

# More problems than this are summarised in one final problem (a 100k-row file where every row
# is bad would otherwise carry 100k messages).
MAX_PROBLEMS = 10_000


class Collector:
    """Accumulates problems; every parser reports all of them, not just the first."""

    def __init__(self) -> None:
        self._items: list[Problem] = []
        self._dropped = 0
        self._dropped_errors = 0

    def add(
        self, severity: Severity, message: str, row: int | None = None, field: str | None = None
    ) -> None:
        if len(self._items) >= MAX_PROBLEMS:
            self._dropped += 1
            self._dropped_errors += severity == "error"
            return
        self._items.append(Problem(row=row, field=field, message=message, severity=severity))

    def error(self, message: str, row: int | None = None, field: str | None = None) -> None:
        self.add("error", message, row, field)

    def warn(self, message: str, row: int | None = None, field: str | None = None) -> None:
        self.add("warning", message, row, field)

    @property
    def has_errors(self) -> bool:
        return self._dropped_errors > 0 or any(p.severity == "error" for p in self._items)

    def error_count(self) -> int:
        return self._dropped_errors + sum(p.severity == "error" for p in self._items)

    def problems(self) -> tuple[Problem, ...]:
        """File-level problems first, then by row (stable, so related messages stay together)."""
        items = sorted(self._items, key=lambda p: -1 if p.row is None else p.row)
        if self._dropped:
            severity: Severity = "error" if self._dropped_errors else "warning"
            items.append(
                Problem(
                    message=f"... and {self._dropped} more problems like the ones above "
                    f"(the first {MAX_PROBLEMS} are listed)",
                    severity=severity,
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
