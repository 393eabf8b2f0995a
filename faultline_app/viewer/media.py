"""The media of the shown trials, written into the site once per content: frames, audio, waveform.

A :class:`Shown` is what a model received for a trial, regenerated from the records by the
benchmark's own renderer (the same code the task used when it ran). :class:`MediaWriter` writes
its files into one flat content-addressed folder, ``media/<digest>.<ext>``: the digest is of the
content the model was sent (a frame's pixels, a clip's samples, with shape and type) and of what
the file holds (:data:`MEDIA_FORMAT`, the file's role). The encoders are deterministic, so
identical content gives identical bytes under one name, written once: a condition that sends the
clean frames or clip unchanged (a text condition, the untouched modality of a single one), the
same corruption reached by two conditions (a variant is a pure function of sample, operator,
severity and variant), and every model's trial of a condition share one file. Content that
differs never shares a name (a 128-bit digest).

What each file is (:class:`Written`: per trial, the display and exact-bytes paths):

* a frame: the **exact** file is a lossless PNG of the pixels sent. It is also what the page
  shows when the frame is no taller than :data:`INLINE_HEIGHT` (one file); a taller frame is
  shown as a JPEG at display height (:data:`THUMB_HEIGHT`), its PNG one click away.
* a clip: the page plays a 16-bit FLAC (every browser plays FLAC). When every sample sent is a
  multiple of 1/32768 (clean audio read from 16-bit files, muted or removed segments), that FLAC
  *is* the exact samples and is the only file; otherwise (a float corruption: distortion, noise)
  the exact samples are a 32-bit float WAV beside it. Plus the waveform on the clean clip's scale.

Speed: files are encoded on a thread pool (PNG, JPEG and FLAC encoding release the GIL) while
the next trial renders; a content already written (in this site, or by an earlier build into the
same folder, whose index names it) is not encoded again. A trial an earlier build recorded in ``media/index.json``
(key, faultline-eval version, what it sent and its files, all present) is reused without
rendering. Which trials get media does not depend on timing: the budget waits for the pending
files' exact sizes whenever their upper bound could cross it. Content already in the site costs
nothing, so a trial whose media are all written already is shown even past the budget.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import struct
import zlib
from collections import OrderedDict
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

#: The height of a frame on the page (pixels).
THUMB_HEIGHT = 96
#: A frame up to this height is shown as its lossless PNG (a thumbnail would save little).
INLINE_HEIGHT = 3 * THUMB_HEIGHT // 2
#: Bump when what a file holds changes (formats, sizes, the waveform): files and the index of
#: another format are not reused.
MEDIA_FORMAT = 4
FOLDER = "media"
#: The trials an earlier build wrote (reused without rendering): ``media/index.json.gz``.
INDEX = "index.json.gz"
#: The names this module gives its files: an earlier site's files not used any more are removed.
_OURS = re.compile(r"[0-9a-f]{32}\.(png|jpg|flac|wav)")
#: Files whose encoding may be pending at once (bounds the memory their content holds).
WINDOW = 64
#: 16-bit PCM: a sample ``k / PCM_SCALE`` is stored exactly as ``k``.
PCM_SCALE = 32768


@dataclass
class Shown:
    """What a model was sent: labelled images in order, the audio clip (mono, 16 kHz), the text
    (the user turn; ``system``: the system prompt). A trial reused from an earlier build (its files
    are written) carries no images, and for its audio only the clip's length (a read-only array of
    zeros: the clean clip's length is the waveforms' time scale)."""

    images: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (caption, H x W x 3 uint8)
    audio: np.ndarray | None = None
    text: str = ""
    notes: list[str] = field(default_factory=list)  # e.g. "audio not shown (control)", the donor
    system: str = ""  # the system prompt sent with the text


@dataclass
class Written:
    """Site-relative paths of a trial's media files (``media/<digest>.<ext>``): per image
    (caption, shown on the page, the exact pixels sent: the same path when the page shows the
    lossless file); the clip the page plays, the exact samples sent (the same path when the
    played file is exact), and the waveform."""

    images: list[tuple[str, str, str]]  # (caption, display, exact)
    audio: str | None
    waveform: str | None
    audio_exact: str | None = None


class MediaWriteError(Exception):
    """A trial's files could not be written (not one of the errors a trial's rendering raises, so
    it is not shown as a trial whose media could not be regenerated)."""


@dataclass
class _File:
    """A file to write: its site-relative path and how to encode it (run on the pool)."""

    path: str
    encode: Callable[[io.BytesIO], None]
    bound: int  # an upper bound of its bytes


def _digest(*parts: object) -> str:
    """A 128-bit hex digest of ``parts`` (SHA-256: hardware-accelerated, twice blake2b's speed here)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, (bytes, memoryview)) else repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _content(array: np.ndarray) -> str:
    """The digest of an array's content: its bytes, shape and type."""
    array = np.ascontiguousarray(array)
    return _digest(memoryview(array).cast("B"), array.shape, array.dtype.str)


def _pcm16(samples: np.ndarray) -> np.ndarray:
    """The clip as 16-bit integers: ``round(x * 32768)``, clipped."""
    return np.clip(np.rint(samples * np.float32(PCM_SCALE)), -PCM_SCALE, PCM_SCALE - 1).astype(np.int16)


def _is_pcm16(samples: np.ndarray) -> bool:
    """Whether :func:`_pcm16` holds every sample exactly (read back as float32, ``k / 32768`` is
    the sample sent)."""
    scaled = samples * np.float32(PCM_SCALE)  # a power of two: exact in float32
    inside = scaled.size == 0 or (-PCM_SCALE <= scaled.min() and scaled.max() <= PCM_SCALE - 1)
    return bool(inside and np.array_equal(np.rint(scaled), scaled))


def png_bytes(image: np.ndarray) -> bytes:
    """A lossless PNG of an ``H x W x 3`` uint8 image (anything else: Pillow's): each row
    filtered None, Sub or Up, whichever leaves the smallest residuals (PNG's own heuristic),
    then deflated with zlib's run-length strategy. About twice Pillow's speed at its fastest
    level on the demo's 160 x 120 frames (a noise frame 0.75 against 1.8 ms, the same size; the
    others 0.15 against 0.3 ms, up to a few hundred bytes more)."""
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        buffer = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(image)).save(buffer, format="PNG", compress_level=1)
        return buffer.getvalue()
    height, width, _ = image.shape
    rows = np.ascontiguousarray(image).reshape(height, width * 3)
    sub, up = rows.copy(), rows.copy()
    sub[:, 3:] -= rows[:, :-3]  # uint8 arithmetic wraps, as PNG's filters do
    up[1:] -= rows[:-1]
    filtered = np.stack([rows, sub, up])
    cost = np.minimum(filtered, 0 - filtered).sum(axis=2, dtype=np.int32)  # |residual| per filter and row
    best = cost.argmin(axis=0)
    raw = np.empty((height, width * 3 + 1), np.uint8)
    raw[:, 0] = best
    raw[:, 1:] = filtered[best, np.arange(height)]
    deflate = zlib.compressobj(1, zlib.DEFLATED, 15, 8, zlib.Z_RLE)
    data = deflate.compress(raw.tobytes()) + deflate.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def _png(image: np.ndarray) -> Callable[[io.BytesIO], None]:
    return lambda out: out.write(png_bytes(image))


