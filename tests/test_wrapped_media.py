"""Media of wrapped lmms-eval tasks (issue 27, design §3/§5): corrupt_media by item type, videos
re-encoded losslessly on the SCEval frame grid and read back by lmms-eval's own reader, the
file cache, errors that name the doc, and the same bytes from two processes. ~10 s."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
import threading
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import soundfile
import soxr
from lmms_eval.models.model_utils.load_video import read_video
from PIL import Image

from faultline_app.sceval_cli import main as sceval_main
from faultline_eval.core import decode_cache, media
from faultline_eval.core.media_processing import decode_audio_track, video_duration, write_clip
from faultline_eval.tasks import wrapped_media
from faultline_eval.tasks.wrapped_media import FrameGrid, MediaCorruption, WrappedMediaError, corrupt_media
from sceval_plugin import operators

WHERE = "worldsense__single_noise_v50__var1/doc 7"
SECONDS, SOURCE_FPS = 3, 10


def vision_op(name: str, severity: int, key: str = WHERE):
    return functools.partial(operators.apply, name, severity=severity, variant=1, key=key)


def audio_op(name: str, severity: int, key: str = WHERE):
    """``MediaCorruption.audio``: (samples, rate); SCEval's audio operators need no rate."""

    def op(wave: np.ndarray, rate: int) -> np.ndarray:
        return operators.apply(name, wave, severity=severity, variant=0, key=key)

    return op


NOISE = MediaCorruption(vision_op("noise", 50), audio_op("distortion", 50), identity="noise+distortion/50/1")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    decode_cache.clear_memory()
    yield tmp_path / "cache"
    decode_cache.clear_memory()


def make_clip(path: Path, seconds: int = SECONDS, audio: bool = True) -> Path:
    """A source as the local task copies have them: H.264 yuv420p + AAC, a square moving over stripes."""
    height, width = 48, 64
    stripes = np.broadcast_to((np.arange(width) * 4 % 256).astype(np.uint8)[None, :, None], (height, width, 3))
    frames = []
    for i in range(seconds * SOURCE_FPS):
        frame = stripes.copy()
        frame[10:26, 2 * i % 48 : 2 * i % 48 + 16] = (200, 30, 90)
        frames.append(frame)
    tone = (0.4 * np.sin(2 * np.pi * 330 * np.arange(seconds * media.SAMPLE_RATE) / media.SAMPLE_RATE)).astype(
        np.float32
    )
    return write_clip(path, frames, Fraction(SOURCE_FPS), tone if audio else None)


def test_write_video_lossless_round_trips_frames_and_audio(tmp_path):
    rng = np.random.default_rng(3)
    frames = rng.integers(0, 256, size=(5, 37, 51, 3), dtype=np.uint8)  # odd sides: RGB needs no even sizes
    wave = rng.uniform(-1, 1, size=40_000).astype(np.float32)
    path = media.write_video_lossless(tmp_path / "out.mp4", frames, 2.5, wave)
    assert np.array_equal(read_video(str(path), num_frm=5), frames)  # lmms-eval's reader (PyAV), bit for bit
    assert video_duration(path) == pytest.approx(5 / 2.5)
    back = decode_audio_track(path)
    assert back is not None and back.shape == wave.shape
    assert np.abs(back - wave).max() <= 1 / 32768  # PCM s16: rounded to 1/32768, nothing else
    assert os.listdir(tmp_path) == ["out.mp4"]  # the atomic write left no temporary
    silent = media.write_video_lossless(tmp_path / "silent.mp4", frames, 1.0, None)
    assert decode_audio_track(silent) is None


def test_resample_audio_is_read_audios_resampler(tmp_path):
    wave = np.sin(np.linspace(0, 300, 44_100)).astype(np.float32)
    soundfile.write(tmp_path / "a.wav", wave, 44_100, subtype="FLOAT")
    read, rate, notes = media.read_audio(tmp_path / "a.wav")
    assert rate == media.SAMPLE_RATE and notes == ["a.wav: resampled 44100 Hz to 16000 Hz"]
    assert np.array_equal(read, media.resample_audio(wave, 44_100))
    assert np.array_equal(read, soxr.resample(wave, 44_100, 16_000).astype(np.float32))  # read_audio's bytes before
    assert media.resample_audio(read, media.SAMPLE_RATE) is not None and len(read) == media.SAMPLE_RATE


