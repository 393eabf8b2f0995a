"""The run you asked for, or a clear refusal; an exit status that matches the run (issue 24).

Through the real commands where a user meets them: a misspelt model argument is refused before
anything loads, naming the close match, in every model the project registers; an unknown task
name fails at once with its close matches; a run whose requests all failed exits 1 and says so
in a per-task summary.
"""

from __future__ import annotations

import collections
import importlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI

from faultline_eval.core.run_status import SCREEN_TASKS, TaskOutcome, report
from faultline_eval.model_wrappers.lmms_plugin import (
    UnknownTaskError,
    check_task_names,
    manifests,
    our_task_dirs,
    our_task_names,
)
from faultline_eval.model_wrappers.model_args import UnknownModelArgError, check_model_args, flag
from faultline_eval.model_wrappers.reference import ReferenceChat

BIN = Path(sys.executable).parent


def run(*command: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / command[0]), *command[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "SCEVAL_CACHE": str(cwd or Path.cwd())},
    )


def model_classes() -> list[tuple[str, type]]:
    """Every model class the project registers with lmms-eval (chat and simple)."""
    classes = []
    for manifest in manifests():
        for path in filter(None, (manifest.chat_class_path, manifest.simple_class_path)):
            module, _, name = path.rpartition(".")
            try:
                classes.append((manifest.model_id, getattr(importlib.import_module(module), name)))
            except ImportError as exc:  # an optional dependency of lmms-eval's wrapper (moviepy, ...)
                pytest.skip(f"{path}: {exc}")
    return classes


# --- model arguments ------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_registered_model_refuses_a_misspelt_argument_before_loading_anything():
    """~12 s (imports lmms-eval's Qwen and MiniCPM wrappers; no weights, no server)."""
    classes = model_classes()
    assert len(classes) == 13  # 8 models, 5 of them with a simple interface too
    for model_id, cls in classes:
        # lmms-eval's own batch_size/device and the reports' label are not unknown; pretrianed is,
        # before any weights or server
        with pytest.raises(UnknownModelArgError, match=rf"^{model_id}: unknown model argument 'pretrianed'") as err:
            cls(pretrianed="x", label="my run", batch_size=1, device="cpu")
        if model_id.startswith("faultline_"):
            assert "did you mean 'pretrained'?" in str(err.value), model_id
        assert "allow_unknown_args=true" in str(err.value)


def test_the_opt_out_runs_with_the_unknown_argument_ignored_and_a_bad_flag_is_an_error():
    assert ReferenceChat(sed=3, allow_unknown_args="true", batch_size=1) is not None
    with pytest.raises(ValueError, match=r"allow_unknown_args='maybe': use true or false"):
        check_model_args("sceval_reference", ReferenceChat, {"sed": 3, "allow_unknown_args": "maybe"})
    assert flag("on") and flag(True) and not flag("0") and not flag(None)
    with pytest.raises(ValueError, match=r"json_mode='ture': use true or false"):
        flag("ture", "json_mode")


@pytest.mark.slow
def test_faultline_eval_refuses_a_misspelt_model_argument_and_writes_nothing(tmp_path):
    """~12 s: lmms-eval starts, indexes its tasks, and stops at the model's constructor."""
    done = run(
        "faultline-eval",
        "eval",
        "--model",
        "sceval_reference",
        "--model_args",
        "sed=3",
        "--tasks",
        "sceval_clean",
        "--limit",
        "2",
        "--output_path",
        "out/",
        cwd=tmp_path,
    )
    assert done.returncode == 1 and not (tmp_path / "out").exists()
    assert (
        "faultline-eval: error: sceval_reference: unknown model argument 'sed' (did you mean lmms-eval's "
        "--seed option? it is not a model argument)"
    ) in done.stderr
    assert "faultline-eval: summary" not in done.stdout  # no summary of a run that did not run


# --- task names -----------------------------------------------------------------------------------


