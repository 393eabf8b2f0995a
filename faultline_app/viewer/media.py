"""The media of one shown trial, written once into the site: frames, audio, waveform, text.

A :class:`Shown` is what a model received for a trial, regenerated from the records by the
benchmark's own renderer (the same code the task used when it ran). :class:`MediaWriter`
writes each trial's media once, under a folder named by a digest of the trial's key, the
installed faultline-eval version and :data:`MEDIA_FORMAT`, and stops writing (leaving the trial
listed without media) once the budget's megabytes are spent.

Speed (``--html`` costs little next to the report): the files are encoded on a thread pool
(PNG, JPEG and WAV encoding release the GIL) while the next trial renders; a file several
trials share (the clean frames under a text condition) is encoded once (:class:`EncodedFiles`);
a folder a previous site left complete (its ``shown.json``, written last) is reused without
rendering or writing anything, so writing a site again into the same folder rewrites pages only. Which trials get
media does not depend on the timing: the budget waits for the pending files' exact sizes
whenever their upper bound could cross it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile
from PIL import Image

from faultline_eval import __version__
from faultline_eval.core.media import SAMPLE_RATE
from sceval_plugin.contact_sheet import AUDIO_SIZE, render_waveform

THUMB_HEIGHT = 96
#: Bump when what is written for a trial changes (sizes, formats, the waveform): folders written
#: under another format or faultline-eval version are not reused.
MEDIA_FORMAT = 3
MANIFEST = "shown.json"
#: Trials whose files may be pending at once (bounds the memory their pictures hold).
WINDOW = 8


@dataclass
class Shown:
    """What a model was sent: labelled images in order, the audio clip (mono, 16 kHz), the text
    (the user turn; ``system``: the system prompt). A trial reused from an earlier site (its files
    are written) carries no images, and for its audio only the clip's length (a read-only array of
    zeros: the clean clip's length is the waveforms' time scale)."""

    images: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (caption, H x W x 3 uint8)
    audio: np.ndarray | None = None
    text: str = ""
    notes: list[str] = field(default_factory=list)  # e.g. "audio not shown (control)", the donor
    system: str = ""  # the system prompt sent with the text


@dataclass
class Written:
    """Site-relative paths of a trial's media files (``media/<key>/...``)."""

    images: list[tuple[str, str, str]]  # (caption, thumbnail, full size)
    audio: str | None
    waveform: str | None


class MediaWriteError(Exception):
    """A trial's files could not be written (not one of the errors a trial's rendering raises, so
    it is not shown as a trial whose media could not be regenerated)."""


@dataclass
class _Pending:
    key: str
    job: Future  # -> the bytes its files take
    bound: int  # an upper bound of those bytes


class EncodedFiles:
    """Encoded files by what they encode: a picture, clip or waveform that several trials share
    (the clean frames under a text or audio condition, the clean clip under a vision one) is
    encoded once and its bytes written again (the same bytes: encoding is deterministic). Shared by
    the pool's threads; past ``max_bytes`` held, further encodings are written but not kept."""

    def __init__(self, max_bytes: float = 64e6):
        self.max_bytes, self.bytes = max_bytes, 0
        self.files: dict[tuple, bytes] = {}
        self.lock = threading.Lock()

    def write(self, path: Path, key: tuple, encode: Callable[[io.BytesIO], None]) -> None:
        """Write to ``path`` the bytes ``encode(buffer)`` writes for content ``key``."""
        with self.lock:
            data = self.files.get(key)
        if data is None:
            buffer = io.BytesIO()
            encode(buffer)
            data = buffer.getvalue()
            with self.lock:
                if key not in self.files and self.bytes + len(data) <= self.max_bytes:
                    self.files[key] = data
                    self.bytes += len(data)
        path.write_bytes(data)


def _content(array: np.ndarray) -> tuple:
    """The key of an array's content: digest, shape and type."""
    array = np.ascontiguousarray(array)
    return hashlib.blake2b(memoryview(array).cast("B"), digest_size=16).digest(), array.shape, array.dtype.str


