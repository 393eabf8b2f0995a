"""``faultline-eval`` refuses what it can check before lmms-eval is imported (issue 35), and a run
whose files were not saved exits 1, its replies kept in the reply store.

Each refusal goes through the real entry point (``faultline_app.eval_cli.main``) in a fresh
interpreter, which then says whether lmms-eval was imported: no lmms-eval means no task index and
no model load. A fake OpenAI server counts the requests that reached it.
"""

from __future__ import annotations

import inspect
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fake_gemini import FakeGemini
from fake_openai import FakeOpenAI

from faultline_eval.core.preflight import PreflightError, check_writable_folder, looks_like_path
from faultline_eval.model_wrappers.lmms_plugin import MODELS
from faultline_eval.model_wrappers.model_args import declared_args
from faultline_eval.model_wrappers.preflight import check_checkpoints, check_model_name, model_arguments

#: faultline-eval's entry point, then whether lmms-eval was imported (the marker the assertions read).
ENTRY = (
    "import sys; from faultline_app.eval_cli import main; code = main(sys.argv[1:]); "
    "print('lmms_eval imported:', 'lmms_eval' in sys.modules); sys.exit(code)"
)


def faultline_eval(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def refused(done: subprocess.CompletedProcess, *fragments: str) -> str:
    """The one-line refusal, after checking exit 1 and that lmms-eval was never imported."""
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "lmms_eval imported: False" in done.stdout, done.stdout[-2000:]
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("faultline-eval: error: "), done.stderr
    for fragment in fragments:
        assert fragment in error, error
    return error


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_output_path_that_cannot_be_written_is_refused_and_nothing_is_left(tmp_path):
    (tmp_path / "notes.md").write_text("a file")
    base = ["--model", "sceval_reference", "--tasks", "sceval_clean", "--limit", "2", "--log_samples"]
    done = faultline_eval("eval", *base, "--output_path", "notes.md/out", cwd=tmp_path)
    refused(done, "--output_path 'notes.md/out' cannot be written", "notes.md is a file, not a folder")
    # the runs of a --config file are checked as lmms-eval reads them: the command line wins
    (tmp_path / "runs.yaml").write_text("- {model: sceval_reference, output_path: notes.md/a}\n- {model: x}\n")
    refused(faultline_eval("--config", "runs.yaml", "--tasks", "sceval_clean", cwd=tmp_path), "'notes.md/a'")
    done = faultline_eval("--config", "runs.yaml", "--output_path", "ok/", "--tasks", "sceval_clean", cwd=tmp_path)
    refused(done, "--model 'x' is not a model")
    refused(faultline_eval(*base, cwd=tmp_path), "--log_samples needs --output_path")
    # a run refused for another reason leaves no empty output folder behind
    refused(faultline_eval(*base, "--output_path", "new/out", "--model", "sceval_refrence", cwd=tmp_path))
    assert not (tmp_path / "new").exists()


def test_a_misspelt_model_name_names_the_close_match_in_one_line(tmp_path):
    done = faultline_eval("--model", "sceval_refrence", "--tasks", "sceval_clean", cwd=tmp_path)
    error = refused(done, "--model 'sceval_refrence'", "did you mean sceval_reference?")
    assert len(error) < 500  # not lmms-eval's list of every model
    refused(faultline_eval("--tasks", "sceval_clean", cwd=tmp_path), "--model is missing")
    assert check_model_name("openai_compatible") == "openai"  # lmms-eval's alias, read without importing it
    assert check_model_name("sceval_openai") == "sceval_openai"
    with pytest.raises(PreflightError, match="did you mean qwen2_5_omni"):
        check_model_name("qwen2_5_omin")


@pytest.mark.parametrize("checkpoint", ["/no/such/folder", "./no-such-ckpt", "~/no-such-ckpt", "a/b/c"])
def test_a_checkpoint_path_that_does_not_exist_is_refused(tmp_path, checkpoint):
    done = faultline_eval(
        "--model",
        "faultline_qwen2_5_omni",
        "--model_args",
        f"pretrained={checkpoint}",
        "--tasks",
        "sceval_clean",
        cwd=tmp_path,
        env={"HOME": str(tmp_path)},
    )
    refused(done, f"--model_args pretrained {checkpoint!r} does not exist", "Hugging Face repo id (org/name)")


def test_a_misspelt_model_argument_of_ours_is_refused_from_the_source(tmp_path):
    done = faultline_eval(
        "--model", "faultline_qwen2_5_omni", "--model_args", "pretrianed=x", "--tasks", "sceval_clean", cwd=tmp_path
    )
    refused(done, "faultline_qwen2_5_omni: unknown model argument 'pretrianed' (did you mean 'pretrained'?)")
    args = ["--model", "sceval_reference", "--model_args", "sed=1,allow_unknown_args=maybe", "--tasks", "sceval_clean"]
    refused(faultline_eval(*args, cwd=tmp_path), "allow_unknown_args='maybe': use true or false")


@pytest.mark.slow
def test_the_arguments_read_from_source_are_those_each_registered_class_takes():
    """~12 s (imports every model class): the check before lmms-eval is imported and the one in
    each class's __init__ agree."""
    import importlib

    for model_id, chat, simple in MODELS:
        for path in filter(None, (chat, simple)):
            module, _, name = path.rpartition(".")
            cls = getattr(importlib.import_module(module), name)
            runtime = {
                p.name
                for k in cls.__mro__
                if k.__module__.startswith("faultline_eval.") and "__init__" in k.__dict__
                for p in list(inspect.signature(k.__dict__["__init__"]).parameters.values())[1:]
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            }
            assert declared_args(path) == runtime, model_id


def test_hub_ids_and_existing_checkpoints_are_not_paths_to_check(tmp_path):
    (tmp_path / "ckpt").mkdir()
    check_checkpoints({"pretrained": "Qwen/Qwen2.5-Omni-3B", "model_path": str(tmp_path / "ckpt")})
    assert not looks_like_path("Qwen/Qwen2.5-Omni-3B") and looks_like_path("~/ckpt") and looks_like_path("x/y/z")
    with pytest.raises(PreflightError, match=r"did you mean .*ckpt\?"):
        check_checkpoints({"pretrained": str(tmp_path / "ckpy")})
    args = model_arguments('pretrained=/m,base_url=http://a:1/v1|http://b:2/v1,chat={"a": 1, "b": 2}')
    assert args == {"pretrained": "/m", "base_url": "http://a:1/v1|http://b:2/v1", "chat": '{"a": 1, "b": 2}'}


def served_run(base_url: str, tmp_path: Path, model: str = "sceval_openai") -> subprocess.CompletedProcess:
    return faultline_eval(
        "--model", model, "--model_args", f"base_url={base_url},store=none", "--tasks", "sceval_clean", cwd=tmp_path
    )


def test_a_server_that_is_down_is_refused_with_how_to_start_it(tmp_path):
    port = closed_port()
    done = served_run(f"http://127.0.0.1:{port}/v1", tmp_path)
    refused(done, f"base_url=http://127.0.0.1:{port}/v1", "connection refused", "vllm serve")
    assert "model=" not in done.stderr  # passing model=... would not help
    done = faultline_eval("--model", "sceval_openai", "--tasks", "sceval_clean", cwd=tmp_path)  # the default URL
    assert done.returncode == 1 and "sceval_openai's default base_url=http://127.0.0.1:8000/v1" in done.stderr
    refused(served_run(f"http://127.0.0.1:{port}", tmp_path, model="sceval_gemini"), "connection refused")
    refused(served_run("127.0.0.1:8000/v1", tmp_path), "is not an http:// or https:// URL")


def test_a_base_url_without_v1_and_a_server_that_never_answers_get_their_own_hints(tmp_path):
    with FakeOpenAI() as server:
        root = server.url.removesuffix("/v1")
        refused(served_run(root, tmp_path), "HTTP 404", f"ends in /v1: {root}/v1?")
        assert server.requests == []  # nothing was sent
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        refused(served_run(f"http://127.0.0.1:{silent.getsockname()[1]}/v1", tmp_path), "no answer within 2 s")


@pytest.mark.slow
def test_a_served_gemini_base_url_that_answers_passes(tmp_path):
    """Any HTTP answer will do for a server that is not OpenAI-compatible: the run goes on to
    lmms-eval, whose own error (here: no key) follows."""
    with FakeGemini() as server:
        done = served_run(server.url, tmp_path, model="sceval_gemini")
        assert "lmms_eval imported: True" in done.stdout and server.requests == []


@pytest.mark.parametrize("setting,task", [("SCEVAL_SOURCE", "sceval_clean"), ("C3PO_SOURCE", "c3po_all")])
def test_a_source_setting_without_items_is_refused(tmp_path, setting, task):
    (tmp_path / "empty").mkdir()
    (tmp_path / "blank").mkdir()
    (tmp_path / "blank" / "items.jsonl").write_text("")
    base = ["--model", "sceval_reference", "--tasks", task]
    refused(
        faultline_eval(*base, cwd=tmp_path, env={setting: "/no/such/dir"}), f"{setting}='/no/such/dir' does not exist"
    )
    refused(faultline_eval(*base, cwd=tmp_path, env={setting: "empty"}), f"{setting}=empty: folder has no items.jsonl")
    refused(faultline_eval(*base, cwd=tmp_path, env={setting: "blank"}), "is empty, it holds no items")


def test_the_write_check_removes_what_it_created_when_asked(tmp_path):
    assert check_writable_folder(tmp_path / "a" / "b", "--out", keep_created=False) == tmp_path / "a" / "b"
    assert not (tmp_path / "a").exists()
    check_writable_folder(tmp_path / "kept", "--out")
    assert (tmp_path / "kept").is_dir() and not list((tmp_path / "kept").iterdir())


@pytest.mark.slow
def test_a_run_whose_files_cannot_be_saved_exits_1_and_the_rerun_sends_nothing(tmp_path):
    """~40 s: the output folder becomes a file once the first request arrives (after the checks
    passed; a file, since the tests run as root and permissions would not stop a write). The run
    exits 1 naming the file and lmms-eval's error; the same command, once the path is writable,
    answers every request from the reply store and saves."""
    out = tmp_path / "out"

    def block_the_output_folder() -> None:
        if not out.exists():
            out.write_text("in the way")

    with FakeOpenAI(on_request=block_the_output_folder) as server:
        command = [
            "--model",
            "sceval_openai",
            "--model_args",
            f"base_url={server.url},store={tmp_path / 'replies.jsonl'},audio_canary=off",
            "--tasks",
            "sceval_clean",
            "--limit",
            "3",
            "--log_samples",
            "--output_path",
            str(out),
        ]
        first = faultline_eval(*command, cwd=tmp_path)
        sent = len(server.requests)
        assert first.returncode == 1 and sent == 3, first.stdout[-2000:] + first.stderr[-2000:]
        assert f"faultline-eval: error: not saved: {out}" in first.stderr and "_results.json: " in first.stderr
        assert f"FileExistsError(17, 'File exists') ({out} is a file, not a folder)" in first.stderr
        assert "sends none of them again" in first.stderr

        out.unlink()
        second = faultline_eval(*command, cwd=tmp_path)
        assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
        assert len(server.requests) == sent  # every reply came from the store
    records = [json.loads(line) for path in out.rglob("*_samples_sceval_clean.jsonl") for line in path.open()]
    assert len(records) == 3 and next(out.rglob("*_results.json"))
