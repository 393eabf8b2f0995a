"""``faultline-eval``: lmms-eval's evaluation, with an exit status that says whether it worked.

lmms-eval 0.7.3 catches every error of a run — a task that fails to build (bad records, an
unknown task name), a model that fails to load — prints a traceback and exits 0, having
written nothing. ``faultline-eval`` takes exactly ``lmms-eval eval``'s flags and runs the same
evaluator (``lmms_eval.__main__.cli_evaluate``); when a run raises, it prints one line naming
the error instead of the traceback and exits 1. ``FAULTLINE_DEBUG=1`` (or
``--verbosity DEBUG``) lets the exception through with its traceback.

    faultline-eval --model sceval_reference --tasks sceval_clean,c3po_all --output_path out/
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

from sceval_plugin import use_offline_defaults
from sceval_plugin.plugins import DEBUG_ENV, env_flag


def root_cause(exc: BaseException) -> BaseException:
    """The error inside lmms-eval's retry wrapper (tenacity's ``RetryError`` around a task build)."""
    while (attempt := getattr(exc, "last_attempt", None)) is not None and attempt.exception() is not None:
        exc = attempt.exception()
    return exc


def main(argv: Sequence[str] | None = None) -> int:
    use_offline_defaults()
    import lmms_eval.__main__ as lmms_main

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["eval"]:
        argv = argv[1:]
    failures: list[str] = []
    evaluate_one = lmms_main.cli_evaluate_single

    def recording(args: Any = None) -> Any:
        try:
            return evaluate_one(args)
        except Exception as exc:
            if env_flag(DEBUG_ENV) or getattr(args, "verbosity", "") == "DEBUG":
                raise
            cause = root_cause(exc)
            failures.append(f"{type(cause).__name__}: {cause}")
            return None, None  # lmms-eval then reports nothing for this run, as after its own catch

    saved_argv, sys.argv = sys.argv, ["faultline-eval", *argv]
    lmms_main.cli_evaluate_single = recording
    try:
        lmms_main.cli_evaluate()
    finally:
        lmms_main.cli_evaluate_single = evaluate_one
        sys.argv = saved_argv
    for failure in failures:
        print(f"faultline-eval: error: the run failed, nothing was evaluated: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
