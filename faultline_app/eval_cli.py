"""``faultline-eval``: lmms-eval's evaluation, with an exit status that says whether it worked.

lmms-eval 0.7.3 catches every error of a run — a task that fails to build (bad records, an
unknown task name), a model that fails to load — prints a traceback and exits 0, having
written nothing. ``faultline-eval`` takes exactly ``lmms-eval eval``'s flags and runs the same
evaluator (``lmms_eval.__main__.cli_evaluate``); when a run raises, it prints one line naming
the error instead of the traceback and exits 1. ``FAULTLINE_DEBUG=1`` (or
``--verbosity DEBUG``) lets the exception through with its traceback.

Before lmms-eval is imported (a second, where lmms-eval takes 10-20 s to reach the same errors),
every input that can be checked is (:func:`preflight`): ``--output_path`` can be created and
written, ``--log_samples`` has an output path, the ``--model`` name is known (close matches
named), our models take each model argument given, a checkpoint argument that can only be a path exists, ``SCEVAL_SOURCE`` /
``C3PO_SOURCE`` name items for the ``sceval_*`` / ``c3po_*`` tasks asked for, a served model's
server answers. Each refusal names the argument and the fix, exits 1, and sends nothing.

Saving is part of the run: lmms-eval catches an error writing the results or a samples file,
logs "Could not save ..." and goes on; here each file it should have written is checked after
its save (:func:`checking_saves`), and a missing one is exit 1 naming the path and the error.
A model's reply store keeps the replies, so the same command with a writable path sends nothing
again (``docs/how-to/resume.md``).

A run that finished is checked too: it ends with a one-screen summary per task of ours
(:mod:`faultline_eval.core.run_status`: requests, usable answers, each failure category, the first
error text; for a served model, the share of media parts that repeated an earlier one and the
server's multimodal cache hits) and exits 1 when a task's coverage is 0 or more than ``--max-failure-rate`` (an
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
import functools
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from c3po_plugin.data import sources as c3po_sources
from faultline_app import budgeted
from faultline_eval.core.offline import use_offline_defaults
from faultline_eval.core.preflight import PreflightError, check_writable_folder, file_in_the_way
from faultline_eval.core.request_lifecycle import media_reuse_text, taken_run_usage
from faultline_eval.core.run_logs import ReportError
from faultline_eval.core.run_status import TaskOutcome, add_failure_rate_argument, records_of, report
from faultline_eval.core.settings import FAULTLINE_DEBUG
from faultline_eval.model_wrappers import preflight as model_checks
from faultline_eval.model_wrappers.lmms_plugin import check_task_names, our_task_dirs, our_task_names
from faultline_eval.tasks import wrap_configs
from sceval_plugin.base_task import BaseTaskError
from sceval_plugin.data import sources as sceval_sources

#: The model lmms-eval runs without ``--model``.
LMMS_DEFAULT_MODEL = "hf"
#: The lmms-eval options :func:`preflight` reads, with lmms-eval's defaults (``--model``'s: above).
RUN_OPTIONS = {
    "model": None,
    "model_args": "",
    "output_path": None,
    "log_samples": False,
    "predict_only": False,
    "force_simple": False,
}


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


def planned_runs(argv: Sequence[str]) -> list[dict[str, Any]]:
    """The :data:`RUN_OPTIONS` of each run ``argv`` asks for, as lmms-eval reads them: one run, or
    one per entry of the ``--config`` YAML, where an option given on the command line wins."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--config", default="")
    for option in RUN_OPTIONS:
        flag = isinstance(RUN_OPTIONS[option], bool)
        parser.add_argument(f"--{option}", action="store_true" if flag else "store", default=None)
    given, _ = parser.parse_known_args(argv)
    entries: list[dict[str, Any]] = [{}]
    if given.config:
        if not Path(given.config).is_file():
            raise PreflightError(f"--config {given.config!r} does not exist; give the YAML file of the runs")
        loaded = yaml.safe_load(Path(given.config).read_text(encoding="utf-8")) or {}
        entries = [e for e in (loaded if isinstance(loaded, list) else [loaded]) if isinstance(e, dict)]
    return [
        {o: getattr(given, o) if getattr(given, o) is not None else entry.get(o, d) for o, d in RUN_OPTIONS.items()}
        for entry in entries
    ]


def preflight(argv: Sequence[str]) -> None:
    """Check every input of the run that can be checked before lmms-eval is imported (see the
    module doc); raise :class:`PreflightError` (or the task and source errors) on the first bad one."""
    runs = planned_runs(argv)
    for run in runs:
        if (run["log_samples"] or run["predict_only"]) and not run["output_path"]:
            raise PreflightError("--log_samples needs --output_path: give the folder the samples go to")
        if run["output_path"]:  # lmms-eval writes it at the end; a refused run leaves no empty folder
            check_writable_folder(run["output_path"], "--output_path", keep_created=False)
        run["model_id"] = model_checks.check_model_name(
            run["model"] or LMMS_DEFAULT_MODEL, given=run["model"] is not None
        )
        run["args"] = model_checks.model_arguments(str(run["model_args"] or ""))
        model_checks.check_our_model_args(run["model_id"], run["args"], bool(run["force_simple"]))
        model_checks.check_checkpoints(run["args"])
    tasks = option_values(argv, "--tasks")
    if any(t.startswith("sceval_") for t in tasks):
        sceval_sources.check_spec()
    if any(t.startswith("c3po_") for t in tasks):
        c3po_sources.check_spec()
    for run in runs:  # waits on the network, at most PROBE_TIMEOUT_S per server
        model_checks.check_endpoints(run["model_id"], run["args"])
    if tasks:  # last: reads every task YAML of ours (about a second)
        include_paths = option_values(argv, "--include_path")
        wrap_configs.ensure(tasks, include_paths)  # wrapped lmms-eval tasks (issue 27) are written on request
        folders = [*our_task_dirs(), *include_paths]
        check_task_names(tasks, our_task_names(folders))