@pytest.mark.parametrize(
    ("grid", "frames", "duration"),
    [(FrameGrid(), 3, 3.0), (FrameGrid(fps=2, max_frames=4), 4, 3.0)],  # 1 fps grid; uniform over a longer clip
    ids=["1fps", "uniform"],
)
def test_video_path_is_corrupted_on_the_grid_and_read_back_bit_exact(cache, tmp_path, grid, frames, duration):
    source = make_clip(tmp_path / "clip.mp4")
    [out] = corrupt_media([str(source)], NOISE, where=WHERE, grid=grid)
    assert out.endswith(".mp4") and Path(out).parent.parent == cache / "wrapped_media"
    on_grid = media.read_video_frames(source, fps=grid.fps, max_frames=grid.max_frames)
    expected = operators.apply("noise", on_grid.frames, severity=50, variant=1, key=WHERE)
    assert len(on_grid.frames) == frames and not np.array_equal(expected, on_grid.frames)
    assert np.array_equal(read_video(out, num_frm=frames), expected)  # what lmms-eval's models decode
    assert np.array_equal(read_video(out, num_frm=64), expected)  # asking for more gives the grid's frames
    assert video_duration(Path(out)) == pytest.approx(duration)
    track, source_track = decode_audio_track(Path(out)), decode_audio_track(source)
    assert track is not None and source_track is not None and track.shape == source_track.shape
    distorted = operators.apply("distortion", source_track, severity=50, variant=0, key=WHERE, sample_rate=16_000)
    assert np.abs(track - np.clip(distorted, -1, 1)).max() <= 1 / 32768
    assert not np.allclose(track, source_track, atol=1e-2)


def test_by_default_a_video_keeps_every_source_frame_at_its_rate_and_size(cache, tmp_path):
    """frames=source (issue 36): a model sampling N frames itself gets the frames it would take
    from the source, corrupted; under SCEval's grid it gets the grid's 3 of these 30."""
    import av

    source = make_clip(tmp_path / "clip.mp4")
    [out] = corrupt_media([str(source)], NOISE, where=WHERE)
    every = read_video(str(source), num_frm=10_000)
    assert len(every) == SECONDS * SOURCE_FPS
    assert np.array_equal(
        read_video(out, num_frm=10_000), operators.apply("noise", every, severity=50, variant=1, key=WHERE)
    )
    with av.open(out) as written, av.open(str(source)) as original:
        got, want = written.streams.video[0], original.streams.video[0]
        assert (got.average_rate, got.frames, got.width, got.height) == (
            want.average_rate,
            want.frames,
            want.width,
            want.height,
        )
    clean = MediaCorruption(None, None, identity="unchanged")
    [faithful] = corrupt_media([str(source)], clean, where=WHERE)
    [grid] = corrupt_media([str(source)], clean, where=WHERE, grid=FrameGrid())
    for count in (1, 4, 8, 16):  # lmms-eval's own sampler picks the same frames as from the source
        assert np.array_equal(read_video(faithful, num_frm=count), read_video(str(source), num_frm=count))
    assert len(read_video(grid, num_frm=8)) == SECONDS  # the grid: 1 frame/s


def test_a_source_clip_over_the_memory_bound_is_refused_naming_the_setting(cache, tmp_path, monkeypatch):
    source = make_clip(tmp_path / "clip.mp4")  # 30 frames of 48x64x3: 0.28 MB decoded
    monkeypatch.setenv("FAULTLINE_MAX_SOURCE_VIDEO_MB", "0.1")
    with pytest.raises(WrappedMediaError, match=r"FAULTLINE_MAX_SOURCE_VIDEO_MB.*--frames sceval_grid") as raised:
        corrupt_media([str(source)], NOISE, where=WHERE)
    assert str(raised.value).startswith(WHERE) and "clip.mp4" in str(raised.value)
    [on_grid] = corrupt_media([str(source)], NOISE, where=WHERE, grid=FrameGrid())  # the grid is not bounded by it
    assert len(read_video(on_grid, num_frm=64)) == SECONDS


