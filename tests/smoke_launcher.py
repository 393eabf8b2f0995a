"""Runs every ``benchmarks/`` script at ``--smoke`` size for tests/test_benchmarks_smoke.py.

    python tests/smoke_launcher.py OUT AT_ONCE SCRIPT...

Each script runs as ``python benchmarks/SCRIPT.py --smoke --json OUT/SCRIPT/figures.json`` would, in
its own process with OUT/SCRIPT as its working folder, its output in ``stdout`` and ``stderr`` there,
and its exit status written to ``returncode`` when it ends (a death by signal N as -N), after its
wall and CPU seconds (its own and its commands') and when it started in ``seconds``. What differs: the process is
forked from this one after it imported torch, transformers, lmms-eval, the plugins' commands,
matplotlib and :data:`SHARED_IMPORTS` (seconds each time, most of a smoke run's cost), as are the
commands the scripts start through ``provenance.Popen`` and ``provenance.run_command`` (console
scripts of this environment, ``python -c`` and ``python -m``: :class:`ForkedPopen`); ``AT_ONCE``
scripts run side by side, torch with one thread each. First of all, in the same way, the README's
main job on the demo at smoke size (``provenance.demo_main_job``) into OUT/demo, the folder
:data:`provenance.SMOKE_DEMO_ENV` names: the scripts that take it start once it is done.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import importlib
import importlib.metadata
import os
import runpy
import subprocess
import sys
import time
import traceback
import weakref
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
#: The scripts that copy the demo main job (provenance.demo_main_job with smoke=True).
NEED_DEMO = {"viewer", "viewer_screenshots", "same_behaviour"}
DEMO = "demo"
#: What several children would otherwise each import after forking (the lmms-eval runs' metrics, the
#: reports' modules, the PDF backend, the Qwen adapters' librosa, the build commands' openpyxl...).
SHARED_IMPORTS = (
    "sklearn.metrics",
    "nltk",
    "librosa.core.audio",
    "cv2",
    "av",
    "openpyxl",
    "matplotlib.backends.backend_pdf",
    "sceval_plugin.report",
    "c3po_plugin.report",
)


def run_script(script: str, out: Path) -> int | None:
    path = BENCHMARKS / f"{script}.py"
    sys.argv = [str(path), "--smoke", "--json", str(out / "figures.json")]
    sys.path.insert(0, str(BENCHMARKS))  # as `python benchmarks/SCRIPT.py` has it
    runpy.run_path(str(path), run_name="__main__")  # its SystemExit is its exit status
    return 0


class ForkedPopen(subprocess.Popen):
    """:class:`subprocess.Popen` whose child, for a command :func:`as_main` knows, is a fork of this
    process (its imports done) that runs the command as its own interpreter would; any other
    command starts as Popen starts it. Pipes, ``cwd``, ``env``, ``start_new_session``, ``wait``,
    ``communicate`` and ``kill`` work as for any Popen."""

    def _execute_child(  # type: ignore[override]  # Popen's POSIX signature (Python 3.11 to 3.13)
        self, args, executable, preexec_fn, close_fds, pass_fds, cwd, env, startupinfo, creationflags, shell,
        p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite, restore_signals, gid, gids, uid, umask,
        start_new_session, process_group,
    ) -> None:  # fmt: skip
        command = None if shell or executable or preexec_fn else as_main(list(args))
        if command is None:
            return super()._execute_child(  # type: ignore[misc]
                args, executable, preexec_fn, close_fds, pass_fds, cwd, env, startupinfo, creationflags, shell,
                p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite, restore_signals, gid, gids, uid, umask,
                start_new_session, process_group,
            )  # fmt: skip
        sys.stdout.flush()  # or the child would write this process's pending output again
        sys.stderr.flush()
        pid = os.fork()
        if not pid:
            for fd, standard in ((p2cread, 0), (c2pwrite, 1), (errwrite, 2)):
                if fd != -1:
                    os.dup2(fd, standard)
            for fd in {p2cwrite, c2pread, errread} - {-1}:
                os.close(fd)
            if start_new_session:
                os.setsid()
            if env is not None:
                os.environ.clear()
                os.environ.update(env)
            if cwd is not None:
                os.chdir(cwd)
            # the forking script's exit-time clean-ups (its temporary folders) are its own, not the command's
            for inherited in list(weakref.finalize._registry):  # type: ignore[attr-defined]
                inherited.atexit = False
            exit_with(command)
        self.pid = pid
        self._child_created = True
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)  # type: ignore[attr-defined]


def as_main(argv: list[str]) -> Callable[[], int | None] | None:
    """What runs ``argv`` in this process as its interpreter would: a console script of this
    environment (``faultline-eval``, ``sceval``...) or this interpreter's ``-c CODE`` or ``-m
    MODULE``; None for any other command."""
    if len(argv) >= 3 and Path(argv[0]) == Path(sys.executable) and argv[1] in ("-c", "-m"):
        option, what, args = argv[1], argv[2], argv[3:]

        def interpreter() -> int:
            if option == "-m":
                sys.argv = [what, *args]  # runpy makes the first the module's path, as python -m does
                runpy.run_module(what, run_name="__main__", alter_sys=True)
            else:
                sys.argv = ["-c", *args]
                exec(compile(what, "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
            return 0

        return interpreter
    entry = console_scripts().get(Path(argv[0]).name)
    if entry is None or Path(argv[0]).parent != Path(sys.executable).parent:
        return None

    def console_script() -> int | None:
        sys.argv = list(argv)
        return entry.load()()

    return console_script


@functools.cache
def console_scripts() -> dict[str, importlib.metadata.EntryPoint]:
    """This environment's console scripts by name (looked up once, here, not in each child)."""
    return {entry.name: entry for entry in importlib.metadata.entry_points(group="console_scripts")}


