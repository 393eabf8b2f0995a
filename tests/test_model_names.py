"""A model is what was run (issue 35): which runs are one model and the name each gets
(:mod:`faultline_eval.core.model_names`), on results JSONs as lmms-eval writes them, and through the
wrapped-task reader that ``faultline audit`` uses. The real CLI runs are in
tests/test_model_names_cli.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_wrap_report import worldsense_doc, write_run

from faultline_eval.core.model_names import NOT_IDENTITY_ARGS, ModelNames, parse_model_args
from faultline_eval.core.run_logs import ReportError, model_label
from faultline_eval.model_wrappers.model_args import UnknownModelArgError, check_model_args
from faultline_eval.model_wrappers.reference import ReferenceChat
from sceval_plugin.report.wrapped_reader import read_wrapped_runs


def results(folder: Path, model: str, model_args: str | dict, date: str = "20261207_100000") -> Path:
    """A results JSON whose ``config`` is lmms-eval's (the model and its arguments as given)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{date}_results.json"
    path.write_text(json.dumps({"results": {}, "config": {"model": model, "model_args": model_args}}))
    return path


def named(*paths: Path) -> list[str]:
    names = ModelNames(paths)
    return [names.of(p) for p in paths]


def test_a_lone_run_keeps_the_name_it_always_had(tmp_path):
    assert named(results(tmp_path / "a", "sceval_reference", "")) == ["sceval_reference"]
    qwen = results(tmp_path / "b", "faultline_qwen2_5_omni", "pretrained=Qwen/Qwen2.5-Omni-7B,device=cuda,dtype=bf16")
    assert named(qwen) == ["faultline_qwen2_5_omni:Qwen/Qwen2.5-Omni-7B"]
    assert named(results(tmp_path / "c", "modality_oracle", "modality=vision")) == ["modality_oracle"]
    # two models of different classes: each is alone under its name
    assert named(results(tmp_path / "d", "sceval_reference", ""), qwen) == [
        "sceval_reference",
        "faultline_qwen2_5_omni:Qwen/Qwen2.5-Omni-7B",
    ]


def test_runs_that_differ_in_a_model_argument_are_named_by_it(tmp_path):
    vision = results(tmp_path / "v", "modality_oracle", "modality=vision")
    audio = results(tmp_path / "a", "modality_oracle", "modality=audio")
    assert named(vision, audio) == ["modality_oracle (modality=vision)", "modality_oracle (modality=audio)"]
    unset = results(tmp_path / "d", "modality_oracle", "")
    assert named(vision, audio, unset)[2] == "modality_oracle (modality=default)"
    # only the arguments that differ are named; the checkpoint stays in the name
    fp32 = results(tmp_path / "f", "faultline_qwen3_omni", "pretrained=q3,dtype=float32,max_new_tokens=64")
    bf16 = results(
        tmp_path / "b", "faultline_qwen3_omni", {"pretrained": "q3", "dtype": "bfloat16", "max_new_tokens": 64}
    )
    assert named(fp32, bf16) == ["faultline_qwen3_omni:q3 (dtype=float32)", "faultline_qwen3_omni:q3 (dtype=bfloat16)"]


def test_transport_and_secrets_do_not_make_another_model(tmp_path):
    first = results(tmp_path / "a", "sceval_openai", "model=m,base_url=http://a:8000/v1,max_concurrency=4")
    again = results(
        tmp_path / "b",
        "sceval_openai",
        "model=m,base_url=http://b:9000/v1|http://c:9000/v1,max_concurrency=64,store=none,timeout=30,"
        "max_retries=9,initial_backoff=2,max_backoff=9,api_key=sk-x,build_workers=8,lookahead=2,audio_canary=false,"
        "canary_items=3,allow_unknown_args=true,device=cpu,device_map=auto,batch_size=2",
    )
    assert named(first, again) == ["sceval_openai:m", "sceval_openai:m"]
    assert "api_key" in NOT_IDENTITY_ARGS and "base_url" in NOT_IDENTITY_ARGS
    assert "modality" not in NOT_IDENTITY_ARGS and "dtype" not in NOT_IDENTITY_ARGS
    other = results(tmp_path / "c", "sceval_openai", "model=m,json_mode=true,base_url=http://a:8000/v1")
    assert named(first, again, other) == [
        "sceval_openai:m (json_mode=default)",
        "sceval_openai:m (json_mode=default)",
        "sceval_openai:m (json_mode=true)",
    ]


def test_a_label_is_the_name(tmp_path):
    vision = results(tmp_path / "v", "modality_oracle", "modality=vision,label=oracle-vision")
    audio = results(tmp_path / "a", "modality_oracle", "modality=audio")
    assert named(vision, audio) == ["oracle-vision", "modality_oracle"]
    assert named(vision) == ["oracle-vision"]
    rerun = results(tmp_path / "r", "modality_oracle", "label=oracle-vision,device=cpu,modality=vision")
    assert named(vision, rerun) == ["oracle-vision", "oracle-vision"]  # one model, run twice