def _save_picture(image: np.ndarray, full: Path, thumb: Path | None, encoded: EncodedFiles) -> None:
    key = _content(image)
    picture = Image.fromarray(np.ascontiguousarray(image))
    # lossless; level 1 writes fast
    encoded.write(full, ("png", *key), lambda out: picture.save(out, format="PNG", compress_level=1))
    if thumb is not None:
        width = max(1, round(picture.width * THUMB_HEIGHT / picture.height))
        encoded.write(
            thumb,
            ("thumb", *key),
            lambda out: picture.resize((width, THUMB_HEIGHT), Image.Resampling.BOX).save(
                out, format="JPEG", quality=85
            ),
        )


def _write_trial(root: Path, shown: Shown, reference: int | None, manifest: dict, encoded: EncodedFiles) -> int:
    """Write one trial's files as ``manifest`` names them, then the manifest; returns their bytes.
    Runs on the pool: one job per trial, so the main thread renders while the pool encodes."""
    folder = root / manifest["folder"]
    if folder.exists():  # left incomplete (a killed run): written afresh
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for (_, image), (_, thumb, full) in zip(shown.images, manifest["images"]):
        _save_picture(image, root / full, root / thumb if thumb != full else None, encoded)
    if shown.audio is not None:
        samples = np.asarray(shown.audio, dtype=np.float32)
        key, scale = _content(samples), reference or len(samples)
        # 16-bit PCM: half the size of the float original, within 1/32768 of every sample sent
        encoded.write(
            root / manifest["audio"],
            ("wav", *key),
            lambda out: soundfile.write(out, samples, SAMPLE_RATE, subtype="PCM_16", format="WAV"),
        )
        encoded.write(
            root / manifest["waveform"],
            ("waveform", scale, *key),
            lambda out: render_waveform(samples, scale).save(out, format="PNG"),
        )
    (folder / f"{MANIFEST}.tmp").write_text(json.dumps(manifest), encoding="utf-8")
    (folder / f"{MANIFEST}.tmp").replace(folder / MANIFEST)  # last: the folder is complete
    return sum(p.stat().st_size for p in folder.iterdir())


def _light(shown: Shown) -> Shown:
    """``shown`` without its pixels and samples (kept per written trial, as a reused one is)."""
    audio = None if shown.audio is None else np.broadcast_to(np.float32(0), (len(shown.audio),))
    return Shown([], audio, shown.text, list(shown.notes), shown.system)