#: lmms-eval's module that saves the results and samples files (and logs why it could not).
TRACKER_MODULE = "lmms_eval.loggers.evaluation_tracker"


@contextlib.contextmanager
def checking_saves() -> Iterator[list[str]]:
    """Collect each results or samples file lmms-eval should have written and did not, with the
    error it caught (``EvaluationTracker`` logs "Could not save ..." and the error, and goes on)."""
    from lmms_eval.loggers.evaluation_tracker import EvaluationTracker
    from loguru import logger

    failures: list[str] = []
    stamps: dict[int, str] = {}  # each tracker's file-name timestamp, set by its results save

    def checked(original: Callable[..., None], expected: Callable[..., Path | None]) -> Callable[..., None]:
        @functools.wraps(original)
        def save(self: Any, *args: Any, **kwargs: Any) -> None:
            said: list[str] = []
            sink = logger.add(
                lambda m: said.append(str(m).strip()), level="INFO", filter=TRACKER_MODULE, format="{message}"
            )
            try:
                original(self, *args, **kwargs)
            finally:
                logger.remove(sink)
            path = expected(self, *args, **kwargs)
            error = next((after for before, after in zip(said, said[1:]) if before.startswith("Could not save")), None)
            if path is not None and (error or not path.is_file()):
                blocker = file_in_the_way(path.parent)
                where = f" ({blocker} is a file, not a folder)" if blocker else ""
                failures.append(f"{path}: {error or 'not written'}{where}")

        return save

    def run_folder(self: Any) -> Path:  # where the tracker writes: <output_path>/<model name>/
        return Path(self.output_path) / self.general_config_tracker.model_name_sanitized

    def results_file(self: Any, results: Any, samples: Any, datetime_str: str) -> Path | None:
        stamps[id(self)] = datetime_str.replace(":", "-")
        return run_folder(self) / f"{stamps[id(self)]}_results.json" if self.output_path else None

    def samples_file(self: Any, task_name: str, samples: Any) -> Path | None:
        stamp = stamps.get(id(self))
        return run_folder(self) / f"{stamp}_samples_{task_name}.jsonl" if self.output_path and samples else None

    originals = EvaluationTracker.save_results_aggregated, EvaluationTracker.save_results_samples
    EvaluationTracker.save_results_aggregated = checked(originals[0], results_file)
    EvaluationTracker.save_results_samples = checked(originals[1], samples_file)
    try:
        yield failures
    finally:
        EvaluationTracker.save_results_aggregated, EvaluationTracker.save_results_samples = originals


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


def own_parser() -> argparse.ArgumentParser:
    """The flags ``faultline-eval`` reads itself before handing the rest to lmms-eval."""
    parser = argparse.ArgumentParser(prog="faultline-eval", add_help=False, allow_abbrev=False)
    add_failure_rate_argument(parser)
    budgeted.add_arguments(parser)
    return parser


def failure_rate(options: argparse.Namespace) -> list[str]:
    """``--max-failure-rate`` as given, for a budgeted run's rounds."""
    return ["--max-failure-rate", str(options.max_failure_rate)]


def main(argv: Sequence[str] | None = None) -> int:
    use_offline_defaults()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["eval"]:
        argv = argv[1:]
    if {"-h", "--help"} & set(argv):  # our own options, then lmms-eval's help (it exits after printing)
        print(
            own_parser().format_help().replace("usage: faultline-eval", "usage: faultline-eval [lmms-eval's options]")
        )
        import lmms_eval.__main__ as lmms_main

        saved_argv, sys.argv = sys.argv, ["faultline-eval", "--help"]
        try:
            lmms_main.cli_evaluate()
        finally:
            sys.argv = saved_argv
        return 0
    options, argv = own_parser().parse_known_args(argv)
    if budgeted.wanted(options):  # rounds of this same command, each on the trials it chose
        try:
            return budgeted.run(options, argv, lambda round_argv: main([*round_argv, *failure_rate(options)]))
        except (budgeted.BudgetError, ReportError) as exc:
            print(f"faultline-eval: error: {exc}", file=sys.stderr)
            return 1

    try:  # checked in a second; lmms-eval's import and task index take 10-20 s
        preflight(argv)
    except (
        ValueError,
        wrap_configs.WrapNameError,
        BaseTaskError,
    ) as exc:  # every refusal of the checks is a ValueError
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
        with collecting_outcomes() as outcomes, checking_saves() as unsaved:
            lmms_main.cli_evaluate()
    finally:
        lmms_main.cli_evaluate_single = evaluate_one
        sys.argv = saved_argv
    status = report(outcomes, options.max_failure_rate) if outcomes else 0
    for usage in taken_run_usage():  # a served model's media reuse and its server's cache hits
        for label, totals in usage.items():
            if reuse := media_reuse_text(totals):
                print(f"faultline-eval: {label}: {reuse}")
    for failure in failures:
        print(f"faultline-eval: error: the run failed, nothing was evaluated: {failure}", file=sys.stderr)
    for path in unsaved:
        print(f"faultline-eval: error: not saved: {path}", file=sys.stderr)
    if unsaved:
        print(
            "faultline-eval: error: the run's files were not all saved (exit 1). A model with a reply store "
            "keeps its replies: the same command with an --output_path you can write sends none of them "
            "again (docs/how-to/resume.md)",
            file=sys.stderr,
        )
    return 1 if failures or unsaved else status


if __name__ == "__main__":
    sys.exit(main())
