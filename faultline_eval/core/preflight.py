"""Checks that run before the first request: a bad input is refused while refusing is cheap.

Every command checks what it can before lmms-eval indexes its tasks, a model loads or a request is
sent: the folders it will write can be written, the folders and files it will read exist and hold
what it reads. A refusal is one :class:`PreflightError` whose message names the argument, the path,
what is wrong and the fix; the commands print it as ``<command>: error: <message>`` and exit 1.

    check_writable_folder("out/", "--output_path")      # creates out/, writes and removes a file
    check_existing_folder("out/report", "--sceval-report", holds="report.json")
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from faultline_eval.core.registry import close_matches

__all__ = ["PreflightError", "check_existing_folder", "check_writable_folder"]


class PreflightError(ValueError):
    """An input refused before any work started; the message names the argument and the fix."""


def check_writable_folder(path: str | os.PathLike[str], argument: str) -> Path:
    """``path`` as a folder this process can write: created if missing, then proven by writing and
    removing a real file (permissions, read-only mounts and a file where a folder should be all
    fail here, not after hours of requests). Returns the path; raises :class:`PreflightError`."""
    folder = Path(path)
    probe = folder / f".faultline-write-check-{uuid.uuid4().hex}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as exc:
        blocker = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
        why = f"{blocker} is a file, not a folder" if blocker else f"{type(exc).__name__}: {exc.strerror or exc}"
        raise PreflightError(
            f"{argument} {str(path)!r} cannot be written ({why}); give a folder you can write to"
        ) from exc
    return folder


def check_existing_folder(path: str | os.PathLike[str], argument: str, *, holds: str | None = None) -> Path:
    """``path`` as an existing folder, holding a file matching the glob ``holds`` when given.
    Raises :class:`PreflightError` naming the argument, with the close folder names beside it."""
    folder = Path(path)
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        parent = folder.parent if folder.parent.is_dir() else None
        near = sorted(p.name for p in parent.iterdir() if p.is_dir()) if parent else []
        close = close_matches(folder.name, near)
        hint = f"; did you mean {', '.join(str(parent / c) for c in close)}?" if parent and close else ""
        raise PreflightError(f"{argument} {str(path)!r} {what}{hint}")
    if holds is not None and next(folder.glob(holds), None) is None:
        raise PreflightError(f"{argument} {str(path)!r} holds no {holds}; is it the right folder?")
    return folder
