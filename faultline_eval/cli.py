"""``faultline-eval``: lmms-eval's evaluation, with an exit status that says whether it worked.

lmms-eval 0.7.3 catches every error of a run — a task that fails to build (bad records, an
unknown task name), a model that fails to load — prints a traceback and exits 0, having
written nothing. ``faultline-eval`` takes exactly ``lmms-eval eval``'s flags and runs the same
evaluator (``lmms_eval.__main__.cli_evaluate``); when a run raises, it prints one line naming
the error instead of the traceback and exits 1. ``FAULTLINE_DEBUG=1`` (or
``--verbosity DEBUG``) lets the exception through with its traceback.

A run that finished is checked too: it ends with a one-screen summary per task of ours
(:mod:`faultline_eval.core.run_status`: requests, usable answers, each failure category, the first
error text) and exits 1 when a task's coverage is 0 or more than ``--max-failure-rate`` (an
option of ``faultline-eval`` only, default 0.05) of its requests got no reply. An unknown
``sceval_*``/``c3po_*`` task name is refused with its close matches before lmms-eval is imported.
Beside each results JSON the run wrote, ``<timestamp>_run_info.json`` (written by our lmms-eval
plugin, so plain ``lmms-eval`` runs get it too) records the versions of faultline-eval,
lmms-eval, torch and transformers and each model's request and token totals (the viewer's run
panel shows them).

    faultline-eval --model sceval_reference --tasks sceval_clean,c3po_all --output_path out/
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from faultline_eval.core.offline import use_offline_defaults
from faultline_eval.core.run_status import TaskOutcome, add_failure_rate_argument, records_of, report
from faultline_eval.core.settings import FAULTLINE_DEBUG
from faultline_eval.model_wrappers.lmms_plugin import UnknownTaskError, check_task_names, our_task_dirs, our_task_names
from faultline_eval.tasks import wrap_configs


def root_cause(exc: BaseException) -> BaseException:
    """The error inside lmms-eval's retry wrapper (tenacity's ``RetryError`` around a task build)."""
    while (attempt := getattr(exc, "last_attempt", None)) is not None and attempt.exception() is not None:
        exc = attempt.exception()
    return exc


def option_values(argv: Sequence[str], option: str) -> list[str]:
    """The comma-separated values given to ``option`` (``--tasks a,b`` or ``--tasks=a,b``)."""
    values: list[str] = []
    for i, arg in enumerate(argv):
        if arg == option and i + 1 < len(argv):
            values += argv[i + 1].split(",")
        elif arg.startswith(f"{option}="):
            values += arg.split("=", 1)[1].split(",")
    return [v.strip() for v in values if v.strip()]


@contextlib.contextmanager
def collecting_outcomes() -> Iterator[list[TaskOutcome]]:
    """Collect each task's :class:`TaskOutcome` from its per-sample records, as lmms-eval
    aggregates them (on rank 0, after the gather; with or without ``--log_samples``)."""
    from lmms_eval.evaluator_utils import TaskOutput

    outcomes: list[TaskOutcome] = []
    original = TaskOutput.calculate_aggregate_metric

    def calculate_aggregate_metric(self: Any, *args: Any, **kwargs: Any) -> Any:
        records = records_of(self.sample_metrics)
        if records:
            outcomes.append(TaskOutcome.from_records(self.task_name, records))
        return original(self, *args, **kwargs)

    TaskOutput.calculate_aggregate_metric = calculate_aggregate_metric
    try:
        yield outcomes
    finally:
        TaskOutput.calculate_aggregate_metric = original


def main(argv: Sequence[str] | None = None) -> int:
    use_offline_defaults()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["eval"]:
        argv = argv[1:]
    own = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    add_failure_rate_argument(own)
    options, argv = own.parse_known_args(argv)

    try:  # our names are checked in a second; lmms-eval's import and index take far longer
        tasks = option_values(argv, "--tasks")
        if tasks:
            wrap_configs.ensure(tasks)  # wrapped lmms-eval tasks (issue 27) are written on request
            folders = [*our_task_dirs(), *option_values(argv, "--include_path")]
            check_task_names(tasks, our_task_names(folders))
    except (UnknownTaskError, wrap_configs.WrapNameError) as exc:
        print(f"faultline-eval: error: {exc}", file=sys.stderr)
        return 1

    import lmms_eval.__main__ as lmms_main

    failures: list[str] = []
    evaluate_one = lmms_main.cli_evaluate_single

    def recording(args: Any = None) -> Any:
        try:
            return evaluate_one(args)
        except Exception as exc:
            if FAULTLINE_DEBUG.is_on() or getattr(args, "verbosity", "") == "DEBUG":
                raise
            cause = root_cause(exc)
            failures.append(f"{type(cause).__name__}: {cause}")
            return None, None  # lmms-eval then reports nothing for this run, as after its own catch

    saved_argv, sys.argv = sys.argv, ["faultline-eval", *argv]
    lmms_main.cli_evaluate_single = recording
    try:
        with collecting_outcomes() as outcomes:
            lmms_main.cli_evaluate()
    finally:
        lmms_main.cli_evaluate_single = evaluate_one
        sys.argv = saved_argv
    status = report(outcomes, options.max_failure_rate) if outcomes else 0
    for failure in failures:
        print(f"faultline-eval: error: the run failed, nothing was evaluated: {failure}", file=sys.stderr)
    return 1 if failures else status


if __name__ == "__main__":
    sys.exit(main())