def test_identity_corruption_keeps_pixels_and_audio(cache, tmp_path):
    source = make_clip(tmp_path / "clip.mp4")
    identity = MediaCorruption(vision_op("noise", 0), audio_op("distortion", 0), identity="clean")
    image = Image.fromarray(np.arange(48 * 64 * 3, dtype=np.uint32).reshape(48, 64, 3).astype(np.uint8))
    out_video, out_image, out_frames = corrupt_media([str(source), image, [image, image]], identity, where=WHERE)
    assert np.array_equal(read_video(out_video, num_frm=8), read_video(str(source), num_frm=8))
    track, source_track = decode_audio_track(Path(out_video)), decode_audio_track(source)
    assert track is not None and source_track is not None
    assert np.abs(track - source_track).max() <= 1 / 32768
    assert np.array_equal(np.asarray(out_image), np.asarray(image))
    assert all(np.array_equal(np.asarray(frame), np.asarray(image)) for frame in out_frames)


def test_a_modality_left_alone_keeps_its_items_and_audio_but_video_is_reencoded(cache, tmp_path):
    """Paired: clean gives every condition's form (a video re-encoded, faithfully: the source's
    frames); audio is the base's own (issue 36), or SCEval's 16 kHz mono under the grid."""
    source = make_clip(tmp_path / "clip.mp4")
    image = Image.new("RGB", (8, 6), (10, 20, 30))
    image_file = tmp_path / "still.jpg"
    image.save(image_file)
    stereo = np.stack([np.linspace(-0.5, 0.5, 22_050), np.zeros(22_050)], axis=1).astype(np.float32)
    clean = MediaCorruption(None, None, identity="clean")
    items = [image, [image], str(image_file), {"array": stereo, "sampling_rate": 22_050, "path": "x.wav"}, str(source)]
    got = corrupt_media(items, clean, where=WHERE)
    assert got[0] is image and got[1][0] is image and got[2] == str(image_file)
    assert set(got[3]) == {"type", "array", "sampling_rate"} and got[3]["type"] == "audio"  # no path of the clean file
    assert got[3]["sampling_rate"] == 22_050 and got[3]["array"] is stereo
    assert got[4] != str(source) and np.array_equal(read_video(got[4]), read_video(str(source)))
    [on_grid] = corrupt_media(items[3:4], clean, where=WHERE, grid=FrameGrid())
    assert on_grid["sampling_rate"] == 16_000
    assert np.array_equal(on_grid["array"], media.resample_audio(stereo.mean(axis=1), 22_050))


def changed_run(before: np.ndarray, after: np.ndarray) -> tuple[int, int]:
    """(start, stop) of the one contiguous run of samples that differ (asserted to be one run)."""
    where = np.flatnonzero(before != after)
    assert where.size and np.array_equal(where, np.arange(where[0], where[-1] + 1))
    return int(where[0]), int(where[-1]) + 1


