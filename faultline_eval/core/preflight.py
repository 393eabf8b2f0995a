"""Checks that run before the first request: a bad input is refused while refusing is cheap.

Every command checks what it can before lmms-eval indexes its tasks, a model loads or a request is
sent: the folders it will write can be written, the folders and files it will read exist and hold
what it reads. A refusal is one :class:`PreflightError` whose message names the argument, the path,
what is wrong and the fix; the commands print it as ``<command>: error: <message>`` and exit 1.

    check_writable_folder("out/", "--output_path")      # creates out/, writes and removes a file
    check_existing_folder("out/report", "--sceval-report", holds="report.json")
    check_existing_path("./ckpt", "--model_args pretrained")   # a file or a folder
    probe_endpoint("http://127.0.0.1:8000/v1/models", "base_url")  # answers, or the hint that fits
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

from faultline_eval.core.registry import close_matches

__all__ = [
    "PROBE_TIMEOUT_S",
    "EndpointReply",
    "PreflightError",
    "check_existing_folder",
    "check_existing_path",
    "check_writable_folder",
    "file_in_the_way",
    "looks_like_path",
    "probe_endpoint",
]

#: How long :func:`probe_endpoint` waits for a server's answer: a live server answers a listing in
#: milliseconds; a refusal must come in seconds, not after a run's first request times out.
PROBE_TIMEOUT_S = 2.0


class PreflightError(ValueError):
    """An input refused before any work started; the message names the argument and the fix."""


def check_writable_folder(path: str | os.PathLike[str], argument: str, *, keep_created: bool = True) -> Path:
    """``path`` as a folder this process can write: created if missing, then proven by writing and
    removing a real file (permissions, read-only mounts and a file where a folder should be all
    fail here, not after hours of requests). With ``keep_created=False`` the folders this check
    created are removed again (a command that writes them later leaves nothing behind when it is
    refused for another reason). Returns the path; raises :class:`PreflightError`."""
    folder = Path(path)
    probe = folder / f".faultline-write-check-{uuid.uuid4().hex}"
    created = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as exc:
        blocker = file_in_the_way(folder)
        why = f"{blocker} is a file, not a folder" if blocker else f"{type(exc).__name__}: {exc.strerror or exc}"
        raise PreflightError(
            f"{argument} {str(path)!r} cannot be written ({why}); give a folder you can write to"
        ) from exc
    for made in [] if keep_created else created:  # deepest first; one another process filled stays
        with contextlib.suppress(OSError):
            made.rmdir()
    return folder


def file_in_the_way(folder: Path) -> Path | None:
    """The file that stands where ``folder`` or one of its parents should be a folder, if any."""
    return next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)


def _near(path: Path, folders_only: bool) -> str:
    """``"; did you mean <parent>/<close name>?"`` for the entries beside a missing ``path``."""
    parent = path.parent
    if not parent.is_dir():
        return ""
    near = sorted(p.name for p in parent.iterdir() if p.is_dir() or not folders_only)
    close = close_matches(path.name, near)
    return f"; did you mean {', '.join(str(parent / c) for c in close)}?" if close else ""


def check_existing_folder(path: str | os.PathLike[str], argument: str, *, holds: str | None = None) -> Path:
    """``path`` as an existing folder, holding a file matching the glob ``holds`` when given.
    Raises :class:`PreflightError` naming the argument, with the close folder names beside it."""
    folder = Path(path)
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise PreflightError(f"{argument} {str(path)!r} {what}{_near(folder, folders_only=True)}")
    if holds is not None and next(folder.glob(holds), None) is None:
        raise PreflightError(f"{argument} {str(path)!r} holds no {holds}; is it the right folder?")
    return folder


def check_existing_path(path: str | os.PathLike[str], argument: str, *, fix: str = "") -> Path:
    """``path`` (``~`` expanded) as an existing file or folder; else a :class:`PreflightError`
    naming the argument, the close names beside it and ``fix``."""
    given = Path(path).expanduser()
    if not given.exists():
        raise PreflightError(
            f"{argument} {str(path)!r} does not exist{_near(given, folders_only=False)}" + (f"; {fix}" if fix else "")
        )
    return given


def looks_like_path(value: str) -> bool:
    """Whether ``value`` can only be meant as a local path: it starts with ``/``, ``./``, ``../`` or
    ``~``, or has more than one ``/`` (a Hugging Face repo id is ``org/name``, a name has none)."""
    return value.startswith(("/", "./", "../", "~")) or value in (".", "..") or value.count("/") > 1


@dataclass(frozen=True)
class EndpointReply:
    """What a server answered to :func:`probe_endpoint`: the HTTP status and the body."""

    status: int
    body: bytes


def _why_no_answer(url: str, exc: BaseException, timeout: float) -> str:
    """What failed, in words that point at the fix."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    parts = urllib.parse.urlsplit(url)
    where = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    if isinstance(reason, ConnectionRefusedError) or getattr(reason, "errno", None) == errno.ECONNREFUSED:
        return f"connection refused: nothing listens at {where}; is the server running, on that port?"
    if isinstance(reason, socket.gaierror):
        return f"the host name {parts.hostname!r} does not resolve; check its spelling"
    if isinstance(reason, TimeoutError | socket.timeout):
        return (
            f"no answer within {timeout:g} s from {where}; is it the right address, is the server still "
            "loading its model, or does a firewall drop the connection?"
        )
    if isinstance(reason, ssl.SSLError):
        return f"TLS failed ({reason}); is the server http:// rather than https://?"
    return f"{type(reason).__name__}: {reason}"


def probe_endpoint(
    url: str,
    argument: str,
    *,
    headers: dict[str, str] | None = None,
    timeout: float = PROBE_TIMEOUT_S,
    start_hint: str = "",
) -> EndpointReply:
    """GET ``url`` once, within ``timeout`` seconds: the reply, whatever its HTTP status (the
    caller reads what the status means for its kind of server). No answer at all (refused, a name
    that does not resolve, a timeout, not a URL) is a :class:`PreflightError` naming the argument
    (``argument``: how the user gave the URL, e.g. ``--model_args base_url=http://...``) and what
    failed, followed by ``start_hint`` (how to start the server) when nothing listens."""
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise PreflightError(f"{argument}: {url!r} is not an http:// or https:// URL")
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return EndpointReply(response.status, response.read(1 << 20))
    except urllib.error.HTTPError as exc:
        return EndpointReply(exc.code, exc.read(1 << 16))
    except (urllib.error.URLError, OSError) as exc:
        why = _why_no_answer(url, exc, timeout)
        hint = f" {start_hint}" if start_hint and why.startswith("connection refused") else ""
        raise PreflightError(f"{argument}: GET {url} got no answer ({why}){hint}") from exc