def make_demo(out: Path) -> int:
    import provenance

    os.environ.pop(provenance.SMOKE_DEMO_ENV)  # this is the one the others copy
    provenance.demo_main_job(out, smoke=True)  # a failed command ends it with SystemExit
    return 0


def exit_with(job: Callable[[], int | None]) -> None:
    """End this (forked) process as an interpreter running ``job`` would: its exit status, or that
    of its SystemExit, or 1 with the traceback; the exit handlers run (temporary folders...)."""
    code = 1
    try:
        code = job() or 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1 if done.code is not None else 0
        if code == 1 and not isinstance(done.code, int):
            print(done.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            atexit._run_exitfuncs()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)


def start(name: str, out: Path, job: Callable[[], int]) -> int:
    """Fork a child that runs ``job`` with its output in ``out`` and ends with its exit status."""
    out.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    os.chdir(out)
    for fd, name_ in ((1, "stdout"), (2, "stderr")):
        os.dup2(os.open(out / name_, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
    exit_with(job)
    return 0  # not reached


def main() -> None:
    out, at_once, scripts = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    sys.path.insert(0, str(BENCHMARKS))
    # The imports every child would otherwise repeat. wandb first (timm imports it, under the
    # embedding judge's sentence-transformers): its pydantic classes call inspect.getmodule, which
    # walks sys.modules, and after lmms-eval's thousands of modules that takes seconds.
    with contextlib.suppress(ImportError):
        importlib.import_module("wandb")
    import lmms_eval.evaluator
    import lmms_eval.models  # noqa: F401
    import provenance

    import faultline_app.c3po_cli
    import faultline_app.sceval_cli  # noqa: F401
    from faultline_eval.core.figures import pyplot

    pyplot()  # matplotlib, which every report with figures imports
    for name in SHARED_IMPORTS:
        with contextlib.suppress(ImportError):  # one not installed (or moved) costs time, not correctness
            importlib.import_module(name)
    import torch

    torch.set_num_threads(1)  # AT_ONCE children share the cores: more threads each only spin on tiny models
    console_scripts()
    provenance.Popen = ForkedPopen  # the scripts' commands, forked from here too
    gc.freeze()  # the children's garbage collections skip what is here (and leave its pages shared)

    demo_out = out / DEMO / "run"
    os.environ[provenance.SMOKE_DEMO_ENV] = str(demo_out)
    jobs = [(DEMO, lambda: make_demo(demo_out))]
    jobs += [(s, lambda s=s: run_script(s, out / s)) for s in scripts]
    running: dict[int, tuple[str, float]] = {}
    began = time.perf_counter()
    ended: dict[str, int] = {}
    while jobs or running:
        demo_done = ended.get(DEMO) == 0
        for name, job in list(jobs):
            if len(running) >= at_once:
                break
            if name in NEED_DEMO and not demo_done:
                if DEMO in ended:  # the demo failed: its users fail with its error
                    jobs.remove((name, job))
                    (out / name).mkdir(parents=True, exist_ok=True)
                    (out / name / "stderr").write_text(
                        f"the demo main job failed:\n{(out / DEMO / 'stderr').read_text()}"
                    )
                    (out / name / "stdout").write_text("")
                    (out / name / "returncode").write_text("1")
                    ended[name] = 1
                continue
            jobs.remove((name, job))
            running[start(name, out / name, job)] = (name, time.perf_counter())
        if not running:
            continue
        pid, status, usage = os.wait4(-1, 0)
        name, started = running.pop(pid)
        ended[name] = os.waitstatus_to_exitcode(status)
        wall, cpu = time.perf_counter() - started, usage.ru_utime + usage.ru_stime
        (out / name / "seconds").write_text(f"{wall:.1f} wall, {cpu:.1f} CPU, started {started - began:.1f} s in\n")
        (out / name / "returncode").write_text(str(ended[name]))


if __name__ == "__main__":
    main()