@pytest.mark.parametrize("layout", ["mono", "samples_channels", "channels_samples"])
def test_audio_dicts_keep_their_rate_and_channels(cache, layout):
    """Issue 36: a 44.1 kHz dict stays 44.1 kHz, stereo stays stereo in its own layout; clean is
    the base's samples bit for bit; a mute differs only in its segment, the same in every channel."""
    n, rate = 44_100, 44_100
    rng = np.random.default_rng(1)
    left = rng.uniform(-0.5, 0.5, n).astype(np.float32).astype(np.float64)  # float64 (datasets<4), float32-exact
    samples = {
        "mono": left,
        "samples_channels": np.stack([left, -left], axis=1),
        "channels_samples": np.stack([left, -left], axis=0),
    }[layout]
    item = {"array": samples, "sampling_rate": rate}
    [clean] = corrupt_media([item], MediaCorruption(None, None, identity="unchanged"), where=WHERE)
    assert clean["sampling_rate"] == rate and clean["array"] is samples
    mute = MediaCorruption(None, audio_op("mute", 30), identity="mute/30")
    [muted] = corrupt_media([item], mute, where=WHERE)
    got = muted["array"]
    assert muted["sampling_rate"] == rate and got.shape == samples.shape and got.dtype == samples.dtype
    channels = [got] if got.ndim == 1 else list(got if layout == "channels_samples" else got.T)
    sources = [samples] if samples.ndim == 1 else list(samples if layout == "channels_samples" else samples.T)
    expected = operators.apply("mute", left.astype(np.float32), severity=30, variant=0, key=WHERE)
    start, stop = changed_run(left.astype(np.float32), expected)
    assert stop - start == pytest.approx(0.3 * n, abs=1)
    for channel, source in zip(channels, sources, strict=True):
        assert changed_run(source, channel) == (start, stop)  # the same segment in every channel
        assert not channel[start:stop].any()
        keep = np.r_[0:start, stop:n]
        assert np.array_equal(channel[keep], source[keep])
    pcm = {"array": np.round(left * 32767).astype(np.int16), "sampling_rate": rate}  # integer samples stay so
    [muted_pcm] = corrupt_media([pcm], mute, where=WHERE)
    assert muted_pcm["array"].dtype == np.int16 and changed_run(pcm["array"], muted_pcm["array"])[1] <= stop
    pcm = {"array": np.round(left * 32767).astype(np.int16), "sampling_rate": rate}  # integer samples stay so
    [muted_pcm] = corrupt_media([pcm], mute, where=WHERE)
    assert muted_pcm["array"].dtype == np.int16 and changed_run(pcm["array"], muted_pcm["array"])[1] <= stop
    [grid] = corrupt_media([item], mute, where=WHERE, grid=FrameGrid())  # sceval_grid: SCEval's 16 kHz mono
    assert grid["sampling_rate"] == 16_000 and grid["array"].shape == (16_000,)


def test_a_video_keeps_its_audio_tracks_rate_and_channels(cache, tmp_path):
    """Issue 36: a 44.1 kHz stereo track is written at 44.1 kHz stereo (PyAV), read by lmms-eval's
    reader as before; clean keeps the samples (PCM: to within 1/32768), a mute only its segment."""
    import av

    from faultline_eval.core.media_processing import decode_source_audio_track

    rng = np.random.default_rng(2)
    frames = rng.integers(0, 256, (4, 16, 24, 3), dtype=np.uint8)
    stereo = np.round(rng.uniform(0.05, 0.5, (88_200, 2)) * 32768).astype(np.float32) / 32768  # PCM grid, no zeros
    source = media.write_video_lossless(tmp_path / "stereo.mp4", frames, 2, stereo, 44_100)
    clean = MediaCorruption(None, None, identity="unchanged")
    mute = MediaCorruption(None, audio_op("mute", 30), identity="mute/30")
    [kept] = corrupt_media([str(source)], clean, where=WHERE)
    [muted] = corrupt_media([str(source)], mute, where=WHERE)
    for out in (kept, muted):
        with av.open(out) as written:
            track = written.streams.audio[0].codec_context
            assert (track.sample_rate, len(track.layout.channels)) == (44_100, 2)
        assert np.array_equal(read_video(out, num_frm=4), frames)
    decoded = decode_source_audio_track(Path(kept))
    assert decoded is not None and decoded[1] == 44_100 and np.array_equal(decoded[0], stereo)
    muted_track = decode_source_audio_track(Path(muted))
    assert muted_track is not None
    start, stop = changed_run(stereo[:, 0], muted_track[0][:, 0])
    assert changed_run(stereo[:, 1], muted_track[0][:, 1]) == (start, stop)
    assert stop - start == pytest.approx(0.3 * len(stereo), abs=1)
    [on_grid] = corrupt_media([str(source)], clean, where=WHERE, grid=FrameGrid())  # sceval_grid: 16 kHz mono
    with av.open(on_grid) as written:
        assert written.streams.audio[0].codec_context.sample_rate == 16_000