def test_an_unknown_task_name_of_ours_fails_before_lmms_eval_is_imported():
    """Through faultline-eval's entry point in a fresh interpreter: about a second."""
    code = (
        "import sys; from faultline_app.eval_cli import main; code = main(['eval', '--model', 'sceval_reference', "
        "'--tasks', 'sceval_clean,sceval_t30_v7O']); print('lmms_eval' in sys.modules); sys.exit(code)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout.strip() == "False"
    assert "unknown task name: sceval_t30_v7O (did you mean sceval_t30_v70" in done.stderr


def test_task_names_outside_our_namespaces_wildcards_and_files_are_left_to_lmms_eval(tmp_path):
    task_file = tmp_path / "sceval_mine.yaml"
    task_file.write_text("task: x\n")
    check_task_names(["mme", "sceval_*", str(task_file), "c3po_all", "sceval_panel", "c3po_cc"])
    with pytest.raises(UnknownTaskError, match="sceval_mine"):
        check_task_names(["sceval_mine"])
    task_file.write_text("task: sceval_mine\ninclude: _sceval_template_yaml\n")  # in an --include_path folder
    check_task_names(["sceval_mine"], our_task_names([*our_task_dirs(), tmp_path]))
    with pytest.raises(UnknownTaskError, match=r"c3po_al \(did you mean c3po_all\?\)"):
        check_task_names(["c3po_al"])
    with pytest.raises(UnknownTaskError, match=r"mmmu_vall \(did you mean mmmu_val\?\)"):  # lmms-eval's, with all names
        check_task_names(["mmmu_vall"], known=["mmmu_val", "mme"], namespaces=("",))


@pytest.mark.slow
def test_faultline_eval_names_the_close_match_of_an_lmms_eval_task_name(tmp_path):
    """~10 s: a name outside our namespaces is checked once lmms-eval has indexed every task
    (the wrapped TaskManager.match_tasks: plain lmms-eval gets the same message)."""
    done = run(
        "faultline-eval",
        "eval",
        "--model",
        "sceval_reference",
        "--tasks",
        "sceval_clean,mmmu_vall",
        "--output_path",
        "out/",
        cwd=tmp_path,
    )
    assert done.returncode == 1 and not (tmp_path / "out").exists()
    assert "UnknownTaskError: unknown task name: mmmu_vall (did you mean mmmu_val" in done.stderr


# --- exit status and summary ----------------------------------------------------------------------


def test_summary_lists_each_task_and_the_exit_status_follows_coverage_and_the_failure_rate():
    records = (
        [{"invalid": None, "correct": 1}] * 17
        + [{"invalid": "api_failure", "correct": None, "failure_detail": "HTTP 503 from http://x/v1"}] * 2
        + [{"invalid": "refusal", "correct": None}]
    )
    outcome = TaskOutcome.from_records("sceval_clean", records)
    assert (outcome.requests, outcome.answered, outcome.failed) == (20, 17, 2)
    assert outcome.failures == collections.Counter(api_failure=2, refusal=1)
    out = io.StringIO()
    assert report([outcome], max_failure_rate=0.2, out=out) == 0
    assert "  sceval_clean: 20 requests, 17 answered (85%); api_failure 2, refusal 1 -> ok" in out.getvalue()
    assert "first error: HTTP 503 from http://x/v1" in out.getvalue()
    out = io.StringIO()
    assert report([outcome], max_failure_rate=0.05, out=out) == 1  # 10 % got no reply
    assert "FAILED: failure rate 10.0% > 5.0%" in out.getvalue()
    refused = TaskOutcome.from_records("c3po_cc", [{"invalid": "refusal", "correct": None}])
    assert refused.problem(1.0) == "coverage 0" and TaskOutcome("x", 0, 0).problem(1.0) == "no requests"


def test_a_run_of_many_tasks_keeps_its_summary_to_one_screen_and_names_every_failing_task():
    clean = [TaskOutcome(f"sceval_single_{i:02d}", 30, 30) for i in range(SCREEN_TASKS)]
    flaky = TaskOutcome.from_records(
        "sceval_clean", [{"invalid": None, "correct": 1}] * 29 + [{"invalid": "refusal", "correct": None}]
    )
    out = io.StringIO()
    assert report([*clean, flaky], out=out) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) == 4  # the rule, one line for the 20 clean tasks, the task with a refusal and its first
    assert f"  {SCREEN_TASKS} task(s) with no failures: {30 * SCREEN_TASKS} requests, all answered -> ok" in lines
    assert "  sceval_clean: 30 requests, 29 answered (97%); refusal 1 -> ok" in lines
    out = io.StringIO()
    report(clean[:3], out=out)  # a small run: a line each, by name
    assert [line.split(":")[0].strip() for line in out.getvalue().splitlines()[1:]] == [o.name for o in clean[:3]]


