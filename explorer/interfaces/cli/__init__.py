"""Command-line interface: a thin caller of the Python API (`python -m explorer --help`).

options.py: the parser, UsageError, the scenario options derived from the setting declarations
and the scenario they build; commands.py: every command; scenario.py: `scenario save|show|list`
and `evaluate --scenario-id` on the app's store; deploy.py: `deploy` and `require`; bench.py:
`bench-plan` and `bench-compare`. Imports run options ← scenario ← deploy ← bench ← commands ←
here, with no way back."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

from explorer.base.errors import ScenarioError
from explorer.base.quoting import shown
from explorer.interfaces.cli.commands import COMMANDS, build_parser
from explorer.interfaces.cli.options import FLAG_OF_FIELD, UsageError


class TerminalText(io.TextIOBase):
    """A terminal's side of stdout/stderr: every line printed goes through the one quoting
    function (explorer/base/quoting.py `shown`, without Markdown: a terminal renders none), so
    no text a file, a link or a flag supplies — a model name, a path, a cell — can move the
    cursor, retitle the window or fail to encode (a lone surrogate). JSON is printed ASCII-only
    and passes unchanged; line breaks are kept."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write("\n".join(shown(line, markdown=False) for line in text.split("\n")))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:
        return self.stream.fileno()


@contextmanager
def _terminal() -> Iterator[None]:
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalText(out), TerminalText(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def main(argv: Sequence[str] | None = None) -> int:
    with _terminal():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ScenarioError as exc:
        print(f"error: argument {FLAG_OF_FIELD.get(exc.field, exc.field)}: {exc.message}",
              file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader left (`… | head`): nothing more can be said on stdout, and Python would print
        # a traceback while flushing it at exit, so point stdout at devnull first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


__all__ = ["FLAG_OF_FIELD", "UsageError", "build_parser", "main"]