def test_probes_in_seconds_use_the_audios_own_rate():
    """Desync by 0.5 s at 44.1 kHz shifts 22 050 samples (not 8 000, 16 kHz's)."""
    from sceval_plugin import probe_conditions as probes

    wave = np.linspace(0.1, 1, 44_100, dtype=np.float32)
    evidence = probes.Evidence(probes.BareItem("t/doc", None), "", "", None, wave, None, None, 44_100)
    shown, _, reason = probes.apply(probes.ProbeCall("desync", 0.5), evidence)
    assert reason is None and not shown.audio[:22_050].any() and np.array_equal(shown.audio[22_050:], wave[:22_050])


def test_in_memory_and_file_items_by_type(cache, tmp_path):
    rng = np.random.default_rng(0)
    frames = [Image.fromarray(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)) for _ in range(3)]
    calls = []

    def counting(stack):
        calls.append(stack.shape)
        return operators.apply("noise", stack, severity=50, variant=0, key=WHERE)

    wav = tmp_path / "a.wav"
    soundfile.write(wav, np.full(8_000, 0.25, np.float32), 8_000, subtype="FLOAT")
    png = tmp_path / "p.png"
    frames[0].save(png)
    corruption = MediaCorruption(counting, lambda wave, rate: wave * 0.5, identity="half")
    got_frames, got_png, got_wav = corrupt_media([frames, str(png), str(wav)], corruption, where=WHERE)
    assert calls == [(3, 6, 8, 3), (1, 6, 8, 3)]  # the frame list is one stack, one call
    stack = np.stack([np.asarray(frame) for frame in frames])
    assert np.array_equal(np.stack([np.asarray(f) for f in got_frames]), counting(stack))
    assert got_png.endswith(".png") and np.array_equal(media.read_image(got_png)[0], counting(stack[:1])[0])
    wave, rate = soundfile.read(got_wav, dtype="float32")
    assert got_wav.endswith(".wav") and rate == 8_000 and len(wave) == 8_000  # the file's own rate
    assert np.array_equal(wave, np.full(8_000, 0.125, np.float32))
    assert corrupt_media([str(wav)], MediaCorruption(None, None), where=WHERE) == [str(wav)]  # clean: the file
    assert corrupt_media([frames, str(wav)], MediaCorruption(None, None, drop_media=True), where=WHERE) == []


def test_written_files_are_reused(cache, tmp_path):
    source = make_clip(tmp_path / "clip.mp4")
    [first] = corrupt_media([str(source)], NOISE, where=WHERE)
    written, inode = wrapped_media.stats.written, os.stat(first).st_ino  # a rewrite renames a new file in
    [again] = corrupt_media([str(source)], NOISE, where=WHERE)
    assert again == first and wrapped_media.stats.written == written and os.stat(first).st_ino == inode
    other = MediaCorruption(NOISE.vision, NOISE.audio, identity="noise+distortion/50/2")
    [second] = corrupt_media([str(source)], other, where=WHERE)
    assert second != first and wrapped_media.stats.written == written + 1
    [grid] = corrupt_media([str(source)], NOISE, where=WHERE, grid=FrameGrid(fps=2))
    assert grid not in (first, second)
    make_clip(source, seconds=2)  # the source rewritten: a new file, never the stale one
    [fresh] = corrupt_media([str(source)], NOISE, where=WHERE)
    assert fresh != first and len(read_video(fresh, num_frm=64)) == 2 * SOURCE_FPS


