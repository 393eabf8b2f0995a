"""Old spellings of command-line flags: still parsed, hidden from ``--help``, noted as deprecated.

Every flag of the project's commands is kebab-case (``--output-path``). A flag once spelt
snake_case (``--output_path``, lmms-eval's style) keeps working under that spelling, so scripts
written against it do not break; the spelling is left out of ``--help`` and each use prints one
line on stderr naming the new spelling. (lmms-eval's own flags, which ``faultline-eval`` passes
through, are lmms-eval's and keep its spelling.)

How: argparse looks an option string up in the parser's table of option strings, while
``--help`` lists each action's ``option_strings``; the old spelling goes into the table only, so
it parses as the same action (a required flag given in its old spelling still counts as given)
and never shows in the help.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["add_argument", "accept_old_spelling"]


_NOTING: dict[type[argparse.Action], type[argparse.Action]] = {}


def _noting_old_spellings(action_class: type[argparse.Action]) -> type[argparse.Action]:
    """``action_class`` that prints the deprecation note when called through an old spelling."""

    def __call__(
        self: Any,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if option_string in self.old_spellings:
            print(
                f"{parser.prog}: {option_string} is deprecated; use {self.old_spellings[option_string]}",
                file=sys.stderr,
            )
        action_class.__call__(self, parser, namespace, values, option_string)

    noting: type[argparse.Action] = type(action_class.__name__, (action_class,), {"__call__": __call__})
    return noting


def accept_old_spelling(parser: argparse.ArgumentParser, action: argparse.Action, old: str) -> None:
    """Let ``old`` (e.g. ``--output_path``) set ``action`` of ``parser`` too, hidden from ``--help``,
    with a one-line deprecation note on stderr each time it is used."""
    if old in parser._option_string_actions:
        raise ValueError(f"{old} is already an option of {parser.prog}")
    new = next(s for s in action.option_strings if s.startswith("--"))
    if not hasattr(action, "old_spellings"):
        action_class = type(action)
        if action_class not in _NOTING:  # one subclass per action class
            _NOTING[action_class] = _noting_old_spellings(action_class)
        action.__class__ = _NOTING[action_class]
        action.old_spellings = {}  # type: ignore[attr-defined]
    action.old_spellings[old] = new  # type: ignore[attr-defined]
    parser._option_string_actions[old] = action


def add_argument(
    parser: argparse.ArgumentParser, *names: str, old: Sequence[str] = (), **options: Any
) -> argparse.Action:
    """``parser.add_argument(*names, **options)``, also accepting the ``old`` spellings
    (:func:`accept_old_spelling`)."""
    action = parser.add_argument(*names, **options)
    for spelling in old:
        accept_old_spelling(parser, action, spelling)
    return action
