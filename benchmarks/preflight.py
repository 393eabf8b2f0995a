"""How fast ``faultline-eval`` refuses a bad input, and what it did first (issue 35).

    python benchmarks/preflight.py [--smoke] [--json PATH] [--repeat N]

Each bad input (those of issue 35 and of the exit-status list in ``docs/reference/records.md``) is
one ``faultline-eval`` command in a fresh interpreter, timed from the start of the process to its
exit. The interpreter runs ``faultline_app.eval_cli.main`` under a small import hook that records the
first time lmms-eval is imported, indexes its tasks (``TaskManager.initialize_tasks``) and loads
a model (``lmms.create_from_arg_string``); a fake OpenAI server counts the chat requests that
reach it. Goal: each refusal in <= 3 s on 2 cores, exit 1, before any import of lmms-eval, task
index, model load or request.

``--smoke`` runs three of them once and no peer (a few seconds). The peer: the same command with the good input (``sceval_openai`` against the fake server),
timed to its first chat request: what a refusal that waits for the run costs at least. A row's
``ratio`` is its refusal time over that. Run it against another checkout (``PYTHONPATH=<checkout>``)
to measure that checkout's refusals.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import provenance

GOAL_S = 3.0
ROOT = Path(__file__).resolve().parents[1]

#: Runs faultline-eval's main; prints when (s since the process started) lmms-eval was first
#: imported, indexed its tasks and loaded a model, as one JSON line at exit.
ENTRY = r"""
import atexit, importlib.abc, json, sys, time
START = float(sys.argv.pop(1))
marks = {}
def mark(name):
    marks.setdefault(name, round(time.time() - START, 3))
def wrap(owner, attribute, name, is_classmethod=False):
    original = getattr(owner, attribute)
    if is_classmethod:
        function = original.__func__
        setattr(owner, attribute, classmethod(lambda cls, *a, **k: (mark(name), function(cls, *a, **k))[1]))
    else:
        setattr(owner, attribute, lambda self, *a, **k: (mark(name), original(self, *a, **k))[1])
