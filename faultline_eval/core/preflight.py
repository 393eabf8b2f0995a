"""Checks that run before the first request: a bad input is refused while refusing is cheap.

Every command checks what it can before lmms-eval indexes its tasks, a model loads or a request is
sent: the folders it will write can be written, the folders and files it will read exist and hold
what it reads. A refusal is one :class:`PreflightError` whose message names the argument, the path,
what is wrong and the fix; the commands print it as ``<command>: error: <message>`` and exit
non-zero: 1 for ``faultline-eval`` (as for its other refused runs), 2 for ``sceval``, ``c3po`` and
``faultline`` (argparse's status for a bad argument, as their other argument errors).

    check_writable_folder("out/", "--output_path")      # creates out/, writes and removes a file
    check_existing_folder("out/report", "--sceval-report", holds="report.json")
    check_existing_path("./ckpt", "--model_args pretrained", kind="file_or_folder")
    probe_endpoint("http://127.0.0.1:8000/v1/models", "base_url")  # answers, or the hint that fits
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
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
    # the path arguments of the sceval, c3po and faultline commands (block below)
    "PathRule",
    "FILE_TO_WRITE",
    "FOLDER_TO_WRITE",
    "INPUT_FILE",
    "ITEMS_SOURCE",
    "REPORT_FOLDER",
    "RUN_FOLDER",
    "argument_name",
    "check_path",
    "check_path_arguments",
    "path_rules",
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


def check_existing_folder(
    path: str | os.PathLike[str], argument: str, *, holds: str | None = None, what: str | None = None
) -> Path:
    """``path`` as an existing folder, holding a file matching the glob ``holds`` (described as
    ``what``) when given. Raises :class:`PreflightError` naming the argument, with the close names
    beside it (a typo's intended folder). ``~`` is expanded."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        state = "is a file, not a folder" if folder.exists() else "does not exist"
        raise PreflightError(f"{argument} {str(path)!r} {state}{_close_names(folder)}")
    if holds is not None and next(folder.glob(holds), None) is None:
        described = f"{what} ({holds})" if what else holds
        raise PreflightError(f"{argument} {str(path)!r} holds no {described}; is it the right folder?")
    return folder


# --- The path arguments of the sceval, c3po and faultline commands ---------------------------------------
# Each command declares what a path-like argument must be where it adds the argument
# (``path_rules(parser.add_argument(...), PathRule(...))``); once the arguments are parsed,
# :func:`check_path_arguments` runs every rule of the chosen subcommand before its function runs:
# one pass over the parsed arguments instead of a check in each command. These commands run it
# through :func:`faultline_eval.core.run_status.run_command`, so a refusal is their other errors'
# ``<command>: error: ...`` and exit status 2 (docs/reference/records.md).


@dataclass(frozen=True)
class PathRule:
    """What a path argument must be (:func:`check_path`). ``kind``:

    * ``folder_to_write``: a folder this process can write (created when missing);
    * ``file_to_write``: a file (not a folder) whose folder this process can write (created when
      missing); ``output_to_write``: a file or a folder whose folder this process can write;
    * ``folder``: an existing folder; ``file``: an existing, non-empty file; ``file_or_folder``;
    * ``source``: one of ``names`` (``demo``) or a ``prefixes`` spec (``hf:...``) as it is,
      else an existing file or folder.

    ``holds``: a glob a folder must match (``report.json``, ``**/*_samples_*.jsonl``), ``what``
    says what that is in the refusal. ``only_with`` / ``unless``: the rule applies only when that
    other argument (a ``dest``) is set / not set (``tasks FOLDER --write`` writes the folder)."""

    kind: str
    holds: str | None = None
    what: str | None = None
    names: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    only_with: str | None = None
    unless: str | None = None

    def fix(self) -> str:
        """What to give instead, for a refusal that has no close name to suggest."""
        want = {"file": "an existing file", "folder": "an existing folder"}.get(self.kind, "an existing file or folder")
        named = [repr(n) for n in self.names] + [f"'{p}...'" for p in self.prefixes]
        return f"give {', '.join(named + [want])}" + (f" holding the {self.what}" if self.what else "")

    def applies(self, args: argparse.Namespace) -> bool:
        return (self.only_with is None or bool(getattr(args, self.only_with, None))) and (
            self.unless is None or not getattr(args, self.unless, None)
        )


#: The attribute of an :class:`argparse.Action` holding its rules.
_RULES = "preflight_path_rules"


def path_rules(action: argparse.Action, *rules: PathRule) -> argparse.Action:
    """Declare what ``action``'s value must be; returns ``action`` (wrap ``add_argument``)."""
    setattr(action, _RULES, rules)
    return action


def check_existing_path(
    path: str | os.PathLike[str],
    argument: str,
    *,
    kind: str = "file",
    holds: str | None = None,
    what: str | None = None,
    fix: str = "",
) -> Path:
    """``path`` (``~`` expanded) as an existing ``file`` (not empty), ``folder`` or
    ``file_or_folder``; a folder must match the glob ``holds`` when given. The refusal names the
    argument, what is wrong and the close names beside it (a typo's intended file), then ``fix``."""
    found = Path(path).expanduser()
    if kind == "folder" or (kind == "file_or_folder" and found.is_dir()):
        return check_existing_folder(path, argument, holds=holds, what=what)
    if not found.exists():
        raise PreflightError(
            f"{argument} {str(path)!r} does not exist{_close_names(found)}" + (f"; {fix}" if fix else "")
        )
    if found.is_dir() and kind == "file":
        raise PreflightError(f"{argument} {str(path)!r} is a folder; give the file")
    if found.stat().st_size == 0:
        raise PreflightError(f"{argument} {str(path)!r} is empty; give the file that holds the data")
    return found


def _close_names(missing: Path) -> str:
    """``"; did you mean a/b, a/c?"`` for the names beside ``missing`` that look like it, or ``""``."""
    parent = missing.parent
    close = close_matches(missing.name, [p.name for p in parent.iterdir()]) if parent.is_dir() else []
    return f"; did you mean {', '.join(str(parent / c) for c in close)}?" if close else ""


def check_path(value: str | os.PathLike[str], argument: str, rule: PathRule) -> None:
    """Refuse ``value`` of ``argument`` unless it is what ``rule`` says (:class:`PreflightError`)."""
    if rule.kind == "folder_to_write":
        check_writable_folder(value, argument)
    elif rule.kind in ("file_to_write", "output_to_write"):
        target = Path(value)
        if target.is_dir() and rule.kind == "file_to_write":
            raise PreflightError(f"{argument} {str(value)!r} is a folder; give a file name")
        check_writable_folder(target.parent, f"{argument}'s folder")
    elif rule.kind in ("folder", "file", "file_or_folder", "source"):
        if str(value) in rule.names or str(value).startswith(rule.prefixes):
            return  # a named source (demo, hf:...): its loader checks it
        kind = "file_or_folder" if rule.kind == "source" else rule.kind
        try:
            check_existing_path(value, argument, kind=kind, holds=rule.holds, what=rule.what)
        except PreflightError as exc:
            if "did you mean" in str(exc) or "holds no" in str(exc):
                raise
            raise PreflightError(f"{exc}; {rule.fix()}") from None
    else:
        raise ValueError(f"PathRule kind {rule.kind!r} is not one of the kinds check_path knows")


def _chosen_actions(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Iterator[argparse.Action]:
    """The actions of ``parser`` and of each subcommand ``args`` chose, outermost first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(str(getattr(args, action.dest, None)))
            if chosen is not None:
                yield from _chosen_actions(chosen, args)
        else:
            yield action


def argument_name(action: argparse.Action) -> str:
    """How the command line spells an argument: its long option, else its metavar or name."""
    if action.option_strings:
        return max(action.option_strings, key=len)
    return str(action.metavar or action.dest.upper())


def check_path_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Run every :class:`PathRule` declared on the arguments of the chosen subcommand over the
    parsed ``args`` (an argument not given is not checked): the inputs first, then the outputs,
    so a refused input leaves no output folder made. Raises :class:`PreflightError`."""
    checks = [
        (rule, value, argument_name(action))
        for action in _chosen_actions(parser, args)
        for rule in getattr(action, _RULES, ())
        if rule.applies(args)
        for value in _values(getattr(args, action.dest, None))
    ]
    for rule, value, argument in sorted(checks, key=lambda check: check[0].kind.endswith("_to_write")):
        check_path(value, argument, rule)


def _values(value: object) -> list[str | os.PathLike[str]]:
    """The paths an argument holds: none, one, or each of a list (``nargs``)."""
    values = value if isinstance(value, (list, tuple)) else [value]
    return [v for v in values if isinstance(v, (str, os.PathLike)) and str(v) != ""]


#: The rules most commands share.
FOLDER_TO_WRITE = PathRule("folder_to_write")
FILE_TO_WRITE = PathRule("file_to_write")
INPUT_FILE = PathRule("file")
#: An lmms-eval ``--output_path`` folder to read (or one per-sample log).
RUN_FOLDER = PathRule("file_or_folder", holds="**/*_samples_*.jsonl", what="lmms-eval per-sample logs")
#: An ``sceval report`` / ``c3po report`` folder.
REPORT_FOLDER = PathRule("folder", holds="report.json", what="report")
#: A benchmark's items: ``demo``, ``hf:...``, ``lmms:...``, a folder with items.jsonl/.parquet or a table file.
ITEMS_SOURCE = PathRule(
    "source", holds="items.*", what="items.jsonl or items.parquet", names=("demo",), prefixes=("hf:", "lmms:")
)


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
