"""SCEval's mechanism probes (paper Table 17; Appendices G.9-G.11) as catalogue conditions.

A probe changes what one trial shows so as to ask *why* a fault line appears:

============== ======================================== ==============================================
family         probe (parameter)                        what the model is shown
============== ======================================== ==============================================
mismatch       ``mismatch_text|vision|audio`` (tier)    that modality's evidence from a donor item
temporal       ``temporal`` (kind)                      frames shuffled / reversed / middle frames
                                                        dropped; audio 1 s segments shuffled or
                                                        silent gaps inserted
desync         ``desync`` (seconds)                     audio shifted against the frames (+ = later),
                                                        padded with silence, same duration
frame_budget   ``frame_budget`` (frames or "default")   the clip sampled at another frame count
key_frame      ``key_frame`` (first/middle/last)        the item's key frame moved to that position
distractor     ``distractor`` (audio/image/text)        G.11: an unrelated donor's audio in a
                                                        text-visual item, its frames in a
                                                        text-audio item, misleading text in a
                                                        visual-audio item
============== ======================================== ==============================================

The defaults of every parameter are in :data:`PARAMETERS` (Table 17), next to the maths below;
each probe accepts other values too (:attr:`ProbeSpec.check`), so a plugin can add, say, a
0.25 s desync with ``registry.add(probe_condition("desync", 0.25))`` in its own
``sceval_register_conditions``. Probes register through ``sceval_register_probes`` and their
conditions through ``sceval_register_conditions``, like a third party's (this module is a
plugin). A probe is a pure function of (evidence, parameter, rng, donor); its rng comes from
(sample id, probe call, variant), and a donor from the run's :class:`DonorPicker`.

Besides Table 17's defaults, :data:`OPTIONS` registers other readings as conditions of their
own (tagged ``sceval_probe_options``, not in ``sceval_probes``): the one-frame middle drop and
the distractors appended to an item that keeps all its evidence.

Items that lack what a probe needs (one frame where order is probed, no ``key_frame_index``, no
donor of the tier) are rendered unchanged and recorded as not applicable with a reason
(:data:`NOT_APPLICABLE`): counted in the report, never scored, never dropped silently.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np

from faultline_eval.core.registry import PluginError, Registry
from sceval_plugin.conditions import Condition, ConditionRegistry
from sceval_plugin.data.records import OmniItem, field_error
from sceval_plugin.hookspecs import hookimpl
from sceval_plugin.operators import SAMPLE_RATE, variant_rng, variant_seed
from sceval_plugin.plugins import fill_registry

PROBE_FAMILIES = ("mismatch", "temporal", "desync", "frame_budget", "key_frame", "distractor")
#: Donor tiers (G.9; G.11's "unrelated"): see :meth:`DonorPicker.candidates`.
DONOR_TIERS = ("random", "category", "answer", "unrelated")

#: Table 17's conditions: probe -> default parameters (each becomes one condition).
PARAMETERS: dict[str, tuple[Any, ...]] = {
    "mismatch_text": ("random", "category", "answer"),
    "mismatch_vision": ("random", "category", "answer"),
    "mismatch_audio": ("random", "category", "answer"),
    "temporal": ("frame_shuffle", "frame_reverse", "middle_drop", "audio_shuffle", "audio_gaps"),
    "desync": (-8.0, -4.0, -2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 4.0, 8.0),
    "frame_budget": (1, 4, 8, 16, "default"),
    "key_frame": ("first", "middle", "last"),
    "distractor": ("audio", "image", "text"),
}
#: Other readings of a probe, registered as conditions too (suite ``probe_option``, tag
#: ``sceval_probe_options``): today's one-frame middle drop, and distractors appended to an item
#: that keeps all its own evidence (an unrelated clip after its audio, one donor frame after its
#: frames, an unrelated sentence after its context).
OPTIONS: dict[str, tuple[Any, ...]] = {
    "temporal": ("middle_drop_1",),
    "distractor": ("appended_audio", "appended_frame", "appended_text"),
}
#: The version of the probes' readings, recorded in every probe trial (``probe_readings``): 1 (logs
#: without the field) appended distractors to every item and dropped one middle frame; 2 is the
#: paper's G.10/G.11 readings. :data:`REREAD_IN_2` kept their ids and changed meaning, so the report
#: refuses logs of them made under reading 1 rather than pool two experiments under one name.
READINGS = 2
REREAD_IN_2 = (
    "probe_temporal_middle_drop",
    "probe_distractor_audio",
    "probe_distractor_image",
    "probe_distractor_text",
)
#: Length of the audio segments the temporal probe shuffles (seconds).
AUDIO_SEGMENT_S = 1.0
#: G.10 "drop middle frames" leaves the number open: ``middle_drop`` drops this share of the frames
#: (rounded, at least one), centred, first and last kept; ``middle_drop_<k>`` drops k.
MIDDLE_DROP_FRACTION = 1 / 3
#: G.10 "insert local gaps" leaves count and length open: ``audio_gaps`` inserts this many silent
#: gaps of this length (seconds); ``audio_gaps_<count>x<seconds>s`` (e.g. ``audio_gaps_2x1s``) others.
AUDIO_GAPS = (3, 0.5)
#: What an item's evidence is taken to need when ``hidden.evidence_modality`` does not say (absent
#: or "unknown"): SCEval's sources are all audio-visual QA (Social-IQ, OmniBench, VALOR; their
#: converters record "audio+visual"), and so is the demo.
ASSUMED_EVIDENCE = "audio+visual"
#: The misleading sentence G.11's text distractor puts in a visual-audio item's text, naming one of
#: the item's wrong options (chosen per sample and variant).
MISLEADING_TEXT = "A note on this clip says the answer is “{option}”."
#: Silence between the real audio and an audio distractor (seconds).
DISTRACTOR_GAP_S = 0.5
#: The frame budget of the headline runs (App. F.2: at most eight frames); the budget gap is measured
#: against it.
HEADLINE_BUDGET = 8

#: Why a probe did not apply to an item (the trial's ``not_applicable``), in words.
NOT_APPLICABLE = {
    "single_frame": "one frame only, so frame order, budget and position cannot change",
    "too_few_frames": "too few frames to drop middle ones and keep the first and the last",
    "audio_too_short": "audio shorter than two segments (or than its gaps), so it cannot be reordered or gapped",
    "needs_audio": "evidence that needs their audio (hidden.evidence_modality), so they are no text-visual "
    "example an unrelated audio can be inserted into (G.11)",
    "needs_visual": "evidence that needs their visual, so they are no text-audio example unrelated frames can be "
    "inserted into (G.11)",
    "needs_text": "evidence that needs their text, so they are no visual-audio example misleading text can be "
    "inserted into (G.11)",
    "no_key_frame": "no key_frame_index in the record",
    "no_donor": "no donor of the probe's tier among the dataset's other items",
}


class NotApplicable(Exception):
    """Raised by a probe whose item lacks what it needs; ``args[0]`` is a :data:`NOT_APPLICABLE` key."""


@dataclass(frozen=True)
class BareItem:
    """An item known only by its id and the kind of its visual: what the probes that need no donor
    and no record field (temporal, desync, frame_budget on a frame list) read of a doc that is no
    SCEval record, such as a doc of a wrapped lmms-eval task (issue 27). ``sample_id`` seeds the
    probe as :func:`apply` seeds every probe; ``visual_kind`` is ``"image"`` or ``"frames"`` (a
    video reaches these probes already decoded to its frames); it has no ``key_frame_index``."""

    sample_id: str
    visual_kind: str | None
    key_frame_index: None = None


@dataclass(frozen=True)
class Evidence:
    """What a trial shows before the probe: the probe returns a changed copy."""

    item: OmniItem | BareItem
    question: str
    context: str
    frames: np.ndarray | None  # (N, H, W, 3) uint8
    audio: np.ndarray | None  # mono float32 at sample_rate
    frame_times: tuple[float, ...] | None  # stated in the prompt for video frames; None: not stated
    visual_kind: str | None  # "image" | "video frames"
    #: The audio's rate: SCEval items are at 16 kHz; a wrapped task's audio keeps its source's
    #: rate, so probes that act in seconds (gaps, shuffle, desync) measure them at this rate.
    sample_rate: int = SAMPLE_RATE


@dataclass(frozen=True)
class ProbeCall:
    """One probe at one parameter: what a probe condition runs."""

    name: str
    parameter: Any

    @property
    def label(self) -> str:
        """The parameter as it appears in condition ids (``plus0p5s``, ``16``, ``category``)."""
        return get(self.name).label(self.parameter)

    @property
    def id(self) -> str:
        return f"{self.name}_{self.label}"

    def checked(self) -> ProbeCall:
        """This call with its parameter normalised; an unknown probe or an invalid parameter
        raises (what :class:`~sceval_plugin.conditions.ConditionRegistry` asks of a probe)."""
        return ProbeCall(self.name, get(self.name).check(self.parameter))


def default_label(parameter: Any) -> str:
    """A parameter as an id part: ``0.5`` -> ``0p5``, ``-2`` -> ``minus2``, words as they are."""
    if isinstance(parameter, (int, float)) and not isinstance(parameter, bool):
        return f"{parameter:g}".replace("-", "minus").replace(".", "p")
    return str(parameter)


@dataclass(frozen=True)
class ProbeSpec:
    """A registered probe: ``func(evidence, parameter, rng, donor) -> Evidence``."""

    name: str
    family: str
    func: Callable[..., Evidence] = field(repr=False)
    parameters: tuple[Any, ...]  # the defaults, one condition each
    check: Callable[[Any], Any] = field(repr=False)  # a valid parameter (normalised) or ValueError
    donor_tier: Callable[[Any], str | None] = field(repr=False)
    describe: Callable[[Any], str] = field(repr=False)
    label: Callable[[Any], str] = field(repr=False, default=default_label)  # the parameter in condition ids
    plugin: str = ""


#: A probe function, returned unchanged by :func:`probe` (its :class:`ProbeSpec` attached).
ProbeFunction = TypeVar("ProbeFunction", bound=Callable[..., Evidence])


def probe(
    name: str,
    *,
    family: str,
    parameters: Sequence[Any],
    check: Callable[[Any], Any],
    describe: Callable[[Any], str],
    donor: str | Callable[[Any], str | None] | None = None,
    label: Callable[[Any], str] = default_label,
) -> Callable[[ProbeFunction], ProbeFunction]:
    """Declare ``func(evidence, parameter, rng, donor)`` as a probe (attached as ``func.sceval_probe``).

    Args:
        name: lower-case identifier; part of condition ids (``probe_<name>_<parameter>``).
        family: the report block it belongs to (one Holm family per family).
        parameters: the default parameters; ``check`` decides which others are valid.
        check: returns the parameter (normalised) or raises ``ValueError`` naming the problem.
        describe: a parameter in words (the condition's description).
        donor: the donor tier it needs (:data:`DONOR_TIERS`), a function of the parameter giving
            one, or None (no donor; ``donor`` is then always None).
        label: the parameter as it appears in condition ids (:func:`default_label`).
    """
    tier = donor if callable(donor) else (lambda _p, _t=donor: _t)

    def decorate(func: ProbeFunction) -> ProbeFunction:
        func.sceval_probe = ProbeSpec(  # type: ignore[attr-defined]
            name, family, func, tuple(check(p) for p in parameters), check, tier, describe, label
        )
        return func

    return decorate


class ProbeRegistry(Registry[ProbeSpec]):
    """Name -> :class:`ProbeSpec`, filled by ``sceval_register_probes`` hooks."""

    def __init__(self) -> None:
        super().__init__("probe")

    def add(self, func: Callable[..., Any] | ProbeSpec) -> ProbeSpec:
        """Register a function decorated with :func:`probe` (or a ready spec); a clash or an
        unknown family raises PluginError."""
        spec = func if isinstance(func, ProbeSpec) else getattr(func, "sceval_probe", None)
        if not isinstance(spec, ProbeSpec):
            raise PluginError(
                f"plugin {self.plugin} tried to register {func!r}, which is not decorated with "
                "@sceval_plugin.probe_conditions.probe(...)"
            )
        if spec.family not in PROBE_FAMILIES:
            raise PluginError(f"probe {spec.name!r}: family must be one of {PROBE_FAMILIES}, got {spec.family!r}")
        return self.register(spec.name, replace(spec, plugin=self.plugin))


@functools.cache
def registry() -> ProbeRegistry:
    """Every installed plugin's probes (built once per process)."""
    return fill_registry("sceval_register_probes", ProbeRegistry(), "probes")


def get(name: str) -> ProbeSpec:
    return registry().get(name)


# --- donors -------------------------------------------------------------------------------------


def option_text(s: str) -> str:
    return " ".join(s.lower().split())


def gold_text(item: OmniItem) -> str:
    return option_text(dict(item.options)[item.gold_key])


def option_key_of(item: OmniItem, text: str) -> str | None:
    """The key of ``item``'s option whose text is ``text`` (case and spacing ignored), if any."""
    return next((k for k, t in item.options if option_text(t) == text), None)


class DonorPicker:
    """The documented way a probe gets a second item: ``picker(sample_id, call, seed)``.

    A pure function of (sample id, probe call, seed) over the items of the dataset being run:
    the candidates of the call's tier, in sample-id order, indexed by a BLAKE2b seed of
    (sample id, probe call, seed) (:func:`sceval_plugin.operators.variant_seed`). The task builds
    each trial's row with the picker of its dataset and stores the choice in the row; rendering a
    row replays it (:func:`fixed_donor`), so the model and the record see the same donor.
    """

    def __init__(self, items: Sequence[OmniItem]) -> None:
        self.items = tuple(sorted(items, key=lambda it: it.sample_id))
        self._by_id = {it.sample_id: it for it in self.items}

    def candidates(self, item: OmniItem, tier: str) -> list[OmniItem]:
        """The donors ``tier`` allows for ``item`` (never the item itself):

        - ``random``: any other item;
        - ``category``: the same source and category (``category`` field; same source when the
          items have none);
        - ``answer`` (answer-matched): media of the same kind (image / frame list / video), a
          gold answer whose text differs from the item's and is one of the item's options, so
          that "the answer follows the donor" is a choice the model can make (G.9);
        - ``unrelated`` (G.11's distractors): another source or category when there is one,
          else any other item.
        """
        others = [d for d in self.items if d.sample_id != item.sample_id]
        if tier == "random":
            return others
        if tier == "category":
            return [d for d in others if (d.source, d.category) == (item.source, item.category)]
        if tier == "answer":
            gold = gold_text(item)
            return [
                d
                for d in others
                if d.visual_kind == item.visual_kind
                and gold_text(d) != gold
                and option_key_of(item, gold_text(d)) is not None
            ]
        if tier == "unrelated":
            return [d for d in others if (d.source, d.category) != (item.source, item.category)] or others
        raise ValueError(f"unknown donor tier {tier!r}; tiers: {DONOR_TIERS}")

    def __call__(self, sample_id: str, call: ProbeCall, seed: int) -> OmniItem | None:
        tier = get(call.name).donor_tier(call.parameter)
        if tier is None:
            return None
        pool = self.candidates(self._by_id[sample_id], tier)
        if not pool:
            return None
        return pool[variant_seed(sample_id, f"donor:{call.id}", 0, seed) % len(pool)]


def fixed_donor(donor: OmniItem | None) -> Callable[[str, ProbeCall, int], OmniItem | None]:
    """A picker that answers ``donor`` whatever it is asked: a task row replaying its build-time
    choice."""
    return lambda sample_id, call, seed: donor


def apply(
    call: ProbeCall,
    evidence: Evidence,
    *,
    variant: int = 0,
    donors: Callable[[str, ProbeCall, int], OmniItem | None] | None = None,
) -> tuple[Evidence, str | None, str | None]:
    """Run ``call`` on ``evidence``: (evidence shown, donor sample id, not-applicable reason)."""
    spec = get(call.name)
    donor = None
    if spec.donor_tier(call.parameter) is not None:
        if donors is None:
            raise ValueError(f"probe {call.id!r} needs a donor: pass donors=DonorPicker(items of the dataset)")
        donor = donors(evidence.item.sample_id, call, variant)
        if donor is None:
            return evidence, None, "no_donor"
    rng = variant_rng(evidence.item.sample_id, f"probe:{call.id}", 0, variant)
    try:
        return spec.func(evidence, call.parameter, rng, donor), donor and donor.sample_id, None
    except NotApplicable as exc:
        return evidence, donor and donor.sample_id, str(exc.args[0])


# --- the maths ----------------------------------------------------------------------------------


def _one_of(values: Sequence[str]) -> Callable[[Any], str]:
    def check(p: Any) -> str:
        if p not in values:
            raise ValueError(f"parameter must be one of {tuple(values)}, got {p!r}")
        return p

    return check


def _seconds(p: Any) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or p == 0:
        raise ValueError(f"desync shift must be a non-zero number of seconds, got {p!r}")
    return float(p)


def _budget(p: Any) -> int | str:
    if p == "default":
        return p
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise ValueError(f"frame budget must be a positive whole number of frames or 'default', got {p!r}")
    return p


def _derangement(rng: np.random.Generator, n: int) -> np.ndarray:
    """A random order of ``n`` >= 2 things that is not the identity (a shuffle that changes something)."""
    order = rng.permutation(n)
    return np.roll(order, 1) if (order == np.arange(n)).all() else order


def _frame_count(ev: Evidence, least: int, reason: str) -> int:
    n = 0 if ev.frames is None else len(ev.frames)
    if n < least:
        raise NotApplicable(reason)
    return n


def _mismatch(modality: str):
    def replace_modality(ev: Evidence, tier: str, rng: np.random.Generator, donor: OmniItem) -> Evidence:
        """G.9: the modality's evidence replaced by the donor's, the rest of the item kept."""
        if modality == "text":  # the textual evidence: question stem and context (options are kept)
            return replace(ev, question=donor.question, context=donor.context)
        if modality == "vision":
            kind = "image" if donor.visual_kind == "image" else "video frames"
            return replace(ev, frames=donor.frames(), frame_times=donor.frame_times(), visual_kind=kind)
        return replace(ev, audio=donor.waveform())

    return replace_modality


mismatch_text, mismatch_vision, mismatch_audio = (
    probe(
        f"mismatch_{m}",
        family="mismatch",
        parameters=PARAMETERS[f"mismatch_{m}"],
        check=_one_of(("random", "category", "answer")),
        donor=lambda tier: tier,
        describe=lambda tier, m=m: f"{m} evidence replaced by the donor's ({tier} tier, G.9)",
    )(_mismatch(m))
    for m in ("text", "vision", "audio")
)


_MIDDLE_DROP = re.compile(r"middle_drop_([1-9][0-9]*)")
_AUDIO_GAPS = re.compile(r"audio_gaps_([1-9][0-9]*)x([0-9]+(?:p[0-9]+)?)s")


def _temporal_kind(p: Any) -> str:
    """A temporal kind: one of Table 17's, or ``middle_drop_<k>`` / ``audio_gaps_<n>x<s>s``."""
    if p in PARAMETERS["temporal"] or isinstance(p, str) and (_MIDDLE_DROP.fullmatch(p) or _gaps(p)):
        return p
    raise ValueError(
        f"temporal kind must be one of {PARAMETERS['temporal']}, middle_drop_<frames> or "
        f"audio_gaps_<count>x<seconds>s (e.g. audio_gaps_2x0p25s), got {p!r}"
    )


def _gaps(kind: str) -> tuple[int, float] | None:
    """(count, seconds) of an ``audio_gaps`` kind; None for another kind."""
    if kind == "audio_gaps":
        return AUDIO_GAPS
    m = _AUDIO_GAPS.fullmatch(kind)
    return (
        (int(m.group(1)), float(m.group(2).replace("p", ".")))
        if m and float(m.group(2).replace("p", ".")) > 0
        else None
    )


def _describe_temporal(kind: str) -> str:
    gaps = _gaps(kind)
    if gaps:
        return f"{gaps[0]} silent gap(s) of {gaps[1]:g} s inserted in the audio (G.10)"
    if kind.startswith("middle_drop"):
        k = _MIDDLE_DROP.fullmatch(kind)
        return (
            f"the middle {k.group(1)} frame(s) dropped"
            if k
            else f"the middle {MIDDLE_DROP_FRACTION:.0%} of the frames dropped"
        ) + " (G.10)"
    return {
        "frame_shuffle": "frames in a random order",
        "frame_reverse": "frames reversed",
        "audio_shuffle": f"audio cut in {AUDIO_SEGMENT_S:g} s segments, shuffled",
    }[kind] + " (G.10)"


@probe(
    "temporal", family="temporal", parameters=PARAMETERS["temporal"], check=_temporal_kind, describe=_describe_temporal
)
def temporal(ev: Evidence, kind: str, rng: np.random.Generator, donor: None) -> Evidence:
    """G.10's temporal probes ("shuffle frames, reverse frame order, and drop middle frames ...
    shuffle audio segments or insert local gaps"). Frame times (stated for video frames) stay in
    clip order: they say where the frames were, not where the shuffled ones came from; dropped
    frames take their times along.

    ``middle_drop``: the paper does not say how many frames; we drop the middle
    :data:`MIDDLE_DROP_FRACTION` of them (rounded, at least one), centred, keeping the first and
    the last (8 frames: the 3rd-5th; 5 frames: the 2nd-3rd); ``middle_drop_<k>`` drops k (k = 1:
    the single middle frame ``N // 2``, this project's earlier reading). ``audio_gaps``: the paper
    does not say how many or how long; we insert :data:`AUDIO_GAPS` (3 gaps of 0.5 s) of silence at
    distinct random points of the clip, which grows by their length: what follows a gap comes
    later (silencing stretches in place would be the ``mute`` corruption instead);
    ``audio_gaps_<n>x<s>s`` inserts n gaps of s seconds."""
    gaps = _gaps(kind)
    if gaps:
        return _insert_gaps(ev, *gaps, rng)
    if kind == "audio_shuffle":
        return _shuffle_audio(ev, rng)
    if kind.startswith("middle_drop"):
        return _drop_middle_frames(ev, kind)
    n = _frame_count(ev, 2, "single_frame")
    order = _derangement(rng, n) if kind == "frame_shuffle" else np.arange(n)[::-1]
    return replace(ev, frames=ev.frames[order])


def _insert_gaps(ev: Evidence, count: int, seconds: float, rng: np.random.Generator) -> Evidence:
    """``count`` gaps of ``seconds`` of silence inserted at distinct random points of the audio."""
    if ev.audio is None or len(ev.audio) <= count:
        raise NotApplicable("audio_too_short")
    at = np.sort(rng.choice(np.arange(1, len(ev.audio)), size=count, replace=False))
    silence = np.zeros(int(round(seconds * ev.sample_rate)), ev.audio.dtype)
    parts = np.split(ev.audio, at)
    return replace(ev, audio=np.concatenate([x for part in parts[:-1] for x in (part, silence)] + [parts[-1]]))


def _shuffle_audio(ev: Evidence, rng: np.random.Generator) -> Evidence:
    """The audio cut in :data:`AUDIO_SEGMENT_S` segments, put in a deranged order."""
    seg = int(round(AUDIO_SEGMENT_S * ev.sample_rate))
    count = 0 if ev.audio is None else math.ceil(len(ev.audio) / seg)
    if count < 2:
        raise NotApplicable("audio_too_short")
    parts = [ev.audio[i * seg : (i + 1) * seg] for i in range(count)]
    return replace(ev, audio=np.concatenate([parts[i] for i in _derangement(rng, count)]))


def _drop_middle_frames(ev: Evidence, kind: str) -> Evidence:
    """``middle_drop`` / ``middle_drop_<k>`` (see :func:`temporal`); frame times go with their frames."""
    n = 0 if ev.frames is None else len(ev.frames)
    fixed = _MIDDLE_DROP.fullmatch(kind)
    k = int(fixed.group(1)) if fixed else max(1, round(n * MIDDLE_DROP_FRACTION))
    if n - k < 2:
        raise NotApplicable("too_few_frames")
    start = n // 2 if k == 1 else (n - k) // 2
    keep = [i for i in range(n) if not start <= i < start + k]
    times = None if ev.frame_times is None else tuple(ev.frame_times[i] for i in keep)
    return replace(ev, frames=ev.frames[keep], frame_times=times)


@probe(
    "desync",
    family="desync",
    parameters=PARAMETERS["desync"],
    check=_seconds,
    label=lambda s: f"{'minus' if s < 0 else 'plus'}{abs(s):g}s".replace(".", "p"),
    describe=lambda s: f"audio {'delayed' if s > 0 else 'advanced'} by {abs(s):g} s against the frames (G.10)",
)
def desync(ev: Evidence, shift_s: float, rng: np.random.Generator, donor: None) -> Evidence:
    """G.10: the audio shifted by ``shift_s`` seconds (+: later, so it starts with silence; -:
    earlier, so its head is cut and silence ends it); the clip keeps its duration."""
    if ev.audio is None:
        return ev
    n, k = len(ev.audio), min(len(ev.audio), int(round(abs(shift_s) * ev.sample_rate)))
    out = np.zeros_like(ev.audio)
    if shift_s > 0:
        out[k:] = ev.audio[: n - k]
    else:
        out[: n - k] = ev.audio[k:]
    return replace(ev, audio=out)


@probe(
    "frame_budget",
    family="frame_budget",
    parameters=PARAMETERS["frame_budget"],
    check=_budget,
    describe=lambda b: (
        "the model's default frames (the protocol's F.2 decode)"
        if b == "default"
        else f"{b} frame(s) sampled uniformly (G.10)"
    ),
)
def frame_budget(ev: Evidence, budget: int | str, rng: np.random.Generator, donor: None) -> Evidence:
    """G.10's frame budget. A video is decoded again with exactly ``budget`` frames, frame *i* at
    ``i * duration / budget`` (F.2's uniform rule without its 1 fps cap); a frame list keeps the
    frames at ``floor(i * N / budget)`` (the same rule on the list) and, asked for more frames than
    it has, all of them (frames cannot be invented). ``"default"`` is what the model gets without
    a budget: our adapters all receive the protocol's frames (F.2: 1 fps, at most 8), so it equals
    clean; a model that samples a native video itself would be run on that video instead."""
    if ev.item.visual_kind == "image":
        raise NotApplicable("single_frame")
    if budget == "default" or ev.frames is None:
        return ev
    if ev.item.visual_kind == "video":
        decoded = ev.item.frames_at_budget(budget)
        return replace(ev, frames=decoded.frames, frame_times=decoded.times)
    n = len(ev.frames)
    if budget >= n:
        return ev
    return replace(ev, frames=ev.frames[[i * n // budget for i in range(budget)]])


@probe(
    "key_frame",
    family="key_frame",
    parameters=PARAMETERS["key_frame"],
    check=_one_of(PARAMETERS["key_frame"]),
    describe=lambda p: f"key frame moved to the {p} position (G.10)",
)
def key_frame(ev: Evidence, position: str, rng: np.random.Generator, donor: None) -> Evidence:
    """G.10: the item's key frame (``key_frame_index``) moved to the first, middle (index
    ``(N - 1) // 2``) or last position; the other frames keep their order and the frame set is
    unchanged. Stated frame times stay in clip order."""
    if ev.item.key_frame_index is None:
        raise NotApplicable("no_key_frame")
    n = _frame_count(ev, 2, "single_frame")
    k = ev.item.key_frame_index
    order = [i for i in range(n) if i != k]
    order.insert({"first": 0, "middle": (n - 1) // 2, "last": n - 1}[position], k)
    return replace(ev, frames=ev.frames[order])


def _fitted(frame: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    from PIL import Image

    if frame.shape == shape:
        return frame
    return np.asarray(Image.fromarray(frame).resize((shape[1], shape[0]), Image.Resampling.BILINEAR))


def evidence_needs(item: OmniItem) -> set[str]:
    """The modalities an item's question needs, from ``hidden.evidence_modality`` (App. D's
    normalised record), :data:`ASSUMED_EVIDENCE` when it does not say: {"text", "visual", "audio"}."""
    stated = item.hidden.get("evidence_modality")
    needs = set((stated if stated and stated != "unknown" else ASSUMED_EVIDENCE).split("+"))
    if not needs <= {"text", "visual", "audio"}:
        raise field_error(
            item.sample_id,
            "hidden.evidence_modality",
            f"{stated!r} is not 'unknown' or text, visual, audio joined by '+'",
        )
    return needs


def _distractor_donor(kind: str) -> str | None:
    return None if kind == "text" else "unrelated"


def _describe_distractor(kind: str) -> str:
    return {
        "audio": "an unrelated item's audio in place of the audio of an item that needs none",
        "image": "an unrelated item's frames in place of the visual of an item that needs none",
        "text": "misleading text (a wrong option named) as the textual evidence of an item that needs none",
        "appended_audio": "an unrelated item's audio appended after the item's own",
        "appended_frame": "an unrelated item's middle frame appended after the item's frames",
        "appended_text": "an unrelated item's context (else question) appended to the item's context",
    }[kind] + " (G.11)"


@probe(
    "distractor",
    family="distractor",
    parameters=PARAMETERS["distractor"],
    check=_one_of(PARAMETERS["distractor"] + OPTIONS["distractor"]),
    donor=_distractor_donor,
    describe=_describe_distractor,
)
def distractor(ev: Evidence, kind: str, rng: np.random.Generator, donor: OmniItem | None) -> Evidence:
    """G.11: "insert an unrelated but structurally clean modality into otherwise sufficient inputs:
    unrelated audio into text-visual examples, unrelated frames into text-audio examples, or
    misleading text into visual-audio examples". A SCEval item carries all three channels, so a
    "text-visual example" is an item whose evidence (:func:`evidence_needs`) does not need its
    audio: ``audio`` shows it with an unrelated donor's audio in place of its own; ``image`` an
    item that does not need its visual, with the donor's frames (all of them, at the donor's times)
    in place of its own; ``text`` an item that does not need its text beyond question and options,
    with :data:`MISLEADING_TEXT` naming one of its wrong options (drawn per sample and variant) as
    its context. An item whose evidence needs that modality is not an otherwise sufficient input:
    not applicable (``needs_audio`` / ``needs_visual`` / ``needs_text``).

    Named options (:data:`OPTIONS`), the project's earlier reading, add to an item that keeps all
    its evidence: ``appended_audio`` the donor's audio after the clip (with
    :data:`DISTRACTOR_GAP_S` of silence between), ``appended_frame`` the donor's middle frame after
    the frames (resized to theirs; frame times then not stated), ``appended_text`` the donor's
    context (else its question) as a sentence after the item's context."""
    needs = evidence_needs(ev.item)
    if kind == "audio":
        if "audio" in needs:
            raise NotApplicable("needs_audio")
        return replace(ev, audio=donor.waveform())
    if kind == "image":
        if "visual" in needs:
            raise NotApplicable("needs_visual")
        return replace(
            ev,
            frames=donor.frames(),
            frame_times=donor.frame_times(),
            visual_kind="image" if donor.visual_kind == "image" else "video frames",
        )
    if kind == "text":
        if "text" in needs:
            raise NotApplicable("needs_text")
        wrong = [text for key, text in ev.item.options if key != ev.item.gold_key]
        return replace(ev, context=MISLEADING_TEXT.format(option=wrong[int(rng.integers(len(wrong)))].strip()))
    if kind == "appended_audio":
        gap = np.zeros(int(DISTRACTOR_GAP_S * SAMPLE_RATE), np.float32)
        return ev if ev.audio is None else replace(ev, audio=np.concatenate([ev.audio, gap, donor.waveform()]))
    if kind == "appended_frame":
        if ev.frames is None:
            return ev
        extra = donor.frames()[len(donor.frames()) // 2]
        return replace(
            ev,
            frames=np.concatenate([ev.frames, _fitted(extra, ev.frames.shape[1:])[None]]),
            frame_times=None,
            visual_kind="video frames",
        )
    sentence = (donor.context or donor.question).strip()
    return replace(ev, context=f"{ev.context.strip()} {sentence}".strip())


# --- the plugin -------------------------------------------------------------------------------

BUILTIN_PROBES = (mismatch_text, mismatch_vision, mismatch_audio, temporal, desync, frame_budget, key_frame, distractor)


def probe_condition(name: str, parameter: Any, *, suites: tuple[str, ...] = ()) -> Condition:
    """The condition running probe ``name`` at ``parameter`` (id ``probe_<name>_<parameter>``);
    ``suites=("probe_option",)`` for another reading than Table 17's (:data:`OPTIONS`)."""
    call = ProbeCall(name, parameter).checked()
    return Condition(
        f"probe_{call.id}", "probe", probe=call, suites=suites, description=get(name).describe(call.parameter)
    )


@hookimpl
def sceval_register_probes(registry: ProbeRegistry) -> None:
    for func in BUILTIN_PROBES:
        registry.add(func)


@hookimpl
def sceval_register_conditions(registry: ConditionRegistry) -> None:
    for func in BUILTIN_PROBES:
        for parameter in func.sceval_probe.parameters:  # PARAMETERS, checked
            registry.add(probe_condition(func.sceval_probe.name, parameter))
        for parameter in OPTIONS.get(func.sceval_probe.name, ()):
            registry.add(probe_condition(func.sceval_probe.name, parameter, suites=("probe_option",)))
