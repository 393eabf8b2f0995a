"""The C3PO template registry: what each kind of item asks and which modalities it needs.

A template fixes the logical form of its items: which modality carries which piece of the
answer (Information Composition) or which modality is misleading and what makes the truth
recoverable (Counterfactual Conflict). The 25 built-ins are the paper's (Table 13: name,
category, tier; Table 1(b): modalities per tier; the logic summarised in our words from the
paper's descriptions and template names). They register through the same hook as a third
party's templates (:mod:`c3po_plugin.hookspecs`).

Tiers (Table 1(b)): tier 1 has no video (audio and image, one of them the base), tier 2 has no
image (video is the base), tiers 3 and 4 have all four modalities. Appendix G's example puts
InstructionalGapDetection (tier 1) on a muted video instead of an image; we follow the
appendix for that template, so its items need video, audio and text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from c3po_plugin.hookspecs import hookimpl
from c3po_plugin.plugins import HOST
from faultline_eval.core.registry import PluginError, Registry

CATEGORIES = {"ic": "Information Composition", "cc": "Counterfactual Conflict"}
MODALITIES = ("video", "audio", "image", "text")
TIER_MODALITIES = {
    1: frozenset({"audio", "image", "text"}),
    2: frozenset({"video", "audio", "text"}),
    3: frozenset(MODALITIES),
    4: frozenset(MODALITIES),
}
TIERS = tuple(TIER_MODALITIES)


def snake(name: str) -> str:
    """``AttributeComposition`` -> ``attribute_composition``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


@dataclass(frozen=True)
class Template:
    """One item template.

    ``modalities`` defaults to the tier's (Table 1(b)); a template may name its own set, which
    then is what its items are checked against. ``paper_count`` is the item count in Table 13
    (None for templates that are not the paper's). ``aliases`` are other ids accepted wherever
    a template id is: the built-ins' are the paper's (:data:`PAPER_IDS`).
    """

    id: str
    name: str
    category: str  # "ic" or "cc"
    tier: int
    base_modality: str
    logical_form: str
    modalities: frozenset[str] = frozenset()
    paper_count: int | None = None
    plugin: str = field(default="", compare=False)
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(
                f"template {self.name!r}: category must be one of {sorted(CATEGORIES)}, got {self.category!r}"
            )
        if self.tier not in TIER_MODALITIES:
            raise ValueError(f"template {self.name!r}: tier must be one of {TIERS}, got {self.tier!r}")
        if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", self.name):
            raise ValueError(f"template name {self.name!r} must be CamelCase letters and digits")
        mods = frozenset(self.modalities) or TIER_MODALITIES[self.tier]
        unknown = mods - set(MODALITIES)
        if unknown or "text" not in mods:
            raise ValueError(f"template {self.name!r}: modalities must include text and be among {MODALITIES}")
        if self.base_modality not in mods:
            raise ValueError(
                f"template {self.name!r}: base modality {self.base_modality!r} is not among its modalities"
            )
        object.__setattr__(self, "modalities", mods)

    @property
    def snake_name(self) -> str:
        return snake(self.name)

    @property
    def task_name(self) -> str:
        return f"c3po_{self.snake_name}"

    @property
    def category_name(self) -> str:
        return CATEGORIES[self.category]

    @property
    def media(self) -> tuple[str, ...]:
        """The media files its items carry, in the order models receive them."""
        return tuple(m for m in ("video", "image", "audio") if m in self.modalities)


class TemplateRegistry(Registry[Template]):
    """Templates by id, also found by name, task name (``attribute_composition``) and alias (the
    paper's id, ``D_T1_002``); all of those are unique. Filled by the ``c3po_register_templates``
    hook."""

    def __init__(self) -> None:
        super().__init__("template id", unknown="C3PO template")

    def add(self, template: Template) -> Template:
        """Register ``template``; a clash of any of its keys, or a name whose task would shadow
        a category or tier task, raises PluginError."""
        template = replace(template, plugin=self.plugin)
        if re.fullmatch(r"all|ic|cc|(ic|cc)_t\d+", template.snake_name):
            raise PluginError(
                f"template name {template.name!r} ({template.plugin}) would shadow the task "
                f"c3po_{template.snake_name}; choose another name"
            )
        keys = {
            template.name: "template name",
            template.snake_name: "template task name",
            **dict.fromkeys(template.aliases, "template id"),
        }
        return self.register(template.id, template, aliases=keys)

    def __iter__(self) -> Iterator[Template]:
        return iter(sorted(super().__iter__(), key=lambda t: (t.category != "ic", t.tier, t.id)))

    def cells(self) -> list[tuple[str, int]]:
        """(category, tier) pairs that have at least one template."""
        return sorted({(t.category, t.tier) for t in self}, key=lambda c: (c[0] != "ic", c[1]))