def test_one_name_for_two_models_is_refused_naming_both(tmp_path):
    vision = results(tmp_path / "v", "modality_oracle", "modality=vision,label=oracle")
    audio = results(tmp_path / "a", "modality_oracle", "modality=audio,label=oracle")
    with pytest.raises(ReportError) as refused:
        ModelNames([vision, audio])
    message = str(refused.value)
    assert "'oracle'" in message and str(vision) in message and str(audio) in message
    assert "modality=audio" in message and "label=" in message


def test_names_under_folders_and_fallbacks(tmp_path):
    vision = results(tmp_path / "runs" / "v", "modality_oracle", "modality=vision")
    audio = results(tmp_path / "runs" / "a", "modality_oracle", "modality=audio")
    names = ModelNames.under([tmp_path / "runs"])
    assert names.of(audio) == "modality_oracle (modality=audio)"
    assert names.under_folder(tmp_path / "runs" / "v") == {"modality_oracle (modality=vision)"}
    assert ModelNames.under([tmp_path / "runs" / "v"]).of(vision) == "modality_oracle"
    # a per-sample log given as a file: the results JSON beside it
    log = vision.with_name(vision.name.replace("_results.json", "_samples_sceval_clean.jsonl"))
    log.write_text("")
    assert ModelNames.under([log]).names == {str(vision.absolute()): "modality_oracle"}
    assert names.of(None, "from-record") == "from-record" and names.of(None) == "unknown"
    broken = tmp_path / "x" / "20261207_100000_results.json"
    broken.parent.mkdir()
    broken.write_text("{not json")
    assert ModelNames.under([tmp_path / "x"]).names == {}  # read around until a log asks for it
    with pytest.raises(ReportError, match="not a readable results JSON"):
        ModelNames.under([tmp_path / "x"]).of(broken)


def test_parse_model_args_as_lmms_eval_splits_them():
    assert parse_model_args("a=1, b = x=y ,,c") == {"a": "1", "b": "x=y", "c": ""}
    assert parse_model_args({"pretrained": "p", "n": 3}) == {"pretrained": "p", "n": "3"}
    assert parse_model_args(None) == {}


def test_a_label_is_a_model_argument_that_changes_nothing_sent():
    # every registered class takes it: tests/test_run_status.py (constructors of all 13)
    model = ReferenceChat(label="my run", batch_size=1)
    assert not any("my run" in str(value) for value in vars(model).values())
    with pytest.raises(UnknownModelArgError, match="'lable' \\(did you mean 'label'\\?\\)"):
        check_model_args("sceval_reference", ReferenceChat, {"lable": "my run"})


def test_the_audit_reader_keeps_two_models_of_one_class_apart(tmp_path):
    """The issue's case: one class run with two settings on the same wrapped tasks became one model,
    the newer run kept and a "run more than once" note per task."""
    docs = [worldsense_doc(i) for i in range(4)]
    conditions = {"clean": 1, "missing_audio": 1}
    hears = lambda condition, variant, doc: doc["answer"] if condition == "clean" else "A"  # noqa: E731
    for folder, model_args, date in (
        ("vision", "modality=vision", "20261207_100000"),
        ("audio", "modality=audio", "20261207_110000"),
        ("audio_again", "modality=audio,device=cpu", "20261207_120000"),
    ):
        run = write_run(tmp_path / folder, "oracle", "worldsense", docs, hears, conditions, date=date)
        path = run / f"{date}_results.json"
        payload = json.loads(path.read_text())
        payload["config"]["model_args"] = model_args
        path.write_text(json.dumps(payload))
    runs = read_wrapped_runs([tmp_path / "vision", tmp_path / "audio"])
    assert sorted(set(runs.trials["model"])) == ["oracle (modality=audio)", "oracle (modality=vision)"]
    assert runs.notes == []
    assert len(runs.trials) == 2 * len(docs) * len(conditions)
    runs = read_wrapped_runs([tmp_path / "audio", tmp_path / "audio_again"])  # a device differs: one model
    assert sorted(set(runs.trials["model"])) == ["oracle"]
    assert len(runs.notes) == len(conditions) and all("was run more than once: kept" in n for n in runs.notes)


def test_the_models_page_lists_exactly_the_arguments_that_are_not_identity():
    page = (Path(__file__).parents[1] / "docs" / "reference" / "models.md").read_text(encoding="utf-8")
    listed = page.split("- **Runs of one model.**", 1)[1].split("Every other argument", 1)[0]
    listed = listed.split("which checks it ran, not what the model is:", 1)[1]
    assert set(re.findall(r"`([a-z_]+)`", listed)) == NOT_IDENTITY_ARGS


def test_the_0_2_model_label_still_imports_with_a_deprecation_warning(tmp_path):
    """Plugins written for 0.2 imported ``run_logs.model_label``: it still answers as 0.2 did."""
    results = tmp_path / "r_results.json"
    results.write_text(json.dumps({"config": {"model": "m", "model_args": "pretrained=org/ckpt,modality=audio"}}))
    with pytest.warns(DeprecationWarning, match="core.model_names.ModelNames"):
        assert model_label(results, None) == "m:org/ckpt"
    with pytest.warns(DeprecationWarning):
        assert model_label(None, "fallback") == "fallback"
