"""Did the run work? A per-task outcome, a one-screen summary and the exit status that follows.

A run where every request failed must not look like a finished evaluation. The commands that
send requests or process inputs (``faultline-eval``, ``faultline probe``, ``sceval build
convert``) describe each task, probe or source as a :class:`TaskOutcome` and end with
:func:`report`, which prints
one line per task (requests, usable answers, each failure category with its count, the first
error text) and returns the exit status:

* **1** when a task's **coverage is 0** (requests were made and none gave a usable answer) or a
  task has no requests at all, or when its **failure rate exceeds** ``--max-failure-rate``;
* **0** otherwise (failures below the threshold are listed, not fatal).

The failure rate is the share of requests that got no reply at all (``failed``: for a model,
``api_failure``, i.e. still failing after the client's retries; for a build stage, ``failed``).
Refusals, empty and unparseable replies are the model's answers, measured by the benchmark; they
are listed and count against coverage, not against the failure rate. Default threshold:
:data:`DEFAULT_MAX_FAILURE_RATE` (5 %); ``--max-failure-rate 1`` keeps only the coverage rule,
as ``report(..., max_failure_rate=None)`` does for a stage with nothing that can fail (a
rejected source example in ``sceval build convert`` is the source's filtering, not a failure).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from faultline_eval.core.flag_spellings import add_argument
from faultline_eval.core.offline import use_offline_defaults
from faultline_eval.core.preflight import check_path_arguments
from faultline_eval.core.settings import FAULTLINE_DEBUG

__all__ = [
    "DEFAULT_MAX_FAILURE_RATE",
    "TaskOutcome",
    "add_failure_rate_argument",
    "SCREEN_TASKS",
    "report",
    "records_of",
    "run_command",
]

#: Share of a task's requests that may fail (no reply after retries) before the exit status is 1.
DEFAULT_MAX_FAILURE_RATE = 0.05
#: The per-sample ``invalid`` category of a request that got no reply (sceval_plugin.parsing).
NO_REPLY = "api_failure"
_ERROR_CHARS = 240


@dataclass
class TaskOutcome:
    """What one task (or build stage) of a run came to."""

    name: str
    requests: int
    answered: int  # requests with a usable answer (graded, or a stage's ``ok``)
    failures: collections.Counter[str] = field(default_factory=collections.Counter)  # category -> count
    failed: int = 0  # requests with no reply at all (counted in ``failures`` too)
    first_error: str = ""
    unit: str = "requests"  # what the summary calls requests and answers ("examples", "converted")
    done: str = "answered"

    @classmethod
    def from_records(cls, name: str, records: Iterable[dict[str, Any]]) -> TaskOutcome:
        """From per-sample records (``sceval_record`` / ``c3po_record``: ``invalid``,
        ``correct``, ``failure_detail``)."""
        records = list(records)
        failures = collections.Counter(r["invalid"] for r in records if r.get("invalid"))
        first = next((r.get("failure_detail") or r["invalid"] for r in records if r.get("invalid")), "")
        return cls(
            name, len(records), sum(r.get("correct") is not None for r in records), failures, failures[NO_REPLY], first
        )

    @property
    def coverage(self) -> float:
        return self.answered / self.requests if self.requests else 0.0

    @property
    def failure_rate(self) -> float:
        return self.failed / self.requests if self.requests else 0.0

    def problem(self, max_failure_rate: float | None) -> str | None:
        """Why this task makes the run fail, or None (``max_failure_rate=None``: coverage only)."""
        if self.requests == 0:
            return "no requests"
        if self.answered == 0:
            return "coverage 0"
        if max_failure_rate is not None and self.failure_rate > max_failure_rate:
            return f"failure rate {self.failure_rate:.1%} > {max_failure_rate:.1%}"
        return None


def failure_rate_type(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"--max-failure-rate must be between 0 and 1, got {text}")
    return value


def add_failure_rate_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--max-failure-rate`` option, the same in every command (the old spelling
    ``--max_failure_rate`` still parses, with a deprecation note)."""
    add_argument(
        parser,
        "--max-failure-rate",
        old=["--max_failure_rate"],
        type=failure_rate_type,
        default=DEFAULT_MAX_FAILURE_RATE,
        metavar="RATE",
        help="exit 1 when more than this share of a task's requests (a build stage's items) "
        f"failed (0-1, default {DEFAULT_MAX_FAILURE_RATE}); a task with coverage 0 always exits 1",
    )


#: Up to this many tasks the summary has a line each; beyond, tasks without a failure share one line.
SCREEN_TASKS = 20