def _thumbnail(image: np.ndarray) -> Callable[[io.BytesIO], None]:
    def encode(out: io.BytesIO) -> None:
        picture = Image.fromarray(np.ascontiguousarray(image))
        width = max(1, round(picture.width * THUMB_HEIGHT / picture.height))
        picture.resize((width, THUMB_HEIGHT), Image.Resampling.BOX).save(out, format="JPEG", quality=85)

    return encode


def _flac(samples: np.ndarray) -> Callable[[io.BytesIO], None]:
    return lambda out: soundfile.write(out, _pcm16(samples), SAMPLE_RATE, subtype="PCM_16", format="FLAC")


def _float_wav(samples: np.ndarray) -> Callable[[io.BytesIO], None]:
    return lambda out: soundfile.write(out, samples, SAMPLE_RATE, subtype="FLOAT", format="WAV")


def _waveform(samples: np.ndarray, scale: int) -> Callable[[io.BytesIO], None]:
    return lambda out: out.write(png_bytes(np.asarray(render_waveform(samples, scale))))


def plan(shown: Shown, reference: int | None, contents: Contents | None = None) -> tuple[Written, list[_File]]:
    """The paths of a trial's media and every file they need (some may exist already): pure, so
    one content always gets one path. ``contents``: what is known of arrays seen before."""
    contents = contents or Contents()
    files: list[_File] = []
    images = []
    for caption, image in shown.images:
        content_of = contents.digest(image)
        exact = f"{FOLDER}/{_digest(MEDIA_FORMAT, 'png', content_of)}.png"
        files.append(_File(exact, _png(image), 2 * image.nbytes + 4096))  # PNG of incompressible pixels
        display = exact
        if image.shape[0] > INLINE_HEIGHT:
            display = f"{FOLDER}/{_digest(MEDIA_FORMAT, 'jpg', THUMB_HEIGHT, content_of)}.jpg"
            files.append(
                _File(display, _thumbnail(image), image.nbytes // max(1, image.shape[0]) * THUMB_HEIGHT + 4096)
            )
        images.append((caption, display, exact))
    audio = waveform = audio_exact = None
    if shown.audio is not None:
        samples = np.asarray(shown.audio, dtype=np.float32)
        content_of, scale = contents.digest(samples), reference or len(samples)
        # named by the samples sent: two float clips that round alike (a rare case) get a FLAC each
        audio = f"{FOLDER}/{_digest(MEDIA_FORMAT, 'flac', content_of)}.flac"
        files.append(_File(audio, _flac(samples), 2 * len(samples) + 4096))
        audio_exact = audio
        if not contents.is_pcm16(samples, content_of):
            audio_exact = f"{FOLDER}/{_digest(MEDIA_FORMAT, 'wav', content_of)}.wav"
            files.append(_File(audio_exact, _float_wav(samples), 4 * len(samples) + 4096))
        waveform = f"{FOLDER}/{_digest(MEDIA_FORMAT, 'waveform', scale, content_of)}.png"
        files.append(_File(waveform, _waveform(samples, scale), 3 * AUDIO_SIZE[0] * AUDIO_SIZE[1] + 4096))
    return Written(images, audio, waveform, audio_exact), files


def _write_files(root: str, files: list[_File]) -> dict[str, int]:
    """Encode each file and write it; returns their bytes. Runs on the pool, one job per trial.
    A later build trusts only the files the index of a finished build names, so a file a killed
    build left half-written is written again, not shown."""
    sizes = {}
    for file in files:
        buffer = io.BytesIO()
        file.encode(buffer)
        data = buffer.getbuffer()
        with open(os.path.join(root, file.path), "wb") as out:
            out.write(data)
        sizes[file.path] = len(data)
    return sizes


class Contents:
    """What is known of arrays seen before: :func:`_content` remembered for read-only ones (a
    decoded clean clip, a render the viewer shares between trials) by their memory (such an array
    cannot change, and it is held here so that its memory is not reused by another while
    remembered); :func:`_is_pcm16` by content."""

    def __init__(self, size: int = 256):
        self.size, self.known = size, OrderedDict()
        self.pcm16: dict[str, bool] = {}

    def digest(self, array: np.ndarray) -> str:
        if array.flags.writeable:
            return _content(array)
        interface = array.__array_interface__
        key = (interface["data"][0], array.shape, interface["strides"], array.dtype.str)
        if key in self.known:
            self.known.move_to_end(key)
            return self.known[key][1]
        digest = _content(array)
        self.known[key] = (array, digest)
        if len(self.known) > self.size:
            self.known.popitem(last=False)
        return digest

    def is_pcm16(self, samples: np.ndarray, digest: str) -> bool:
        if digest not in self.pcm16:
            self.pcm16[digest] = _is_pcm16(samples)
        return self.pcm16[digest]


def _light(shown: Shown) -> Shown:
    """``shown`` without its pixels and samples (kept per written trial, as a reused one is)."""
    audio = None if shown.audio is None else np.broadcast_to(np.float32(0), (len(shown.audio),))
    return Shown([], audio, shown.text, list(shown.notes), shown.system)


def _manifest_files(manifest: dict) -> set[str]:
    return files_of(
        Written(
            [tuple(i) for i in manifest["images"]], manifest["audio"], manifest["waveform"], manifest["audio_exact"]
        )
    )


def files_of(written: Written) -> set[str]:
    """Every file a trial's media use."""
    return {p for _, display, exact in written.images for p in (display, exact)} | {
        p for p in (written.audio, written.audio_exact, written.waveform) if p
    }


class MediaWriter:
    """Writes the media of the trials :meth:`write` is given into ``root/media/``, each content
    once, up to ``max_bytes`` (the bytes of the files the site uses, each counted once)."""

    def __init__(self, root: Path, max_bytes: float, workers: int | None = None):
        self.root, self.max_bytes, self.bytes = Path(root), max_bytes, 0
        self.written: dict[str, Written] = {}  # trial key -> its files, each trial written once
        self.shown: dict[str, Shown] = {}  # trial key -> what it sent, without the pixels (see _light)
        self.reused = 0  # trials an earlier build recorded, not rendered again
        self.sizes: dict[str, int] = {}  # file -> its bytes, every file this site uses (written or found)
        self.pending: dict[str, tuple[Future, int]] = {}  # file -> (its job, an upper bound of its bytes)
        self.manifests: dict[str, dict] = {}  # trial key -> its index entry
        self.contents = Contents()
        self.pool = ThreadPoolExecutor(workers or min(4, os.cpu_count() or 1), thread_name_prefix="media")
        self.folder = self.root / FOLDER
        self.folder.mkdir(parents=True, exist_ok=True)
        # an earlier build's trials and files: those its index names (complete when it was written) and still there
        earlier, present = self._read_index(), {p.name for p in self.folder.iterdir()}
        self.earlier = {k: m for k, m in earlier.items() if all(Path(f).name in present for f in _manifest_files(m))}
        if len(self.earlier) < len(earlier):  # a file it named is missing: rewritten, so not named meanwhile
            self._write_index(self.earlier)
        self.existing = {Path(f).name for m in self.earlier.values() for f in _manifest_files(m)}

    def _read_index(self) -> dict:
        try:
            index = json.loads(gzip.decompress((self.folder / INDEX).read_bytes()))
        except (OSError, ValueError, EOFError):
            return {}
        if index.get("format") != MEDIA_FORMAT or index.get("version") != __version__:
            return {}  # another renderer or encoding may have made them: rendered again
        return index.get("trials") or {}

    def write(
        self, key: str, make_shown: Callable[[], Shown], reference_length: int | None = None
    ) -> tuple[Shown, Written | None]:
        """Write the media of trial ``key`` (once); ``make_shown()`` regenerates them.
        ``reference_length`` sets the waveform's time scale. Media the site does not hold yet are
        written while within the budget; past it the trial is returned without them (written
        None), with the text sent all the same."""
        if key in self.written:  # asked again (a sample's clean media, and its clean condition): not rendered again
            return self.shown[key], self.written[key]
        reused = self._reuse(key, reference_length)
        if reused is not None:
            shown, written = reused
            manifest = self.earlier[key]
        else:
            shown = make_shown()
            written, files = plan(shown, reference_length, self.contents)
            new = list({f.path: f for f in files if f.path not in self.sizes and f.path not in self.pending}.values())
            if new and self.bytes + self._pending_bound() >= self.max_bytes:
                self.settle()  # the budget needs the exact sizes now
            if new and self.bytes >= self.max_bytes:
                return shown, None
            self._submit(new)
            manifest = self._manifest(shown, written, reference_length)
        self.written[key] = written
        self.shown[key] = _light(shown)
        self.manifests[key] = manifest
        return shown, written

    def _manifest(self, shown: Shown, written: Written, reference: int | None) -> dict:
        return {
            "reference": reference,
            "images": written.images,
            "audio": written.audio,
            "audio_exact": written.audio_exact,
            "waveform": written.waveform,
            "text": shown.text,
            "notes": list(shown.notes),
            "system": shown.system,
            "audio_samples": None if shown.audio is None else len(shown.audio),
        }

    def _write_index(self, trials: dict[str, dict]) -> None:
        index = {"format": MEDIA_FORMAT, "version": __version__, "trials": trials}
        data = gzip.compress(json.dumps(index).encode(), compresslevel=6, mtime=0)
        final = self.folder / INDEX
        if final.is_file() and final.read_bytes() == data:
            return  # a rebuild that changed nothing rewrites nothing (mtimes kept for rsync and the like)
        partial = self.folder / f".{INDEX}.tmp"
        partial.write_bytes(data)
        partial.replace(final)

    def _reuse(self, key: str, reference: int | None) -> tuple[Shown, Written] | None:
        """The trial as an earlier build recorded it, if alike and its files are all there (they
        count in the budget like new ones; within it, as the earlier build was)."""
        manifest = self.earlier.get(key)
        if manifest is None or manifest.get("reference") != reference:
            return None
        written = Written(
            [tuple(i) for i in manifest["images"]], manifest["audio"], manifest["waveform"], manifest["audio_exact"]
        )
        files = files_of(written)
        if not all(Path(f).name in self.existing for f in files):
            return None
        added = [f for f in files if f not in self.sizes and f not in self.pending]
        if added and self.bytes + self._pending_bound() >= self.max_bytes:
            self.settle()
        if added and self.bytes >= self.max_bytes:
            return None  # rendered for its text, and shown without media like a new one
        for f in added:
            self.sizes[f] = (self.root / f).stat().st_size
            self.bytes += self.sizes[f]
        self.reused += 1
        length = manifest.get("audio_samples")
        audio = None if length is None else np.broadcast_to(np.float32(0), (int(length),))  # the length (see _light)
        return Shown([], audio, manifest["text"], manifest["notes"], manifest["system"]), written

    def _pending_bound(self) -> int:
        return sum(bound for _, bound in self.pending.values())

    def _submit(self, files: list[_File]) -> None:
        """Write ``files`` on the pool (one job); a file an earlier build wrote is kept as it is."""
        for file in [f for f in files if Path(f.path).name in self.existing]:
            self.sizes[file.path] = (self.root / file.path).stat().st_size
            self.bytes += self.sizes[file.path]
        files = [f for f in files if f.path not in self.sizes]
        if files:
            job = self.pool.submit(_write_files, str(self.root), files)
            self.pending.update((f.path, (job, f.bound)) for f in files)
        while len(self.pending) > WINDOW or (self.pending and next(iter(self.pending.values()))[0].done()):
            self._finish(next(iter(self.pending.values()))[0])

    def _finish(self, job: Future) -> None:
        """Wait for ``job``; its files' sizes count in :attr:`bytes`."""
        try:
            sizes = job.result()
        except Exception as exc:
            raise MediaWriteError(f"media files not written: {exc}") from exc
        for path, size in sizes.items():
            if self.pending.pop(path, None) is not None:
                self.sizes[path] = size
                self.bytes += size

    def settle(self) -> None:
        """Wait for every pending file (their sizes count in :attr:`bytes` after)."""
        while self.pending:
            self._finish(next(iter(self.pending.values()))[0])

    def close(self) -> None:
        """Settle, stop the pool, record the trials written (for the next build into this folder),
        and remove what earlier builds wrote that this site does not use."""
        self.settle()
        self.pool.shutdown()
        self._write_index(self.manifests)
        used = {Path(f).name for f in self.sizes}
        for path in self.folder.iterdir():
            if path.is_dir() and (path / "shown.json").is_file():  # a trial folder of the previous format
                shutil.rmtree(path)
            elif path.is_file() and path.name not in used and _OURS.fullmatch(path.name):
                path.unlink()