HOOKS = {
    "lmms_eval.tasks": lambda m: wrap(m.TaskManager, "initialize_tasks", "task_index"),
    "lmms_eval.api.model": lambda m: wrap(m.lmms, "create_from_arg_string", "model_load", True),
}
class Watch(importlib.abc.MetaPathFinder):
    # marks the first lmms-eval module executed (finding one is no import); hooks HOOKS' modules
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] != "lmms_eval":
            return None
        sys.meta_path.remove(self)
        try:
            import importlib.util
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute, hook = spec.loader.exec_module, HOOKS.get(name)
        def exec_module(module):
            mark("lmms_eval_import")
            execute(module)
            if hook:
                hook(module)
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, Watch())
atexit.register(lambda: print("PREFLIGHT-MARKS " + json.dumps(marks)))
from faultline_app.eval_cli import main
sys.exit(main(sys.argv[1:]))
"""


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(args: list[str], cwd: Path, env: dict[str, str], server) -> dict:
    """One faultline-eval command: exit status, seconds to exit, the marks, requests received."""
    before = len(server.requests)
    server.arrivals.clear()
    start = time.time()
    done = subprocess.run(
        [sys.executable, "-c", ENTRY, repr(start), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=900,
    )
    seconds = time.time() - start
    line = next((x for x in done.stdout.splitlines() if x.startswith("PREFLIGHT-MARKS ")), "PREFLIGHT-MARKS {}")
    errors = [x for x in done.stderr.splitlines() if x.startswith("faultline-eval: error")]
    first = server.arrivals[0] if server.arrivals else None
    return {
        "exit": done.returncode,
        "seconds": round(seconds, 3),
        "marks": json.loads(line.split(" ", 1)[1]),
        "requests": len(server.requests) - before,
        "first_request_s": round(first - start, 3) if first else None,
        "message": (errors or done.stderr.strip().splitlines()[-1:] or [""])[0][:300],
    }


def cases(tmp: Path, server_url: str, silent_port: int, smoke: bool) -> list[tuple[str, list[str], dict]]:
    """(name, arguments, environment) of each bad input."""
    (tmp / "a_file").write_text("in the way")
    (tmp / "empty").mkdir(exist_ok=True)
    clean = ["--tasks", "sceval_clean", "--limit", "2"]
    served = ["--model", "sceval_openai", *clean]
    rows = [
        (
            "output_path under a file",
            ["--model", "sceval_reference", *clean, "--log_samples", "--output_path", "a_file/out"],
            {},
        ),
        ("model name misspelt", ["--model", "sceval_refrence", *clean], {}),
        (
            "checkpoint folder missing",
            ["--model", "faultline_qwen2_5_omni", "--model_args", "pretrained=/no/such/folder", *clean],
            {},
        ),
        ("server down", [*served[:2], "--model_args", f"base_url=http://127.0.0.1:{closed_port()}/v1", *clean], {}),
        ("SCEVAL_SOURCE missing", ["--model", "sceval_reference", *clean], {"SCEVAL_SOURCE": "/no/such/dir"}),
    ]
    if smoke:
        return rows[:2] + rows[3:4]
    base_no_v1 = server_url.removesuffix("/v1")
    return rows + [
        ("log_samples without output_path", ["--model", "sceval_reference", *clean, "--log_samples"], {}),
        ("checkpoint ./x missing", ["--model", "faultline_qwen2_5_omni", "--model_args", "pretrained=./x", *clean], {}),
        ("base_url without /v1", [*served[:2], "--model_args", f"base_url={base_no_v1}", *clean], {}),
        (
            "server never answers",
            [*served[:2], "--model_args", f"base_url=http://127.0.0.1:{silent_port}/v1", *clean],
            {},
        ),
        ("SCEVAL_SOURCE folder without items", ["--model", "sceval_reference", *clean], {"SCEVAL_SOURCE": "empty"}),
        (
            "C3PO_SOURCE missing",
            ["--model", "sceval_reference", "--tasks", "c3po_all", "--limit", "2"],
            {"C3PO_SOURCE": "/no/such/dir"},
        ),
        ("task name misspelt (records.md)", ["--model", "sceval_reference", "--tasks", "sceval_t30_v7O"], {}),
        ("model argument misspelt (records.md)", ["--model", "sceval_reference", "--model_args", "sed=1", *clean], {}),
    ]


def measured_checkout() -> tuple[str, str]:
    """The checkout whose faultline_eval the commands import (PYTHONPATH first), and its commit."""
    import importlib.util

    spec = importlib.util.find_spec("faultline_eval")
    folder = Path(spec.origin).resolve().parents[1] if spec and spec.origin else ROOT
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True)
    return str(folder), done.stdout.strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--smoke", action="store_true", help=f"{provenance.SMOKE_HELP}: three bad inputs, once, without the peer"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each command; the fastest counts (default 1)")
    args = parser.parse_args()
    args.repeat = max(1, args.repeat)
    record = provenance.Record(__file__, peer="the same command with the good input, timed to its first request")
    checkout = measured_checkout()
    from fake_openai import FakeOpenAI

    from faultline_eval.core.offline import use_offline_defaults

    use_offline_defaults()  # as faultline-eval itself does: no hub, no telemetry

    tmp = Path(tempfile.mkdtemp(prefix="preflight-bench-"))
    rows: list[dict] = []
    arrivals: list[float] = []  # when each chat request reached the fake server
    with FakeOpenAI(on_request=lambda: arrivals.append(time.time())) as server, socket.socket() as silent:
        server.arrivals = arrivals
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # accepts (the backlog), never answers
        env = {"SCEVAL_CACHE": str(tmp / "cache")}
        good = ["--model", "sceval_openai", "--model_args", f"base_url={server.url},store=none,audio_canary=off"]
        peer = {"first_request_s": None, "exit": None}  # --smoke: refusals only, in seconds
        if not args.smoke:
            peer = min(
                (run([*good, "--tasks", "sceval_clean", "--limit", "2"], tmp, env, server) for _ in range(args.repeat)),
                key=lambda r: r["first_request_s"] or 1e9,
            )
        for name, command, extra in cases(tmp, server.url, silent.getsockname()[1], args.smoke):
            best = min(
                (run(command, tmp, {**env, **extra}, server) for _ in range(args.repeat)), key=lambda r: r["seconds"]
            )
            before = sorted(best["marks"]) + (["request"] if best["requests"] else [])
            best.update(
                case=name,
                command="faultline-eval " + " ".join(command),
                env=extra,
                happened_first=before,
                ratio=round(best["seconds"] / peer["first_request_s"], 2) if peer["first_request_s"] else None,
                meets_goal=best["exit"] == 1 and best["seconds"] <= GOAL_S and not before,
            )
            rows.append(best)
            print(
                f"{name:38s} exit {best['exit']}  {best['seconds']:6.2f} s  x{best['ratio']}  "
                f"before: {', '.join(before) or 'nothing'}  {'ok' if best['meets_goal'] else 'MISSES GOAL'}"
            )
            print(f"    {best['message'][:200]}")
    if peer["first_request_s"] is not None:
        print(
            f"peer: the good command reached its first request after {peer['first_request_s']} s (exit {peer['exit']})"
        )
    print(
        f"{sum(r['meets_goal'] for r in rows)}/{len(rows)} refused in <= {GOAL_S:g} s before any import, index, load or request"
    )
    record.figure(
        "refused_within_goal",
        sum(r["meets_goal"] for r in rows),
        "cases",
        f"of {len(rows)} refused in <= {GOAL_S:g} s, exit 1, before any import, index, load or request",
    )
    if peer["first_request_s"] is not None:
        record.figure(
            "peer_first_request", peer["first_request_s"], "s", "the good command's time to its first request"
        )
    for row in rows:
        slug = "".join(c if c.isalnum() else "_" for c in row["case"].lower()).strip("_")
        record.figure(
            slug,
            row["seconds"],
            "s",
            f"{row['command']} -> exit {row['exit']}; first: {', '.join(row['happened_first']) or 'nothing'}",
        )
    record.figure("measured_checkout", f"{checkout[0]} @ {checkout[1]}", "", "the faultline_eval the commands imported")
    record.write(args.json, smoke=args.smoke)
    if args.smoke:
        return 0  # a smoke run says the path works; its times say nothing
    return 0 if all(r["meets_goal"] for r in rows if "records.md" not in r["case"]) else 1


if __name__ == "__main__":
    sys.exit(main())
