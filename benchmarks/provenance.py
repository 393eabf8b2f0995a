"""Where a benchmark's figures come from: the one writer and reader of ``--json`` result files.

What every script under ``benchmarks/`` does (``tests/test_benchmarks_smoke.py`` runs each one):

- ``--smoke``: a run of its whole path (synthesis, the real commands, the comparison with its peer)
  at a size that takes seconds; it exits 0 whatever the ratios, and non-zero only on a crash;
- ``--json PATH``: its figures with their provenance, written by :class:`Record` below;
- a peer that is not installed: run what it can without it (under ``--smoke``), then
  ``return provenance.peer_missing("NAME (install: ...)")``, exit status :data:`PEER_MISSING`;
- a script that needs the README's main job on the demo gets it from :func:`demo_main_job`, which
  under ``--smoke`` copies the finished one that :data:`SMOKE_DEMO_ENV` names (the smoke test runs
  that job once for all such scripts) instead of running it again.

At the end of its run a script writes its measured figures with what produced them::

    record = provenance.Record(__file__, peer="the reference: json.loads + pandas + Python loops")
    ...  # the measurement
    record.figure("speedup", ratio, "x", "reference / sceval report --no-model-pairs --no-figures")
    record.write(args.json, smoke=args.smoke)  # nothing when args.json is None

A file holds the command line, the git commit (and whether the checkout differed from it), the
date, the machine (platform, CPU model, cores, memory), the load average before and after, the
peer's name and the figures, each with its unit. The measured facts that are no benchmark's
(install time and size, CI times, test counts) are files of the same form with ``"script": null``;
figures copied from an older page rather than measured by a script carry ``"transcribed"``.

``benchmarks/results/*.json`` holds the real runs the docs quote. The docs site reads them
(``docs/_ext/measured.py``): the Benchmarks page is generated from them, and any page writes a
figure as ``{{ measured:FILE.FIGURE }}`` (``{{ measured:install.pip_install }}`` -> ``246 s``), so a
figure is stated in one place. :func:`stale` says why a file's figures may no longer hold.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
JSON_HELP = (
    "also write the measured figures as JSON to PATH, with the command, git commit, date, machine and "
    "load (benchmarks/provenance.py; the docs' figures come from such files in benchmarks/results/)"
)
SMOKE_HELP = "a CI-sized run that checks the whole path in seconds (its figures say nothing about speed)"
#: The exit status of a run whose named peer is not installed (after running what it could without it);
#: the smoke test skips such a script with the reason it printed.
PEER_MISSING = 3
#: How the scripts start this environment's console commands (``faultline-eval``, ``sceval report``...)
#: and its interpreter's ``python -c CODE`` / ``python -m MODULE`` (:func:`run_command`; the killed
#: runs of ``faults.py``). The smoke test's launcher (tests/smoke_launcher.py) makes such a process a
#: fork of its own, whose imports of lmms-eval and the plugins are done (a smoke run's times and
#: memory say nothing).
Popen: type[subprocess.Popen] = subprocess.Popen
#: Names a finished smoke-size demo main job (:func:`demo_main_job`, ``smoke=True``) to copy, not re-run.
SMOKE_DEMO_ENV = "FAULTLINE_BENCH_SMOKE_DEMO"
#: Units written straight after the number (``12.1×``); every other unit follows a space (``246 s``).
ATTACHED_UNITS = {"x": "×", "%": "%"}
#: Changes a run's checkout may have without its figures changing (text, and the results themselves).
UNMEASURED = (
    "docs/",
    "benchmarks/results/",
    "benchmarks/provenance.py",  # writes the record, measures nothing
    "tests/test_",
    "README.md",
    "CHANGELOG.md",
    "mkdocs.yml",
)
#: A figure older than this is marked on the Benchmarks page even when its script has not changed.
MAX_AGE_DAYS = 120


def git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.rstrip() if done.returncode == 0 else None  # porcelain lines start with a space


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def machine() -> dict[str, Any]:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "cores": cores,
        "memory_gib": memory_gib(),
    }


def run_command(
    argv: list[str], *, capture_output: bool = False, timeout: float | None = None, check: bool = False, **popen: Any
) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, ...)`` with the process started by :data:`Popen`."""
    if capture_output:
        popen["stdout"] = popen["stderr"] = subprocess.PIPE
    with Popen(argv, **popen) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except BaseException:
            process.kill()
            raise
    done = subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)
    if check:
        done.check_returncode()
    return done


def peer_missing(reason: str) -> int:
    """Say that the peer is missing and how to install it; the exit status to return."""
    print(f"peer missing: {reason}", file=sys.stderr, flush=True)
    return PEER_MISSING


