"""Visual structure corruptions on uint8 RGB frames.

Every operator takes one image ``(H, W, 3)`` or a frame stack ``(N, H, W, 3)`` and returns a
new array of the same shape and dtype. One variant is one set of random choices: an occlusion
covers the same region on every frame of a clip, while sensor noise is drawn afresh per frame.

Why NumPy/OpenCV rather than albumentations: GaussNoise reuses one noise field on every frame
and draws it from OpenCV's global RNG; MotionBlur and Defocus add random shifts and a Gaussian
alias blur on top of the plain line and disk kernels; and the direct calls here are several
times faster on a clip. Downscale does match exactly (the tests use it as a reference).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache, lru_cache

import cv2
import numpy as np

from sceval_plugin.hookspecs import hookimpl
from sceval_plugin.operators._seed import seed_scheme
from sceval_plugin.operators._spec import SeverityTable, operator


def _frames(x: np.ndarray) -> np.ndarray:
    """A contiguous (N, H, W, 3) view of an image or a clip (OpenCV needs contiguous rows)."""
    x = np.ascontiguousarray(x)
    return x[None] if x.ndim == 3 else x


@cache
def _pool(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sceval-frames")


def _each_frame(work: Callable[[int], None], count: int) -> None:
    """Run ``work(i)`` for every frame index; OpenCV and NumPy release the GIL, so frames of a
    clip proceed in parallel. Results never depend on the thread schedule.

    At most 4 threads, and never more than OpenCV is allowed (``cv2.setNumThreads(1)`` makes
    every operator single-threaded, as ``benchmarks/operators.py`` does for its serial pass).
    """
    workers = min(4, os.cpu_count() or 1, cv2.getNumThreads(), count)
    if workers <= 1:
        for i in range(count):
            work(i)
    else:
        list(_pool(workers).map(work, range(count)))


NOISE_SIGMA = SeverityTable(
    "Gaussian noise sigma (0-255 scale)", {10: 15.0, 30: 40.0, 50: 65.0, 70: 90.0}, identity=0.0
)


#: Random bits per noise value in seed scheme 2 (one uint16): the resolution of its tables.
NOISE_TABLE_BITS = 16


@cache
def rounded_gaussian_table(sigma: float) -> np.ndarray:
    """The inverse CDF of round(N(0, sigma^2)) on 2**16 equally likely cells, as int16.

    Adding noise and rounding to whole levels commutes with adding the rounded noise (pixels
    are whole numbers), so the operator may draw the rounded value k directly:
    P(k) = Phi((k + 1/2) / sigma) - Phi((k - 1/2) / sigma). Cell u in 0..65535 holds the k whose
    cumulative range contains the cell's midpoint (u + 1/2) / 2**16, so every cumulative
    probability is within 2**-17 of the exact one; |z| beyond about 4.33 (1.5e-5 of the mass,
    both tails) folds into the extreme cells. Values beyond +-255 saturate every pixel alike, so they are
    clamped to +-255 with no effect on the output.
    """
    levels = np.arange(-255, 255)  # k; the last bin (k = 255) takes the rest of the mass
    cdf = np.array([0.5 * math.erfc(-(k + 0.5) / (sigma * math.sqrt(2.0))) for k in levels])
    cells = (np.arange(2**NOISE_TABLE_BITS) + 0.5) / 2**NOISE_TABLE_BITS
    table = (np.searchsorted(cdf, cells, side="right") - 255).astype(np.int16)
    table.flags.writeable = False
    return table


@operator("noise", modality="vision", table=NOISE_SIGMA, stochastic=True)
def noise(frames: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Add independent N(0, sigma^2) noise to every pixel, channel and frame; round and clip.

    How the Gaussian is drawn depends on the seed scheme (:mod:`sceval_plugin.operators._seed`):
    scheme 1 draws float32 Gaussians and rounds the sum; scheme 2 draws the rounded noise from
    :func:`rounded_gaussian_table`, 16 raw PCG64 bits per value (3-5x faster).
    """
    src = _frames(frames)
    out = np.empty_like(src)
    # One generator per frame, seeded from the variant's generator, so frames can be drawn in
    # parallel and still give the same bytes whatever the thread count.
    seeds = rng.integers(0, 2**63, size=len(src)).tolist()
    if seed_scheme() == 1:

        def one(i: int) -> None:
            field = np.random.Generator(np.random.PCG64(seeds[i])).standard_normal(src.shape[1:], dtype=np.float32)
            field *= np.float32(sigma)
            # The sum in float64, rounded half to even and clipped: the bytes OpenCV < 5.1's
            # cv2.add(uint8, float32) gave when the scheme was pinned. OpenCV 5.1 adds in float32
            # and rounds some sums the other way, so the scheme no longer leaves it to OpenCV.
            total = src[i] + field.astype(np.float64)
            np.rint(total, out=total)
            np.clip(total, 0, 255, out=total)
            out[i] = total
    else:
        table, size = rounded_gaussian_table(float(sigma)), src[0].size

        def one(i: int) -> None:
            raw = np.random.PCG64(seeds[i]).random_raw(-(-size // 4))
            cells = raw.astype("<u8", copy=False).view("<u2")[:size]  # little-endian halves on any machine
            field = np.take(table, cells).reshape(src.shape[1:])
            cv2.add(src[i], field, dst=out[i], dtype=cv2.CV_8U)  # saturates at 0/255

    _each_frame(one, len(src))
    return out.reshape(frames.shape)


OCCLUDED_AREA = SeverityTable("fraction of the frame occluded", {10: 0.10, 30: 0.30, 50: 0.50, 70: 0.70}, identity=0.0)
#: Occluders are black, like a hand or an object in front of the lens.
OCCLUSION_FILL = 0


def occlusion_box(height: int, width: int, area: float, rng: np.random.Generator) -> tuple[int, int, int, int]:
    """(top, left, box height, box width) of a random box covering ``area`` of the frame.

    The box keeps the frame's aspect ratio; its width is then rounded so the covered area is
    as close to ``area`` as whole pixels allow (within 1 % for frames of 100 x 100 and larger).
    """
    h = min(max(round(area**0.5 * height), 1), height)
    w = min(max(round(area * height * width / h), 1), width)
    top = int(rng.integers(0, height - h + 1))
    left = int(rng.integers(0, width - w + 1))
    return top, left, h, w


@operator("occlusion", modality="vision", table=OCCLUDED_AREA, stochastic=True)
def occlusion(frames: np.ndarray, area: float, rng: np.random.Generator) -> np.ndarray:
    """Black out one box covering ``area`` of the frame, at the same place on every frame."""
    top, left, h, w = occlusion_box(frames.shape[-3], frames.shape[-2], area, rng)
    out = frames.copy()
    out[..., top : top + h, left : left + w, :] = OCCLUSION_FILL
    return out


DOWNSCALE_FACTOR = SeverityTable("downscale factor per side", {10: 0.9, 30: 0.7, 50: 0.5, 70: 0.3}, identity=1.0)


@operator("low_resolution", modality="vision", table=DOWNSCALE_FACTOR, stochastic=False)
def low_resolution(frames: np.ndarray, factor: float, rng: np.random.Generator) -> np.ndarray:
    """Shrink each side by ``factor`` (area averaging), then scale back up (bilinear).

    Byte for byte albumentations' Downscale(INTER_AREA, INTER_LINEAR) (tests pin it), so its two
    OpenCV calls are its floor: for a non-integer 1/factor the shrink is OpenCV's scalar area
    loop, about 3/4 of the time (``benchmarks/operators.py`` times each call alone).
    """
    height, width = frames.shape[-3:-1]
    src, out = _frames(frames), np.empty_like(_frames(frames))
    # fx/fy (not a target size) so the resampling grid uses the exact factor; tiny frames that
    # would shrink to nothing keep one pixel.
    exact = round(width * factor) >= 1 and round(height * factor) >= 1
    small = None if exact else (max(1, round(width * factor)), max(1, round(height * factor)))
    fxy = factor if exact else 0

    def one(i: int) -> None:
        tiny = cv2.resize(src[i], small, fx=fxy, fy=fxy, interpolation=cv2.INTER_AREA)
        cv2.resize(tiny, (width, height), dst=out[i], interpolation=cv2.INTER_LINEAR)

    _each_frame(one, len(src))
    return out.reshape(frames.shape)


MOTION_KERNEL = SeverityTable("motion-blur kernel length (pixels)", {10: 5, 30: 15, 50: 25, 70: 35}, identity=1)


@operator("motion_blur", modality="vision", table=MOTION_KERNEL, stochastic=False)
def motion_blur(frames: np.ndarray, length: int, rng: np.random.Generator) -> np.ndarray:
    """Average each pixel with its neighbours along a horizontal line of ``length`` pixels.

    The direction is fixed (a horizontal camera pan), so the operator is deterministic. Image
    borders are mirrored. A horizontal kernel never mixes rows, so the whole clip is filtered
    as one tall image.
    """
    n, height, width, _ = _frames(frames).shape
    tall = np.ascontiguousarray(frames).reshape(n * height, width, 3)
    return cv2.blur(tall, (int(length), 1), borderType=cv2.BORDER_REFLECT_101).reshape(frames.shape)


DEFOCUS_RADIUS = SeverityTable("defocus disk radius (pixels)", {10: 2, 30: 5, 50: 9, 70: 13}, identity=0)


def disk_kernel(radius: int) -> np.ndarray:
    """Uniform weights on the pixels within ``radius`` of the centre (x^2 + y^2 <= r^2)."""
    r = int(radius)
    y, x = np.mgrid[-r : r + 1, -r : r + 1]
    disk = (x * x + y * y <= r * r).astype(np.float32)
    return disk / disk.sum()


#: Up to this kernel side (radius 3) OpenCV's direct uint8 filter is fastest; up to
#: _DIRECT_FLOAT_KERNEL_SIDE (radius 5; OpenCV filters directly below 130 taps) its direct float32
#: filter, one plane at a time (1.3-1.5x faster than the interleaved uint8 frame there); above
#: that one FFT of each whole plane (filter2D would switch to its slower tiled DFT).
_DIRECT_KERNEL_SIDE = 7
_DIRECT_FLOAT_KERNEL_SIDE = 11
_FFT_LEVEL_SHIFT = 128.0


def _even_fft_length(n: int) -> int:
    """The smallest even length >= n with no prime factor above 5 (fast for OpenCV's DFT; even
    so the spectrum's packed layout has a Nyquist column and row, see :func:`disk_spectrum`)."""
    n = cv2.getOptimalDFTSize(n)
    while n % 2:
        n = cv2.getOptimalDFTSize(n + 1)
    return n


@lru_cache(maxsize=8)
def disk_spectrum(radius: int, rows: int, cols: int) -> np.ndarray:
    """The disk's 2-D DFT on a ``rows`` x ``cols`` grid, laid out to multiply OpenCV's packed
    (CCS) spectrum of a real plane slot by slot, with the inverse's 1/(rows*cols) folded in.

    The kernel is centred on the origin (negative offsets wrap), and it is even, so its spectrum
    is real: each complex value of the packed layout (a Re slot followed by its Im slot) is scaled
    by one real number. The DFT of the packed kernel holds that number in the Re slots and ~0 in
    the Im slots; copying Re into Im gives the multiplier. Computed in float64, stored as float32.
    """
    r = int(radius)
    offsets = np.arange(-r, r + 1)
    kernel = np.zeros((rows, cols))
    kernel[np.ix_(offsets % rows, offsets % cols)] = disk_kernel(r).astype(np.float64) / (rows * cols)
    packed = cv2.dft(kernel)
    packed[:, 2 : cols - 1 : 2] = packed[:, 1 : cols - 2 : 2]  # interior columns: Re, Im pairs
    for col in (0, cols - 1):  # the DC and Nyquist columns pair their rows instead
        packed[2 : rows - 1 : 2, col] = packed[1 : rows - 2 : 2, col]
    out = packed.astype(np.float32)
    out.flags.writeable = False
    return out


def _disk_mean_by_fft(frame: np.ndarray, radius: int, dst: np.ndarray) -> None:
    """Write the rounded disk mean of one (H, W, 3) frame into ``dst``: per plane, one real
    float32 DFT of the mirrored-padded plane, scaled by :func:`disk_spectrum`, inverted."""
    r, (height, width) = int(radius), frame.shape[:2]
    rows, cols = _even_fft_length(height + 2 * r), _even_fft_length(width + 2 * r)
    spectrum = disk_spectrum(r, rows, cols)
    # Rows and columns past height + 2r are never read by a kept output pixel (the kernel spans
    # 2r + 1), so the padding there only has to exist; mirroring it too keeps this one call.
    padded = cv2.copyMakeBorder(frame, r, rows - height - r, r, cols - width - r, cv2.BORDER_REFLECT_101)
    planes = []
    for plane in cv2.split(padded):
        # Centred on the middle level: the disk's weights sum to 1, so the shift comes back
        # unchanged, and the float error (it scales with the values) halves.
        packed = cv2.dft(cv2.subtract(plane, _FFT_LEVEL_SHIFT, dtype=cv2.CV_32F))
        cv2.multiply(packed, spectrum, dst=packed)
        blurred = cv2.idft(packed, flags=cv2.DFT_REAL_OUTPUT)[r : r + height, r : r + width]
        planes.append(cv2.convertScaleAbs(blurred, beta=_FFT_LEVEL_SHIFT))  # round to nearest, saturate
    cv2.merge(planes, dst=dst)


@operator("defocus_blur", modality="vision", table=DEFOCUS_RADIUS, stochastic=False)
def defocus_blur(frames: np.ndarray, radius: int, rng: np.random.Generator) -> np.ndarray:
    """Convolve each frame with a flat disk of ``radius`` pixels (an out-of-focus lens), mirrored
    borders (OpenCV's BORDER_REFLECT_101), rounded to the nearest level.

    The output is the exact disk mean rounded to nearest. A disk holds an odd number c of pixels
    (the centre plus groups of four), so no exact mean s/c is a tie: each lies at least 1/(2c)
    (9.4e-4 at radius 13) from a rounding boundary, and every path's float error stays inside
    that. The direct filters (radius <= 5) provably do (c float32 roundings of values <= 255:
    under 1.3e-3 against 1/(2c) >= 6.2e-3); the FFT path (radius 9 and 13) was measured at most
    5e-5, 19x inside, on frames from 1x1 to 1920x1080 with random, binary, flat, ramp and sparse
    content, and the tests compare it with an exact integer sum. Its bytes equal those of
    OpenCV's filter2D that it replaced (2-5x slower: it tiles the frame into many small DFTs).
    """
    kernel = disk_kernel(radius)
    side = kernel.shape[0]
    src, out = _frames(frames), np.empty_like(_frames(frames))

    def direct(i: int) -> None:
        cv2.filter2D(src[i], -1, kernel, dst=out[i], borderType=cv2.BORDER_REFLECT_101)

    def by_plane(i: int) -> None:
        planes = [
            cv2.filter2D(plane.astype(np.float32), -1, kernel, borderType=cv2.BORDER_REFLECT_101)
            for plane in cv2.split(src[i])
        ]
        cv2.convertScaleAbs(cv2.merge(planes), dst=out[i])  # round to nearest, saturate (all >= 0)

    def by_fft(i: int) -> None:
        _disk_mean_by_fft(src[i], radius, out[i])

    path = direct if side <= _DIRECT_KERNEL_SIDE else by_plane if side <= _DIRECT_FLOAT_KERNEL_SIDE else by_fft
    _each_frame(path, len(src))
    return out.reshape(frames.shape)


def _gain(frames: np.ndarray, gain: float) -> np.ndarray:
    """Multiply intensities by ``gain`` in float32, round half to even, clip to 0..255.

    One SIMD pass (OpenCV's convertScaleAbs; |x * gain| = x * gain for uint8 and gain > 0).
    """
    flat = np.ascontiguousarray(frames).reshape(-1, frames.shape[-1] * frames.shape[-2])
    return cv2.convertScaleAbs(flat, alpha=float(gain)).reshape(frames.shape)


EXPOSURE_GAIN = SeverityTable("brightness gain", {10: 1.1, 30: 1.3, 50: 1.6, 70: 2.0}, identity=1.0)


@operator("overexposure", modality="vision", table=EXPOSURE_GAIN, stochastic=False)
def overexposure(frames: np.ndarray, gain: float, rng: np.random.Generator) -> np.ndarray:
    """Multiply intensities by ``gain`` > 1; highlights clip at 255 and wash out."""
    return _gain(frames, gain)


BRIGHTNESS_FACTOR = SeverityTable("brightness factor", {10: 0.9, 30: 0.7, 50: 0.5, 70: 0.3}, identity=1.0)


@operator("brightness", modality="vision", table=BRIGHTNESS_FACTOR, stochastic=False)
def brightness(frames: np.ndarray, factor: float, rng: np.random.Generator) -> np.ndarray:
    """Multiply intensities by ``factor`` < 1; the frame darkens and shadows merge."""
    return _gain(frames, factor)


@hookimpl
def sceval_register_operators(registry):
    for op in (noise, occlusion, low_resolution, motion_blur, defocus_blur, overexposure, brightness):
        registry.add(op)
