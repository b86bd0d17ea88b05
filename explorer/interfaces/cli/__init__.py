"""Command-line interface: a thin caller of the Python API (`python -m explorer --help`).

options.py: the parser, UsageError, the scenario options derived from the setting declarations
and the scenario they build; commands.py: every command; scenario.py: `scenario save|show|list`
and `evaluate --scenario-id` on the app's store; deploy.py: `deploy` and `require`; bench.py:
`bench-plan` and `bench-compare`. Imports run options ← scenario ← deploy ← bench ← commands ←
here, with no way back."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from explorer.base.errors import ScenarioError
from explorer.interfaces.cli.commands import COMMANDS, build_parser
from explorer.interfaces.cli.options import FLAG_OF_FIELD, UsageError


def main(argv: Sequence[str] | None = None) -> int:
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
