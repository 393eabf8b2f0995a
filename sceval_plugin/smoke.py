"""``sceval smoke``: a 10-example interface check before spending a full run on a model.

Runs the model through lmms-eval on ``sceval_clean``, ``sceval_missing_audio`` and
``sceval_probe_mismatch_audio_random`` (each item's audio replaced by another item's, G.9) over
the same items and checks: the endpoint accepts the ordered frame set (no API failures on clean
items); the audio is actually consumed (some answer changes when the audio becomes silence, and
some answer changes when the audio is swapped between items: a backend that drops the audio
fails both, one that only notices whether audio is present fails the second); the parser
recovers an option key; and how many replies are refusals or empty. Verdict: ``IFACE OK`` or
the first failed check (the paper's interface smoke test, Appendix G.8). ``sceval_openai``
runs the same two audio checks on its own as a pre-flight (:mod:`faultline_eval.model_wrappers.audio_canary`).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Each item's audio replaced by a random other item's (the G.9 mismatch probe, random tier).
SWAPPED_AUDIO_TASK = "sceval_probe_mismatch_audio_random"


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    detail: str


def _records(results: dict, task: str) -> list[dict]:
    return [s["sceval_record"] for s in results.get("samples", {}).get(task, [])]


def run_smoke(model: str, model_args: str = "", *, limit: int = 10) -> list[Check]:
    import lmms_eval.models  # noqa: F401  (loads our entry point, which adds the SCEval tasks)
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    tasks = ["sceval_clean", "sceval_missing_audio", SWAPPED_AUDIO_TASK]
    results = simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=tasks,
        limit=limit,
        log_samples=True,
        task_manager=TaskManager("ERROR"),
        verbosity="ERROR",
    )
    clean, silent, swapped = (_records(results, task) for task in tasks)
    if not clean:
        return [Check("ran", False, "lmms-eval returned no per-sample records")]
    n = len(clean)
    failures = sum(r["invalid"] == "api_failure" for r in clean)
    parsed = sum(r["parsed_answer"] is not None for r in clean)
    refusals = sum(r["invalid"] == "refusal" for r in clean + silent)
    empty = sum(r["invalid"] == "empty" for r in clean + silent)
    by_sample = {r["sample_id"]: r["raw_response"] for r in clean}
    changed = sum(by_sample.get(r["sample_id"]) != r["raw_response"] for r in silent)
    swapped = [r for r in swapped if r["sample_id"] in by_sample and r["invalid"] != "api_failure"]
    changed_by_swap = sum(by_sample[r["sample_id"]] != r["raw_response"] for r in swapped)
    return [
        Check(
            "accepts the ordered frame set",
            failures == 0,
            f"{n - failures}/{n} clean requests answered"
            + (
                f"; {failures} API failure(s): {next(r['failure_detail'] for r in clean if r['invalid'] == 'api_failure')}"
                if failures
                else ""
            ),
        ),
        Check(
            "audio actually consumed", changed > 0, f"{changed}/{len(silent)} replies change when the audio is silence"
        ),
        Check(
            "audio swapped between items changes answers",
            changed_by_swap > 0,
            f"{changed_by_swap}/{len(swapped)} replies change with another item's audio",
        ),
        Check("parser recovers an option key", parsed == n, f"{parsed}/{n} replies parsed"),
        Check("no refusals or empty outputs", refusals + empty == 0, f"{refusals} refusal(s), {empty} empty"),
    ]


def verdict(checks: list[Check]) -> str:
    failed = [c.name for c in checks if not c.passed]
    return "IFACE OK" if not failed else f"IFACE FAILED: {failed[0]}"