def test_the_file_cache_is_bounded_and_evicts_the_least_recently_used(cache, tmp_path, monkeypatch):
    pictures = []
    for shade in range(3):
        pictures.append(tmp_path / f"{shade}.png")
        Image.new("RGB", (16, 16), (shade * 40, 0, 0)).save(pictures[-1])
    invert = MediaCorruption(lambda stack: 255 - stack, None, identity="invert")
    [first] = corrupt_media([str(pictures[0])], invert, where=WHERE)
    size = os.path.getsize(first)
    monkeypatch.setenv(wrapped_media.DISK_ENV, str(2.5 * size / 1e9))  # room for two files and a half
    [second] = corrupt_media([str(pictures[1])], invert, where=WHERE)
    # written a minute apart (two writes within the clock's resolution would tie)
    for age, path in ((120, first), (60, second)):
        os.utime(path, (time.time() - age, time.time() - age))
    assert corrupt_media([str(pictures[0])], invert, where=WHERE) == [first]  # used again: now the most recent
    [third] = corrupt_media([str(pictures[2])], invert, where=WHERE)
    assert os.path.exists(first) and os.path.exists(third) and not os.path.exists(second)
    assert wrapped_media.files.usage() == 2 * size
    assert sceval_main(["cache", "clear"]) == 0 and wrapped_media.files.usage() == 0


def test_threads_asking_for_one_file_write_it_once(cache, tmp_path):
    source = make_clip(tmp_path / "clip.mp4")
    written = wrapped_media.stats.written
    results: list[str] = []
    threads = [
        threading.Thread(target=lambda: results.extend(corrupt_media([str(source)], NOISE, where=WHERE)))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == 1 and len(results) == 4
    assert wrapped_media.stats.written == written + 1
    assert [path.name for path in (cache / "wrapped_media").rglob("*") if path.is_file()] == [Path(results[0]).name]


def test_errors_name_the_doc_and_the_item(cache, tmp_path):
    cases = [
        ([str(tmp_path / "gone.mp4")], "media item 0: media file '" + str(tmp_path / "gone.mp4")),
        ([Image.new("RGB", (2, 2)), 3.5], "media item 1: float 3.5 is not a media item"),
        ([], "no media items"),
        ([[]], "media item 0: an empty list of frames"),
        ([{"path": "x.wav"}], "media item 0: dict {'path': 'x.wav'} is not an audio item"),
        ([{"array": np.zeros(4), "sampling_rate": 0}], "sampling_rate 0 is not positive"),
    ]
    for items, message in cases:
        with pytest.raises(WrappedMediaError) as raised:
            corrupt_media(items, NOISE, where=WHERE)
        assert str(raised.value).startswith(WHERE) and message in str(raised.value)
    (tmp_path / "notes.txt").write_text("not a video")
    with pytest.raises(WrappedMediaError, match=rf"^{WHERE}: media item 0: .*notes.txt.*cannot decode video"):
        corrupt_media([str(tmp_path / "notes.txt")], NOISE, where=WHERE)

    def broken(wave, rate):
        raise RuntimeError("the operator's own message")

    with pytest.raises(WrappedMediaError, match=rf"^{WHERE}: media item 0: the audio corruption failed: RuntimeError"):
        corrupt_media([{"array": np.ones(8), "sampling_rate": 16_000}], MediaCorruption(None, broken), where=WHERE)
    shrink = MediaCorruption(lambda stack: stack[:, :1], None, identity="bad")
    with pytest.raises(WrappedMediaError, match="vision corruption returned uint8"):
        corrupt_media([Image.new("RGB", (4, 4))], shrink, where=WHERE)


def test_two_processes_write_the_same_bytes(tmp_path):
    source = make_clip(tmp_path / "clip.mp4")
    script = textwrap.dedent(
        f"""
        import numpy as np
        from faultline_eval.tasks.wrapped_media import MediaCorruption, corrupt_media

        def shift(stack):
            return np.roll(stack, 3, axis=2)

        def fade(wave, rate):
            return wave * np.linspace(1, 0, len(wave), dtype=np.float32)

        print(corrupt_media([{str(source)!r}], MediaCorruption(shift, fade, identity="x"), where="t/doc"))
        """
    )
    contents = []
    for run in range(2):
        env = {**os.environ, "SCEVAL_CACHE": str(tmp_path / f"cache{run}")}
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        [written] = [path for path in (tmp_path / f"cache{run}" / "wrapped_media").rglob("*") if path.is_file()]
        contents.append((written.name, written.read_bytes()))
    assert contents[0] == contents[1]