@functools.lru_cache(maxsize=1)
def registry() -> TemplateRegistry:
    """Every registered template (built-ins and plugins), built once per process."""
    return HOST.fill_registry("c3po_register_templates", TemplateRegistry(), "templates")


#: The paper's template ids. App. G / App. I give the first two; the rest follow their scheme
#: ``{D|C}_T{tier}_{nnn}`` (see :mod:`c3po_plugin.construction.specs`).
PAPER_IDS = {
    "IC02": "D_T1_001",
    "CC07": "C_T2_004",
    "IC01": "D_T1_002",
    "IC03": "D_T1_003",
    "IC04": "D_T1_004",
    "IC05": "D_T1_005",
    "IC06": "D_T1_006",
    "IC07": "D_T2_001",
    "IC08": "D_T2_002",
    "IC09": "D_T2_003",
    "IC10": "D_T2_004",
    "IC11": "D_T3_001",
    "CC01": "C_T1_001",
    "CC02": "C_T1_002",
    "CC03": "C_T1_003",
    "CC04": "C_T1_004",
    "CC05": "C_T1_005",
    "CC06": "C_T1_006",
    "CC08": "C_T2_001",
    "CC09": "C_T2_002",
    "CC10": "C_T2_003",
    "CC11": "C_T2_005",
    "CC12": "C_T3_001",
    "CC13": "C_T3_002",
    "CC14": "C_T4_001",
}


def _t(id: str, name: str, tier: int, base: str, count: int, logic: str, modalities: tuple[str, ...] = ()) -> Template:
    return Template(id, name, id[:2].lower(), tier, base, logic, frozenset(modalities), count, aliases=(PAPER_IDS[id],))


