"""Every command line of the project, as the real argparse parsers (issue 29).

One walk over the parsers, shared by the generated CLI reference (``reference_pages.py``, a
MkDocs hook) and the tests that check the docs against the code (flags named in the docs must
exist for the command they are given with). Pure: building the parsers runs no command, reads no
argument and leaves ``sys.argv`` and the environment as they were.

Keys are command words joined by a space: ``"sceval"``, ``"sceval report"``, ``"c3po build
generate"``, ``"faultline probe e1"``, ``"faultline-eval"``, ``"lmms-eval"``.

- ``faultline-eval`` has no parser object of its own: it reads ``--max-failure-rate`` with a
  small parser (:func:`faultline_eval_own_parser`) and hands everything else to lmms-eval 0.7.3's
  evaluation. Its parser here is that composition (:func:`faultline_eval_parser`): lmms-eval's
  flags plus its own, so a command line parses here exactly when ``faultline-eval`` accepts it.
  ``faultline eval ...`` forwards to ``faultline-eval``, so it maps to the same parser (the
  sub-parser the ``faultline`` command registers for it is only a placeholder for ``--help``).
- ``lmms-eval`` is ``lmms_eval.__main__.parse_eval_args()``'s parser, built with
  ``sys.argv = ["lmms-eval"]`` (the function parses ``sys.argv`` as it builds).

Old snake_case spellings of our flags (``--output_path``; ``faultline_eval.core.flag_spellings``)
still parse but are hidden from ``--help``: :func:`flags` leaves them out, :func:`hidden_flags`
lists them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator

import faultline_app.c3po_cli
import faultline_app.eval_cli
import faultline_app.faultline_cli
import faultline_app.sceval_cli

#: The commands whose parsers are built by a ``build_parser()`` of the project.
ROOTS = {
    "sceval": faultline_app.sceval_cli.build_parser,
    "c3po": faultline_app.c3po_cli.build_parser,
    "faultline": faultline_app.faultline_cli.build_parser,
}


@contextlib.contextmanager
def _isolated(*argv: str) -> Iterator[None]:
    """Run with ``sys.argv = argv``; afterwards put ``sys.argv`` and ``os.environ`` back (importing
    lmms-eval imports ``torch._inductor``, which sets ``TORCHINDUCTOR_CACHE_DIR``)."""
    saved_argv, saved_environ = sys.argv, dict(os.environ)
    sys.argv = list(argv)
    try:
        yield
    finally:
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_environ)


def lmms_eval_parser() -> argparse.ArgumentParser:
    """lmms-eval 0.7.3's evaluation parser (``lmms-eval --model ... --tasks ...``)."""
    with _isolated("lmms-eval"):
        import lmms_eval.__main__  # heavy: lmms-eval's import takes seconds

        parser, _ = lmms_eval.__main__.parse_eval_args()
    parser.prog = "lmms-eval"
    return parser


def faultline_eval_own_parser() -> argparse.ArgumentParser:
    """The flags ``faultline-eval`` reads itself before handing the rest to lmms-eval."""
    return faultline_app.eval_cli.own_parser()


def faultline_eval_parser(lmms_eval: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """``faultline-eval``'s whole command line: lmms-eval's flags plus its own."""
    lmms_eval = lmms_eval or lmms_eval_parser()
    parser = argparse.ArgumentParser(
        prog="faultline-eval",
        parents=[lmms_eval],
        add_help=False,
        formatter_class=lmms_eval.formatter_class,
        description=(faultline_app.eval_cli.__doc__ or "").strip().split("\n\n")[0],
    )
    own = faultline_eval_own_parser()
    for action in own._actions:  # the composite shares its own flags' actions and hidden spellings
        parser._add_action(action)
    for option, action in own._option_string_actions.items():
        parser._option_string_actions.setdefault(option, action)
    return parser


def walk(
    parser: argparse.ArgumentParser, words: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """``(command words, parser)`` for ``parser`` and every sub-command below it, depth first.
    A sub-command's aliases (several names, one parser) are yielded once, under its first name."""
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, child in action.choices.items():
                if id(child) not in seen:
                    seen.add(id(child))
                    yield from walk(child, (*words, name))


def parsers(*, lmms_eval: bool = True) -> dict[str, argparse.ArgumentParser]:
    """Every command and sub-command of ``sceval``, ``c3po``, ``faultline``, ``faultline-eval``
    and (with ``lmms_eval``, the default) ``lmms-eval``, by its command words.

    ``lmms_eval=False`` skips lmms-eval's import (seconds) and with it ``faultline-eval``,
    ``faultline eval`` and ``lmms-eval``."""
    found: dict[str, argparse.ArgumentParser] = {}
    for name, build in ROOTS.items():
        for words, parser in walk(build(), (name,)):
            found[" ".join(words)] = parser
    if lmms_eval:
        lmms = lmms_eval_parser()
        found["faultline-eval"] = found["faultline eval"] = faultline_eval_parser(lmms)
        found["lmms-eval"] = lmms
    else:
        del found["faultline eval"]  # a placeholder; the real parser needs lmms-eval's
    return found


def visible_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options and positionals ``--help`` shows (not ``-h`` itself, not sub-command lists,
    not ``help=SUPPRESS``)."""
    return [
        action
        for action in parser._actions
        if action.help != argparse.SUPPRESS
        and not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
    ]


def subcommands(parser: argparse.ArgumentParser) -> dict[str, str]:
    """The sub-commands of ``parser`` with their one-line help (aliases left out)."""
    found: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            seen: set[int] = set()
            for name, child in action.choices.items():
                if id(child) not in seen:
                    seen.add(id(child))
                    found[name] = helps.get(name, "")
    return found


def flags(parser: argparse.ArgumentParser) -> set[str]:
    """The option strings ``parser`` shows in ``--help`` (``-h``/``--help`` included; hidden old
    spellings and ``help=SUPPRESS`` options left out)."""
    return {
        option for action in parser._actions if action.help != argparse.SUPPRESS for option in action.option_strings
    }


def hidden_flags(parser: argparse.ArgumentParser) -> set[str]:
    """The option strings ``parser`` accepts but does not show: old spellings and
    ``help=SUPPRESS`` options."""
    return set(parser._option_string_actions) - flags(parser)


if __name__ == "__main__":
    for command, parser in parsers().items():
        print(f"{command}: {' '.join(sorted(flags(parser)))}")