class MediaWriter:
    def __init__(self, root: Path, max_bytes: float, workers: int | None = None):
        self.root, self.max_bytes, self.bytes = root, max_bytes, 0
        self.written: dict[str, Written] = {}  # trial key -> its files, each trial written once
        self.reused = 0  # trials whose folder an earlier site left complete
        self.shown: dict[str, Shown] = {}  # trial key -> what it sent, without the pixels (see _light)
        self.pool = ThreadPoolExecutor(workers or min(4, os.cpu_count() or 1), thread_name_prefix="media")
        self.encoded = EncodedFiles()  # files several trials share, encoded once
        self.pending: list[_Pending] = []
        self.folders: set[str] = set()  # the media folders this site uses
        media = root / "media"
        self.existing = {p.name for p in media.iterdir()} if media.is_dir() else set()  # an earlier site's

    def folder_of(self, key: str) -> str:
        digest = hashlib.blake2b(f"{MEDIA_FORMAT}|{__version__}|{key}".encode(), digest_size=10).hexdigest()
        return f"media/{digest}"

    def write(
        self, key: str, make_shown: Callable[[], Shown], reference_length: int | None = None
    ) -> tuple[Shown, Written | None]:
        """Write the media of trial ``key`` (once); ``make_shown()`` regenerates them. Past the
        budget nothing is written (the text sent is still returned, written None);
        ``reference_length`` sets the waveform's time scale."""
        if key in self.written:  # asked again (a sample's clean media, and its clean condition): not rendered again
            return self.shown[key], self.written[key]
        folder = self.folder_of(key)
        reused = self._reuse(key, folder, reference_length)
        if reused is None and self.bytes + sum(p.bound for p in self.pending) >= self.max_bytes:
            self.settle()  # the budget needs the exact sizes now
        if self.bytes >= self.max_bytes:
            return (reused[0] if reused else make_shown()), None
        if reused is not None:
            shown, written = reused
            self.reused += 1
            self.bytes += sum(p.stat().st_size for p in (self.root / folder).iterdir())
        else:
            shown = make_shown()
            written = self._submit(key, folder, shown, reference_length)
        self.folders.add(folder)
        self.written[key] = written
        self.shown[key] = _light(shown)
        return shown, written

    def _reuse(self, key: str, folder: str, reference: int | None) -> tuple[Shown, Written] | None:
        """The trial as an earlier site wrote it into ``folder``, if complete and alike."""
        if folder.removeprefix("media/") not in self.existing:
            return None
        try:
            manifest = json.loads((self.root / folder / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        written = Written([tuple(i) for i in manifest["images"]], manifest["audio"], manifest["waveform"])
        files = [p for _, thumb, full in written.images for p in (thumb, full)] + [written.audio, written.waveform]
        if manifest.get("key") != key or manifest.get("reference") != reference:
            return None
        if not all((self.root / f).is_file() for f in files if f):
            return None
        length = manifest.get("audio_samples")
        audio = None if length is None else np.broadcast_to(np.float32(0), (int(length),))  # the length (see _light)
        return Shown([], audio, manifest["text"], manifest["notes"], manifest["system"]), written

    def _submit(self, key: str, folder: str, shown: Shown, reference: int | None) -> Written:
        images, bound = [], 4096
        for i, (caption, image) in enumerate(shown.images):
            full = thumb = f"{folder}/{i:03d}.png"
            if image.shape[0] > THUMB_HEIGHT:  # small images are their own thumbnail
                thumb = f"{folder}/{i:03d}_thumb.jpg"
            images.append((caption, thumb, full))
            bound += 2 * image.nbytes + 4096  # PNG of incompressible pixels, and a smaller thumbnail
        audio = waveform = None
        if shown.audio is not None:
            audio, waveform = f"{folder}/audio.wav", f"{folder}/waveform.png"
            bound += 2 * len(shown.audio) + 2 * 3 * AUDIO_SIZE[0] * AUDIO_SIZE[1] + 4096  # PCM; waveform pixels
        manifest = {
            "key": key,
            "folder": folder,
            "reference": reference,
            "images": images,
            "audio": audio,
            "waveform": waveform,
            "text": shown.text,
            "notes": list(shown.notes),
            "system": shown.system,
            "audio_samples": None if shown.audio is None else len(shown.audio),
        }
        self.pending.append(
            _Pending(key, self.pool.submit(_write_trial, self.root, shown, reference, manifest, self.encoded), bound)
        )
        while len(self.pending) > WINDOW or (self.pending and self.pending[0].job.done()):
            self._finish(self.pending.pop(0))
        return Written(images, audio, waveform)

    def _finish(self, pending: _Pending) -> None:
        try:
            self.bytes += pending.job.result()
        except Exception as exc:
            raise MediaWriteError(f"media of trial {pending.key!r} not written: {exc}") from exc

    def settle(self) -> None:
        """Wait for every pending file (their sizes count in :attr:`bytes` after)."""
        while self.pending:
            self._finish(self.pending.pop(0))

    def close(self) -> None:
        """Settle, stop the pool, and remove the media folders of earlier sites this one does not use."""
        self.settle()
        self.pool.shutdown()
        media = self.root / "media"
        for stale in (p for p in media.iterdir() if p.is_dir()) if media.is_dir() else ():
            if f"media/{stale.name}" not in self.folders and (stale / MANIFEST).is_file():
                shutil.rmtree(stale)