def demo_main_job(out: Path, smoke: bool, reports: bool = True, env: dict[str, str] | None = None) -> Path:
    """The README's main job on the demo into ``out`` (``faultline-eval --model sceval_reference
    --tasks sceval_panel,sceval_single,c3po_all --log_samples``; ``smoke``: ``sceval_clean,c3po_ic_t1``
    on 3 items) and, with ``reports``, ``sceval report`` into ``out/report`` and ``c3po report`` into
    ``out/c3po-report``. Under ``smoke`` with :data:`SMOKE_DEMO_ENV` set, a copy of that folder (made
    by this function with ``reports``). ``env``: the commands' environment (default this one's). A
    failed command ends the script with its error."""
    import shutil

    shared = os.environ.get(SMOKE_DEMO_ENV)
    if smoke and shared:
        if not (Path(shared) / "c3po-report").is_dir():
            raise SystemExit(f"{SMOKE_DEMO_ENV}={shared}: not a finished demo main job with its reports")
        shutil.copytree(shared, out)
        return out
    bin_ = Path(sys.executable).parent
    tasks = ["sceval_clean,c3po_ic_t1", "--limit", "3"] if smoke else ["sceval_panel,sceval_single,c3po_all"]
    steps = [
        [str(bin_ / "faultline-eval"), "eval", "--model", "sceval_reference", "--tasks", *tasks,
         "--log_samples", "--output_path", str(out)],
    ]  # fmt: skip
    if reports:
        steps.append([str(bin_ / "sceval"), "report", str(out), "-o", str(out / "report"), "--quiet"])
        steps.append([str(bin_ / "c3po"), "report", str(out), "-o", str(out / "c3po-report")])
    for step in steps:
        done = run_command(step, capture_output=True, text=True, env=env)  # the commands run offline by default
        if done.returncode:
            raise SystemExit(f"{' '.join(step)} failed:\n{done.stderr[-2000:]}")
    return out


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def without_json(argv: list[str]) -> list[str]:
    """``argv`` without ``--json PATH`` (where the figures went is not part of what was measured)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--json":
            skip = True
        elif not arg.startswith("--json="):
            out.append(arg)
    return out


class Record:
    """One run's provenance, started when the script starts; its figures are added as measured."""

    def __init__(self, script: str, peer: str | None, argv: list[str] | None = None):
        self.script = Path(script).resolve()
        self.peer = peer
        self.argv = list(sys.argv[1:] if argv is None else argv)
        self.load_before = load()
        self.started = dt.datetime.now(dt.timezone.utc)
        self.start = time.perf_counter()
        self.figures: list[dict[str, Any]] = []

    def figure(self, name: str, value: float | int | str, unit: str, what: str) -> None:
        """One measured figure: ``name`` (unique in the file), its value, unit and a phrase saying what it is."""
        if isinstance(value, float):
            value = round(value, 4 if abs(value) < 1 else 2)
        self.figures.append({"name": name, "value": value, "unit": unit, "what": what})

    def as_dict(self, smoke: bool) -> dict[str, Any]:
        script = str(self.script.relative_to(ROOT)) if self.script.is_relative_to(ROOT) else str(self.script)
        changed = git("status", "--porcelain", "--untracked-files=no")
        return {
            "script": script,
            "command": shlex.join(["python", script, *without_json(self.argv)]),
            "smoke": smoke,
            "commit": git("rev-parse", "HEAD"),
            "changed_files": [line[3:] for line in changed.splitlines()] if changed else [],
            "date": self.started.isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - self.start, 1),
            "machine": machine(),
            "load": {"before": self.load_before, "after": load()},
            "peer": self.peer,
            "figures": self.figures,
        }

    def write(self, path: Path | str | None, smoke: bool) -> None:
        if path is None:
            return
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_dict(smoke), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"figures written to {path}")


@dataclass(frozen=True)
class Result:
    """A results file as read back: its name (the file's stem) and its content."""

    name: str
    data: dict[str, Any]

    def figure(self, name: str) -> dict[str, Any]:
        for figure in self.data["figures"]:
            if figure["name"] == name:
                return figure
        known = ", ".join(f["name"] for f in self.data["figures"])
        raise KeyError(f"benchmarks/results/{self.name}.json has no figure {name!r} (it has: {known})")


def results(folder: Path = RESULTS) -> dict[str, Result]:
    """Every results file of ``folder`` by name; a file that is not a result is an error naming it."""
    found = {}
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        missing = {"command", "date", "machine", "figures"} - set(data)
        if missing:
            raise ValueError(
                f"{path}: not a benchmark result, missing {sorted(missing)} (see benchmarks/provenance.py)"
            )
        found[path.stem] = Result(path.stem, data)
    return found


def format_value(value: float | int | str, unit: str) -> str:
    """A figure as the docs state it: ``246 s``, ``12.1×``, ``1,051 tests``, ``0.605``."""
    if isinstance(value, float) and value:  # three significant digits, as measured times deserve
        digits = max(0, 2 - math.floor(math.log10(abs(value))))
        text = f"{value:,.{digits}f}".rstrip("0").rstrip(".") if digits else f"{round(value):,}"
    else:
        text = f"{value:,}" if isinstance(value, int) else str(value)
    if unit in ATTACHED_UNITS:
        return text + ATTACHED_UNITS[unit]
    return f"{text} {unit}" if unit else text


def stale(result: Result, today: dt.date | None = None) -> str | None:
    """Why ``result``'s figures may no longer hold, or None: its script changed after its commit, its
    commit is not in this checkout's history, the run's checkout had changes, or it is old."""
    data = result.data
    if data.get("transcribed"):
        return f"transcribed from {data['transcribed']['from']}, not re-run with its provenance recorded"
    reasons = []
    commit, script = data.get("commit"), data.get("script")
    if commit and script:
        if git("cat-file", "-e", f"{commit}^{{commit}}") is None:
            reasons.append(f"its commit {commit[:10]} is not in this checkout's history")
        else:
            later = git("log", "--format=%h", f"{commit}..HEAD", "--", script)
            if later:
                reasons.append(f"{script} changed since ({len(later.split())} commit(s), latest {later.split()[0]})")
    if script and [path for path in data.get("changed_files", []) if not path.startswith(UNMEASURED)]:
        reasons.append("run from a checkout with uncommitted changes to its code")
    age = ((today or dt.date.today()) - dt.date.fromisoformat(data["date"][:10])).days
    if age > MAX_AGE_DAYS:
        reasons.append(f"measured {age} days ago")
    return "; ".join(reasons) or None