BUILTIN = (
    # Information Composition: each modality holds part of the answer; only their combination answers.
    _t(
        "IC01",
        "AttributeComposition",
        1,
        "image",
        200,
        "The image shows several candidates that differ in their attributes; the audio names the attribute "
        "that selects one of them; the question asks for another attribute of the selected candidate.",
    ),
    _t(
        "IC02",
        "InstructionalGapDetection",
        1,
        "video",
        164,
        "A muted video shows a whole procedure; the audio narrates it from a middle step onwards as if that "
        "were the start; the question asks for the step(s) shown but never narrated.",
        ("video", "audio", "text"),
    ),
    _t(
        "IC03",
        "OffScreenCausality",
        1,
        "image",
        31,
        "The image shows a scene whose state has an invisible cause; the audio carries the sound of an event "
        "outside the frame; the question asks what caused the visible state.",
    ),
    _t(
        "IC04",
        "QuantitativeVerification",
        1,
        "image",
        185,
        "The image shows several groups of countable items, each with its own count and a visible identity; the "
        "audio states the amount that is required; the question asks which group holds exactly that amount, "
        "verified by counting rather than arithmetic.",
    ),
    _t(
        "IC05",
        "SpatialConfiguration",
        1,
        "image",
        48,
        "The image shows an arrangement of objects; the audio describes a location relative to a landmark; "
        "the question asks what is at that location.",
    ),
    _t(
        "IC06",
        "TemporalSequencing",
        1,
        "audio",
        64,
        "The audio lays out events in order; the image shows the state at one moment; the question asks what "
        "came immediately before or after the moment shown.",
    ),
    _t(
        "IC07",
        "ContextualReinterpretation",
        2,
        "video",
        111,
        "The video shows an action that is ambiguous on its own; the audio supplies the context that fixes its "
        "meaning; the question asks for the action's purpose or meaning under that context.",
    ),
    _t(
        "IC08",
        "FeatureTracking",
        2,
        "video",
        100,
        "The video shows several similar objects moving; the audio singles one out by a feature visible early "
        "on; the question asks where that object ends up or what happens to it.",
    ),
    _t(
        "IC09",
        "LiveEventAttribution",
        2,
        "video",
        101,
        "The video shows several possible sources; the audio contains a sound event at one moment; the question "
        "asks which source produced it, found by aligning the sound with the visible action.",
    ),
    _t(
        "IC10",
        "SilentOutcomeInference",
        2,
        "video",
        312,
        "The video shows an action with two or more visibly different possible outcomes but cuts before its "
        "result; the audio carries the sound of the outcome that happened, not the one the motion makes most "
        "likely; the question asks for the outcome by what only the video shows (which one, by colour or place).",
    ),
    _t(
        "IC11",
        "ReferenceObjectAppearance",
        3,
        "video",
        47,
        "The image shows a reference object; the video shows several objects over time; the audio adds the "
        "selector (which appearance, what to report); the question asks about the reference object's "
        "appearance in the video.",
    ),
    # Counterfactual Conflict: one modality contradicts the others; the item signals which to trust.
    _t(
        "CC01",
        "AttributeAuthorityArbitration",
        1,
        "image",
        36,
        "The image and the audio give different values of one attribute; the question's framing points to the "
        "authoritative source (e.g. a printed label over a spoken guess); the answer is that source's value.",
    ),
    _t(
        "CC02",
        "ContainerContentDispute",
        1,
        "image",
        137,
        "The image shows a container and what is visibly inside; the audio asserts different contents; the "
        "question asks what the container actually holds.",
    ),
    _t(
        "CC03",
        "LiveVsRecorded",
        1,
        "image",
        138,
        "The audio is a recording made earlier; the image shows the current state, which contradicts it; the "
        "question asks about the present state.",
    ),
    _t(
        "CC04",
        "OutdatedVisualEvidence",
        1,
        "image",
        224,
        "The image shows an outdated state (an old sign, notice or display); the audio gives a more recent "
        "update; the question asks for the current status, so the newer source wins.",
    ),
    _t(
        "CC05",
        "QuantitativeFabrication",
        1,
        "image",
        181,
        "The image shows a countable quantity; the audio confidently states a wrong number; the question asks "
        "for the actual quantity.",
    ),
    _t(
        "CC06",
        "TemporalContextArbitration",
        1,
        "image",
        13,
        "The image and the audio imply different times (clock, light, calendar versus a spoken time); the "
        "question's temporal framing decides which is right; the answer is the time it supports.",
    ),
    _t(
        "CC07",
        "AcousticSceneMismatch",
        2,
        "video",
        97,
        "The soundscape suggests one place or situation; the video shows another; the question asks where the "
        "scene is or what is happening, which the video settles.",
    ),
    _t(
        "CC08",
        "CausalMisattribution",
        2,
        "video",
        359,
        "The video shows an event triggered by a visible mechanism; the audio confidently attributes it to a "
        "different cause that is absent from the video; the question asks for the cause.",
    ),
    _t(
        "CC09",
        "HistoricalVsPresent",
        2,
        "video",
        154,
        "The audio describes how the place or object used to be; the video shows it now; the question asks "
        "about one of the two times, and only the matching modality answers it.",
    ),
    _t(
        "CC10",
        "LiveNarrationMismatch",
        2,
        "video",
        57,
        "A running commentary describes actions that differ from what the video shows; the question asks what "
        "actually happened.",
    ),
    _t(
        "CC11",
        "ProcedureVsEvidence",
        2,
        "video",
        190,
        "The audio recites the proper procedure; the video shows it being done differently (a step skipped, "
        "swapped or changed); the question asks what was actually done.",
    ),
    _t(
        "CC12",
        "DisclaimedEvidence",
        3,
        "video",
        172,
        "The video shows which object is meant and a value from a source the audio explicitly disclaims "
        "(illustrative, a prop, not to scale); the image records a different, true value for it among other "
        "objects; the question asks for the true value.",
    ),
    _t(
        "CC13",
        "MeasurementAuthorityChain",
        3,
        "video",
        120,
        "Video, image and audio report different measurements; a chain of authority (calibration, certification, "
        "recency) makes one of them binding; the question asks for the binding measurement.",
    ),
    _t(
        "CC14",
        "ComplianceReportingBias",
        4,
        "video",
        163,
        "A stated rule or precondition (text), the posted policy (image) and the observed behaviour (video) are "
        "set against a biased spoken report claiming compliance (audio); the question asks what was actually "
        "done (which requirement went unmet).",
    ),
)


@hookimpl
def c3po_register_templates(registry: TemplateRegistry) -> None:
    for template in BUILTIN:
        registry.add(template)