@pytest.mark.slow
def test_a_run_where_every_request_failed_exits_1_with_the_summary(tmp_path):
    """~15 s idle: sceval_openai against a fake vLLM that answers HTTP 400 to every request. The
    threshold is set to 100 %, so what fails the run is its coverage of 0; the option is
    faultline-eval's own (lmms-eval would refuse it)."""
    with FakeOpenAI(fail_status=400) as fake:
        done = run(
            "faultline-eval",
            "eval",
            "--max-failure-rate",
            "1",
            "--model",
            "sceval_openai",
            "--model_args",
            f"base_url={fake.url},max_retries=1,initial_backoff=0.01,store=none,audio_canary=off",
            "--tasks",
            "sceval_clean",
            "--limit",
            "3",
            "--output_path",
            "out/",
            cwd=tmp_path,
        )
    assert done.returncode == 1, done.stderr[-3000:]
    summary = done.stdout[done.stdout.index("faultline-eval: summary") :].splitlines()
    assert summary[0] == "faultline-eval: summary (exit 1 on coverage 0 or a failure rate above 100%):"
    assert summary[1] == "  sceval_clean: 3 requests, 0 answered (0%); api_failure 3 -> FAILED: coverage 0"
    assert summary[2].startswith("      first error: HTTP 400 from ") and "fake error 400" in summary[2]
    assert summary[3] == "faultline-eval: 1 of 1 task(s) failed: sceval_clean"
    # then each served model's media reuse (issue 41): 3 requests of the same item sent nothing twice
    [reuse] = [line for line in summary if "media parts sent" in line]
    assert reuse.startswith("faultline-eval: sceval_openai") and ", 0 (0%) repeating an earlier part" in reuse
    results = next((tmp_path / "out").rglob("*_results.json"))  # the results are still written
    # with the versions they leave out and the request totals, for the viewer's run panel
    from importlib.metadata import version

    info = json.loads(results.with_name(results.name.replace("_results", "_run_info")).read_text())
    versions = info["versions"]
    assert versions["faultline-eval"] == version("faultline-eval") and versions["torch"] == version("torch")
    assert versions["lmms-eval"] == version("lmms-eval")
    (totals,) = info["requests"].values()
    assert (totals["sent"], totals["generated"], totals["failures"]) == (3, 0, {"api_failure": 3})
    assert totals["input_tokens"] == totals["output_tokens"] == 0  # an HTTP 400 reports no usage


def test_faultline_eval_help_shows_its_own_options_then_lmms_evals(capsys):
    """``--help`` is help, not a refused run (the checks before the first request wanted --model)."""
    from faultline_app.eval_cli import main

    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code in (0, None)
    out = capsys.readouterr().out
    assert out.index("--max-failure-rate") < out.index("--budget") < out.index("--model MODEL")


def test_the_failure_rate_threshold_is_checked_before_anything_runs(tmp_path):
    bad = run(
        "faultline-eval",
        "--max-failure-rate",
        "5",
        "--model",
        "sceval_reference",
        "--tasks",
        "sceval_clean",
        cwd=tmp_path,
        timeout=120,
    )
    assert bad.returncode == 2 and "--max-failure-rate must be between 0 and 1, got 5" in bad.stderr


def test_sceval_build_convert_with_nothing_converted_exits_1_with_the_summary(tmp_path):
    """A Social-IQ 2.0 copy whose videos are all missing: every example rejected, exit 1."""
    base = tmp_path / "copy" / "siq2"
    for folder in ("qa", "video", "audio/wav"):
        (base / folder).mkdir(parents=True)
    rows = [
        {
            "qid": f"vidZ_q{i}_0",
            "q": "What does he say?",
            "vid_name": "vidZ",
            "ts": "0.00-4.00",
            "a0": "Hello",
            "a1": "Bye",
            "a2": "Stop",
            "a3": "Run",
            "answer_idx": 1,
        }
        for i in (1, 2)
    ]
    (base / "qa" / "qa_val.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (base / "qa" / "qa_test.json").write_text("")
    done = run(
        "sceval", "build", "convert", str(tmp_path / "b"), f"social_iq2={tmp_path / 'copy'}", cwd=tmp_path, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert "  social_iq2: 2 examples, 0 converted (0%); missing_video 2 -> FAILED: coverage 0" in done.stdout
    assert "      first error: " in done.stdout


def test_faultline_probe_status_counts_errors_and_sets_aside_docs_with_no_reference(tmp_path, capsys):
    from c3po_plugin.mechanistic.cli import probe_status

    lines = [{"status": "ok"}] * 3 + [{"status": "error", "detail": "RuntimeError: out of memory"}]
    (tmp_path / "e1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"status": "o')  # torn tail
    (tmp_path / "e2.jsonl").write_text(json.dumps({"status": "no_reference"}) + "\n")
    (tmp_path / "e3.jsonl").write_text(json.dumps({"status": "error", "detail": "ValueError: bad audio"}) + "\n")
    assert probe_status(str(tmp_path), ["e1", "e2"], max_failure_rate=0.25) == 0
    assert "  probe e1: 4 requests, 3 answered (75%); error 1 -> ok" in capsys.readouterr().out
    assert probe_status(str(tmp_path), ["e1", "e3"], max_failure_rate=0.25) == 1
    out = capsys.readouterr().out
    assert "  probe e3: 1 requests, 0 answered (0%); error 1 -> FAILED: coverage 0" in out
    assert "first error: ValueError: bad audio" in out
