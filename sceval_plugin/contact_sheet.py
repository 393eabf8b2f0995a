"""Contact sheets: one PNG showing what each operator does at each severity.

Rows are operators, columns are severities (0 = clean). Vision cells show the frames (first,
middle and last of a clip), audio cells a min/max waveform strip on the clean clip's time
scale (so ``remove`` visibly shortens it), text cells the corrupted stem as rendered lines.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from tqdm.auto import tqdm

from sceval_plugin import operators
from sceval_plugin.conditions import catalogue
from sceval_plugin.operators import SEVERITIES
from sceval_plugin.render import render

FRAME_HEIGHT = 120
AUDIO_SIZE = (360, 90)
TEXT_SIZE = (360, 150)
LABEL_WIDTH = 150
HEADER_HEIGHT = 28
CAPTION_HEIGHT = 18
GAP = 6
BACKGROUND = (255, 255, 255)
INK = (20, 20, 20)
MUTED = (110, 110, 110)


def _font(size: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType: fixed-size bitmap font
        return ImageFont.load_default()


def render_frames(frames: np.ndarray) -> Image.Image:
    """First, middle and last frame of a clip (or the single image), side by side."""
    stack = frames[None] if frames.ndim == 3 else frames
    picks = sorted({0, len(stack) // 2, len(stack) - 1})
    height, width = stack.shape[1:3]
    thumb_w = max(1, round(width * FRAME_HEIGHT / height))
    strip = Image.new("RGB", (len(picks) * thumb_w + (len(picks) - 1) * 2, FRAME_HEIGHT), BACKGROUND)
    for slot, i in enumerate(picks):
        thumb = Image.fromarray(stack[i]).resize((thumb_w, FRAME_HEIGHT), Image.Resampling.BOX)
        strip.paste(thumb, (slot * (thumb_w + 2), 0))
    return strip


def render_waveform(wave: np.ndarray, reference_length: int) -> Image.Image:
    """Min/max envelope, one pixel column per ``reference_length / width`` samples."""
    width, height = AUDIO_SIZE
    img = Image.new("RGB", AUDIO_SIZE, (245, 247, 250))
    draw = ImageDraw.Draw(img)
    mid = height // 2
    draw.line([(0, mid), (width, mid)], fill=(200, 200, 200))
    per_column = max(1, int(np.ceil(reference_length / width)))
    columns = int(np.ceil(wave.size / per_column))
    padded = np.zeros(columns * per_column, dtype=np.float32)
    padded[: wave.size] = wave
    blocks = padded.reshape(columns, per_column)
    scale = (height / 2 - 2) / max(1e-6, float(np.abs(wave).max()) if wave.size else 1.0, 1.0)
    for x, (lo, hi) in enumerate(zip(blocks.min(axis=1), blocks.max(axis=1))):
        draw.line([(x, mid - hi * scale), (x, mid - lo * scale)], fill=(31, 119, 180))
    if columns < width:  # the clip ends early (segment removal): mark where
        draw.line([(columns, 0), (columns, height)], fill=(214, 39, 40))
    return img


def render_text(text: str) -> Image.Image:
    """The text wrapped to the cell width; explicit line breaks are kept."""
    width, height = TEXT_SIZE
    img = Image.new("RGB", TEXT_SIZE, (250, 250, 245))
    draw = ImageDraw.Draw(img)
    font = _font(13)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            trial = f"{line} {word}" if line else word
            if draw.textlength(trial, font=font) <= width - 8 or not line:
                line = trial
            else:
                lines.append(line)
                line = word
        lines.append(line)
    y = 4
    for line in lines:
        if y + 15 > height:
            draw.text((4, y), "...", fill=MUTED, font=font)
            break
        draw.text((4, y), line, fill=INK, font=font)
        y += 15
    return img


def _render(modality: str, data: Any, clean: Any) -> Image.Image:
    if modality == "vision":
        return render_frames(data)
    if modality == "audio":
        return render_waveform(data, reference_length=clean.size)
    return render_text(data)


def grid(
    data: Any,
    modality: str,
    *,
    names: Sequence[str] | None = None,
    severities: Sequence[int] = SEVERITIES,
    variant: int = 0,
    key: str = "contact-sheet",
    title: str = "",
    progress: bool = True,
) -> Image.Image:
    """Apply every operator of ``modality`` (or ``names``) at every severity and lay out a sheet.

    ``variant`` is clamped to each operator's own number of variants (deterministic ones have 1).
    """
    names = list(names) if names is not None else operators.names(modality)
    for name in names:
        if operators.get(name).modality != modality:
            raise ValueError(f"operator {name!r} is a {operators.get(name).modality} operator, not {modality}")
    cells: list[list[tuple[Image.Image, str]]] = []
    with tqdm(total=len(names) * len(severities), desc=f"{modality} grid", disable=not progress) as bar:
        for name in names:
            spec = operators.get(name)
            row = []
            for severity in severities:
                out = operators.apply(name, data, severity=severity, variant=min(variant, spec.variants - 1), key=key)
                row.append((_render(modality, out, data), f"{spec.parameter(severity):g}"))
                bar.update()
            cells.append(row)
    cell_w = max(img.width for row in cells for img, _ in row)
    cell_h = max(img.height for row in cells for img, _ in row) + CAPTION_HEIGHT
    top = HEADER_HEIGHT + (HEADER_HEIGHT if title else 0)
    sheet = Image.new(
        "RGB",
        (LABEL_WIDTH + len(severities) * (cell_w + GAP), top + len(names) * (cell_h + GAP)),
        BACKGROUND,
    )
    draw = ImageDraw.Draw(sheet)
    bold, small = _font(15), _font(12)
    if title:
        draw.text((GAP, 4), title, fill=INK, font=bold)
    for c, severity in enumerate(severities):
        label = "clean (0)" if severity == 0 else f"severity {severity}"
        draw.text((LABEL_WIDTH + c * (cell_w + GAP), top - HEADER_HEIGHT + 6), label, fill=INK, font=bold)
    for r, (name, row) in enumerate(zip(names, cells)):
        y = top + r * (cell_h + GAP)
        spec = operators.get(name)
        draw.text((GAP, y + 4), name, fill=INK, font=bold)
        for i, line in enumerate(textwrap.wrap(spec.table.parameter, 20)[:4]):
            draw.text((GAP, y + 24 + 14 * i), line, fill=MUTED, font=small)
        for c, (img, caption) in enumerate(row):
            x = LABEL_WIDTH + c * (cell_w + GAP)
            sheet.paste(img, (x, y))
            draw.text((x, y + img.height + 2), caption, fill=MUTED, font=small)
    return sheet


def render_all_frames(frames: np.ndarray, height: int = FRAME_HEIGHT // 2) -> Image.Image:
    """Every frame, in the order shown, as small thumbnails (order is what the probes change)."""
    thumb_w = max(1, round(frames.shape[2] * height / frames.shape[1]))
    strip = Image.new("RGB", (len(frames) * (thumb_w + 2) - 2, height), BACKGROUND)
    for slot, frame in enumerate(frames):
        strip.paste(Image.fromarray(frame).resize((thumb_w, height), Image.Resampling.BOX), (slot * (thumb_w + 2), 0))
    return strip


def probe_sheet(item, conditions: Sequence, donors, *, title: str = "") -> Image.Image:
    """One row per probe condition (clean first) for one dataset item: every frame shown, the audio
    on the clean clip's time scale, the question and context, and the donor or the reason the
    probe does not apply. ``donors`` is the run's :class:`sceval_plugin.probe_conditions.DonorPicker`."""
    rows = [(c, render(item, c, 0, donors=donors)) for c in [catalogue().get("clean"), *conditions]]
    reference = len(item.waveform())
    cells = [
        (
            render_all_frames(t.frames),
            render_waveform(t.audio, reference),
            render_text("\n".join(x for x in (t.context, t.question) if x)),
        )
        for _, t in rows
    ]
    widths = [max(cell[k].width for cell in cells) for k in range(3)]
    cell_h = max(max(img.height for img in cell) for cell in cells) + CAPTION_HEIGHT
    label_w = 2 * LABEL_WIDTH
    top = HEADER_HEIGHT if title else GAP
    sheet = Image.new("RGB", (label_w + sum(widths) + 3 * GAP, top + len(rows) * (cell_h + GAP)), BACKGROUND)
    draw = ImageDraw.Draw(sheet)
    bold, small = _font(13), _font(11)
    if title:
        draw.text((GAP, 6), title, fill=INK, font=_font(15))
    for r, ((condition, trial), cell) in enumerate(zip(rows, cells)):
        y = top + r * (cell_h + GAP)
        draw.text((GAP, y + 2), condition.id, fill=INK, font=bold)
        notes = [condition.description]
        if trial.donor_id:
            notes.append(f"donor: {trial.donor_id}")
        if trial.not_applicable:
            notes.append(f"not applicable: {trial.not_applicable}")
        for i, line in enumerate(textwrap.wrap("; ".join(notes), 44)[:5]):
            draw.text(
                (GAP, y + 20 + 13 * i), line, fill=MUTED if not trial.not_applicable else (180, 40, 40), font=small
            )
        x = label_w
        for img, width in zip(cell, widths):
            sheet.paste(img, (x, y))
            x += width + GAP
    return sheet