def summary_lines(outcomes: Iterable[TaskOutcome], max_failure_rate: float | None) -> list[str]:
    """A line per task (sorted by name) with its failures and verdict; on a run of more than
    :data:`SCREEN_TASKS` tasks, those that answered every request share one line, so the
    summary stays one screen and every task with a failure is still named."""
    outcomes = sorted(outcomes, key=lambda o: o.name)
    clean = [o for o in outcomes if not o.failures and not o.problem(max_failure_rate)]
    shown = [o for o in outcomes if o not in clean] if len(outcomes) > SCREEN_TASKS else outcomes
    lines = []
    if len(shown) < len(outcomes):
        lines.append(
            f"  {len(clean)} task(s) with no failures: {sum(o.requests for o in clean)} "
            f"{clean[0].unit}, all {clean[0].done} -> ok"
        )
    for o in shown:
        failures = ", ".join(f"{c} {n}" for c, n in sorted(o.failures.items())) or "no failures"
        problem = o.problem(max_failure_rate)
        lines.append(
            f"  {o.name}: {o.requests} {o.unit}, {o.answered} {o.done} ({o.coverage:.0%}); {failures}"
            f" -> {'FAILED: ' + problem if problem else 'ok'}"
        )
        if o.first_error:
            error = " ".join(str(o.first_error).split())
            lines.append(f"      first error: {error[:_ERROR_CHARS]}{'...' if len(error) > _ERROR_CHARS else ''}")
    return lines


def report(
    outcomes: Iterable[TaskOutcome],
    max_failure_rate: float | None = DEFAULT_MAX_FAILURE_RATE,
    who: str = "faultline-eval",
    out: TextIO | None = None,
) -> int:
    """Print the run's summary and return its exit status (0: every task fine, 1: see the module).
    ``max_failure_rate=None`` for a stage whose outcomes have no failures, only coverage."""
    outcomes = list(outcomes)
    out = out or sys.stdout
    failing = [o.name for o in outcomes if o.problem(max_failure_rate)]
    rule = "" if max_failure_rate is None else f" or a failure rate above {max_failure_rate:.0%}"
    print(f"{who}: summary (exit 1 on coverage 0{rule}):", file=out)
    for line in summary_lines(outcomes, max_failure_rate):
        print(line, file=out)
    if failing:
        print(f"{who}: {len(failing)} of {len(outcomes)} task(s) failed: {', '.join(failing)}", file=out)
    out.flush()
    return 1 if failing else 0


def records_of(sample_metrics: dict[Any, list[Any]]) -> list[dict[str, Any]]:
    """The per-sample records among lmms-eval's per-task ``sample_metrics``
    (``{(metric, filter): [value per doc]}``): the values of the first ``*_record`` metric."""
    for (metric, _filter), values in sample_metrics.items():
        if metric.endswith("_record") and values and isinstance(values[0], dict) and "invalid" in values[0]:
            return list(values)
    return []


def command_main(
    prog: str,
    build_parser: Callable[[], argparse.ArgumentParser],
    argv: Sequence[str] | None = None,
    *checks: Callable[[argparse.ArgumentParser, argparse.Namespace], None],
) -> int:
    """A command line's ``main``: the offline defaults (no hub, no telemetry) before anything loads,
    the parsed arguments through each of ``checks`` (``parser.error`` on a bad one), then
    :func:`run_command`."""
    use_offline_defaults()
    parser = build_parser()
    args = parser.parse_args(argv)
    for check in checks:
        check(parser, args)
    return run_command(prog, args, parser)


def run_command(prog: str, args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    """Run a subcommand; an error is one line on stderr and exit status 2 (1 is "found
    problems"), with the traceback only under ``FAULTLINE_DEBUG=1``. With the ``parser``, the
    path arguments are checked first (:func:`~faultline_eval.core.preflight.check_path_arguments`):
    a refusal is such an error, before any work."""
    try:
        if parser is not None:
            check_path_arguments(parser, args)
        func: Callable[[argparse.Namespace], int] = args.func  # set by each subparser's set_defaults
        return func(args)
    except BrokenPipeError:  # the reader went away (`sceval operators | head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit-time flush is quiet too
        return 0
    except (ValueError, LookupError, OSError, RuntimeError) as exc:
        if FAULTLINE_DEBUG.is_on():
            raise
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug of ours or of a plugin: still one line, with the way to the traceback
        if FAULTLINE_DEBUG.is_on():
            raise
        print(
            f"{prog}: error: {type(exc).__name__}: {exc} (set {FAULTLINE_DEBUG.name}=1 for the traceback)",
            file=sys.stderr,
        )
        return 2
