"""Generation specs of the C3PO templates (paper App. G): what the build's generator is handed.

A :class:`GenerationSpec` has App. G's fields: ``template_id`` (the project's id, e.g. ``IC02``),
``aliases`` (the paper's ids, e.g. ``D_T1_001``), ``template_name``, ``category`` (App. G writes
``"DISPERSAL (Tier 1)"``; Counterfactual Conflict templates ``"COUNTERFACTUAL (Tier n)"``),
``base_modality``, ``logical_form``, ``example_scenario`` and ``generation_spec``, a dict keyed
by modality. The base modality's entry holds ``source_dataset`` (App. A), ``selection_filter``
(``requirement``: the sentence; ``match``: what :func:`c3po_plugin.build.select.candidates_for`
checks, keys ``tags_any``, ``tags_all``, ``min_duration_s``, ``max_duration_s``, ``has_audio``,
``min_side_px``), ``processing`` (the sentence) and ``actions`` (``mute``, ``extract_audio``,
``clip:<a>-<b>``, ``clip_max:<s>``, ``keep``); each generated modality ``source_type``,
``content_logic`` and ``constraints``; ``text`` the ``query_skeleton``.

Where the words come from:

- **Verbatim from the paper**: the whole spec of ``InstructionalGapDetection`` (App. G, id
  ``D_T1_001``: logical form, example, source datasets, filter requirement, processing, audio
  logic and constraints, query skeleton), the id ``C_T2_004`` of ``AcousticSceneMismatch``
  (App. I's second example), the names, categories, tiers and base modalities (Table 1, Table 13)
  and the source dataset list (App. A).
- **Ours**: every other template's spec, written in App. G's shape from the paper's template
  descriptions (§3.1.2) and our template logic (:mod:`c3po_plugin.templates`), which is also the
  logical form of those templates; the machine ``match`` filters and ``actions`` of all 25; and
  the paper ids other than the two above. Those follow App. G's scheme ``{D|C}_T{tier}_{nnn}``
  (D: dispersal = Information Composition, C: counterfactual), numbered in Table 13 order within
  each (category, tier) around the number the paper fixed.

Pool annotations use ``tags`` from :data:`TAGS` (a base item may carry any others too).

Third-party templates supply their spec through the template hook: ``Template`` itself knows
nothing of generation, so a plugin implements ``c3po_register_generation_specs(registry)`` (see
:mod:`c3po_plugin.hookspecs`) and calls ``registry.add(GenerationSpec(...))``. A template without a
spec is named and skipped by the build (:func:`resolve`), never a crash.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Iterable

from c3po_plugin.hookspecs import hookimpl

#: Base-item tags the built-in specs filter on (``selection_filter.match``).
TAGS = ("procedure", "kitchen", "objects", "counting", "text", "sign", "container", "clock", "outdoor",
        "motion", "action", "interaction", "sound_source", "fail", "place", "speech")


@dataclass(frozen=True)
class GenerationSpec:
    template_id: str
    template_name: str
    category: str
    base_modality: str
    logical_form: str
    example_scenario: str
    generation_spec: dict[str, Any]
    aliases: tuple[str, ...] = ()
    plugin: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        base = self.generation_spec.get(self.base_modality)
        where = f"generation spec of {self.template_id} ({self.template_name})"
        if not isinstance(base, dict) or not isinstance(base.get("selection_filter"), dict):
            raise ValueError(f"{where}: generation_spec[{self.base_modality!r}] needs a selection_filter")
        from c3po_plugin.build.select import check_spec  # the one vocabulary: select's matcher, processing's actions

        check_spec(self)
        if "query_skeleton" not in self.generation_spec.get("text", {}):
            raise ValueError(f"{where}: generation_spec['text'] needs a query_skeleton")

    def prompt_json(self) -> dict:
        """The template as App. I's ``{TEMPLATE}`` slot shows it: App. G's fields, paper id first,
        without our machine keys (``selection_filter.match``, ``actions``)."""
        shown = {}
        for modality, entry in self.generation_spec.items():
            entry = {k: v for k, v in entry.items() if k != "actions"}
            if isinstance(entry.get("selection_filter"), dict):
                entry["selection_filter"] = {k: v for k, v in entry["selection_filter"].items() if k != "match"}
            shown[modality] = entry
        return {"template_id": self.paper_id, "template_name": self.template_name, "category": self.category,
                "base_modality": self.base_modality, "logical_form": self.logical_form,
                "example_scenario": self.example_scenario, "generation_spec": shown}

    @property
    def paper_id(self) -> str:
        return self.aliases[0] if self.aliases else self.template_id


class SpecRegistry:
    """Specs by template id and by alias; filled by the ``c3po_register_generation_specs`` hook."""

    def __init__(self) -> None:
        self._by_id: dict[str, GenerationSpec] = {}
        self._plugin = "<direct>"

    def add(self, spec: GenerationSpec) -> GenerationSpec:
        from dataclasses import replace

        from sceval_plugin.plugins import PluginError

        spec = replace(spec, plugin=self._plugin)
        for key in (spec.template_id, *spec.aliases):
            if key in self._by_id:
                raise PluginError(f"generation spec id {key!r} is registered by two plugins: "
                                  f"{self._by_id[key].plugin} and {spec.plugin}")
            self._by_id[key] = spec
        return spec

    def find(self, key: str) -> GenerationSpec | None:
        return self._by_id.get(key)

    def __iter__(self):
        seen = {id(s): s for s in self._by_id.values()}
        return iter(sorted(seen.values(), key=lambda s: s.template_id))


@functools.lru_cache(maxsize=1)
def registry() -> SpecRegistry:
    from c3po_plugin.plugins import HOST

    return HOST.fill_registry("c3po_register_generation_specs", SpecRegistry(), "generation specs")


def template_id(key: str) -> str:
    """The project's template id for an id, a name or a paper id (``D_T1_001``)."""
    from c3po_plugin.templates import registry as templates

    spec = registry().find(key)
    if spec is not None:
        return spec.template_id
    return templates().get(key).id


def spec_for(key: str) -> GenerationSpec:
    """The spec of a template given by id, name or paper id; KeyError naming it if it has none."""
    spec = registry().find(template_id(key))
    if spec is None:
        raise KeyError(f"C3PO template {key!r} has no generation spec (register one through "
                       "c3po_register_generation_specs)")
    return spec


def all_specs() -> list[GenerationSpec]:
    return list(registry())


def resolve(templates: Iterable[str] | None) -> tuple[list[GenerationSpec], list[str]]:
    """(specs to build, template ids skipped because they have no spec) for a stage's
    ``templates`` argument; None means every registered template."""
    from c3po_plugin.templates import registry as template_registry

    keys = [t.id for t in template_registry()] if templates is None else [template_id(k) for k in templates]
    found, skipped = [], []
    for key in dict.fromkeys(keys):
        spec = registry().find(key)
        (found.append(spec) if spec is not None else skipped.append(key))
    return found, skipped


# --- the 25 built-in specs ---------------------------------------------------------------------

PAPER_IDS = {  # App. G / App. I give the first two; the rest follow their scheme (see the docstring)
    "IC02": "D_T1_001", "CC07": "C_T2_004",
    "IC01": "D_T1_002", "IC03": "D_T1_003", "IC04": "D_T1_004", "IC05": "D_T1_005", "IC06": "D_T1_006",
    "IC07": "D_T2_001", "IC08": "D_T2_002", "IC09": "D_T2_003", "IC10": "D_T2_004", "IC11": "D_T3_001",
    "CC01": "C_T1_001", "CC02": "C_T1_002", "CC03": "C_T1_003", "CC04": "C_T1_004", "CC05": "C_T1_005",
    "CC06": "C_T1_006", "CC08": "C_T2_001", "CC09": "C_T2_002", "CC10": "C_T2_003", "CC11": "C_T2_005",
    "CC12": "C_T3_001", "CC13": "C_T3_002", "CC14": "C_T4_001",
}
VIDEO_SOURCES = "HowTo100M / EPIC-Kitchens / Ego4D / OOPS"
IMAGE_SOURCES = "Visual Genome / COCO / TextVQA / Visual Counterfact"
TTS, SFX = "generation (TTS)", "generation (SFX, text-to-audio)"
T2I = "generation (text-to-image)"

# id: (scenario, base source, requirement, match, processing, actions,
#      {generated modality: (source_type, content_logic, constraints)}, query skeleton)
_OURS: dict[str, tuple] = {
    "IC01": ("Picture of three mugs (red, blue, green) with different logos. Audio: 'Grab the blue one.' "
             "Text: 'Which logo is on it?' Answer: the blue mug's logo.",
             IMAGE_SOURCES, "Image with several same-kind objects differing in visible attributes.",
             {"tags_any": ["objects"], "min_side_px": 64}, "Keep the image.", ["keep"],
             {"audio": (TTS, "Name the attribute that selects one candidate, never the asked attribute.",
                        "Natural request; no mention of the answer attribute.")},
             "What {{attribute}} does the selected one have?"),
    "IC03": ("Picture of a spilled bowl of water; audio of a cat's meow off frame. Text: 'Why is the floor wet?' "
             "Answer: the cat knocked the bowl over.",
             IMAGE_SOURCES, "Scene whose visible state has a cause outside the frame.",
             {"tags_any": ["objects", "place"]}, "Keep the image.", ["keep"],
             {"audio": (SFX, "The sound of the off-screen event that caused the visible state.",
                        "1-10 s, non-speech, recognisable source.")},
             "What caused {{visible_state}}?"),
    "IC04": ("Picture of four eggs. Audio: 'The recipe needs six eggs.' Text: 'How many more are needed?' "
             "Answer: two.",
             IMAGE_SOURCES, "Image with a countable or measurable quantity.",
             {"tags_any": ["counting", "objects"]}, "Keep the image.", ["keep"],
             {"audio": (TTS, "State a required or expected amount that differs from the visible one.",
                        "No visible count in the speech.")},
             "How many more {{items}} are needed?"),
    "IC05": ("Picture of a shelf. Audio: 'It's just left of the kettle.' Text: 'What is there?' Answer: the jar.",
             IMAGE_SOURCES, "Image with a clear spatial arrangement of distinct objects.",
             {"tags_any": ["objects"]}, "Keep the image.", ["keep"],
             {"audio": (TTS, "Describe a location relative to a visible landmark.",
                        "Never name the object at the location.")},
             "What is at the described spot?"),
    "IC06": ("Audio of a cook listing steps; picture of dough being kneaded. Text: 'What came right before this?' "
             "Answer: adding water.",
             "HowTo100M (audio segments)", "Narrated audio segment listing an ordered sequence of steps or events.",
             {"tags_any": ["procedure", "speech"], "min_duration_s": 4.0},
             "Extract the audio track; clip to the narrated steps.", ["extract_audio", "clip_max:30"],
             {"image": (T2I, "Show the state at one moment of the narrated sequence.",
                        "The depicted step must not be named in the caption's scene text.")},
             "What happened immediately before this?"),
    "IC07": ("Video of someone waving a towel. Audio: a smoke alarm's beep and 'the toast!'. Text: 'Why is she doing "
             "that?' Answer: clearing smoke from the alarm.",
             VIDEO_SOURCES, "Clip of an action whose purpose is ambiguous without context.",
             {"tags_any": ["action", "interaction"], "min_duration_s": 2.0}, "Mute original audio; clip.",
             ["mute", "clip_max:30"],
             {"audio": (TTS, "Supply the context that fixes the action's meaning.",
                        "Never describe the action itself.")},
             "Why is the person doing this?"),
    "IC08": ("Video of three similar cups shuffled; audio: 'follow the chipped one'. Text: 'Where does it end up?' "
             "Answer: on the right.",
             VIDEO_SOURCES, "Clip of several similar objects moving, one with a feature visible early.",
             {"tags_any": ["motion", "objects"], "min_duration_s": 2.0}, "Mute original audio; clip.",
             ["mute", "clip_max:30"],
             {"audio": (TTS, "Single one object out by a feature visible early in the clip.",
                        "Never say where it goes.")},
             "Where does that one end up?"),
    "IC09": ("Video of two people near a door and a phone; a ringtone at 0:03. Text: 'What made that sound?' "
             "Answer: the phone on the table.",
             VIDEO_SOURCES, "Clip with several possible sound sources acting at different moments.",
             {"tags_any": ["sound_source", "interaction"], "min_duration_s": 2.0}, "Mute original audio; clip.",
             ["mute", "clip_max:30"],
             {"audio": (SFX, "One sound event aligned with one source's visible action.",
                        "1-10 s; the source must not be named.")},
             "Which one produced that sound?"),
    "IC10": ("Video of a glass tipping off a table, cut before it lands; audio of shattering. Text: 'What happened "
             "to it?' Answer: it broke.",
             "OOPS / Ego4D", "Clip of an action that is cut before its outcome is visible.",
             {"tags_any": ["fail", "action"], "min_duration_s": 2.0},
             "Mute original audio; clip before the outcome.", ["mute", "clip_max:30"],
             {"audio": (SFX, "The sound of the outcome the clip cuts before.",
                        "1-10 s; unambiguous outcome sound.")},
             "What was the outcome?"),
    "IC11": ("Picture of a red backpack; video of a hallway with several bags; audio: 'the second time it appears, "
             "which side?'. Answer: left.",
             VIDEO_SOURCES, "Clip where one object appears more than once among similar ones.",
             {"tags_any": ["objects", "motion"], "min_duration_s": 3.0}, "Mute original audio; clip.",
             ["mute", "clip_max:30"],
             {"image": (T2I, "A reference picture of one object seen in the video.",
                        "Match the object's appearance in the video closely."),
              "audio": (TTS, "The selector: which appearance and what to report.", "Never describe the object.")},
             "Where is it on that appearance?"),
    "CC01": ("Picture of a jar labelled 'Sugar'. Audio: 'pass me the salt jar'. Text: 'What does the label "
             "say it holds?' Answer: sugar.",
             IMAGE_SOURCES, "Image with a clearly printed label or value.", {"tags_any": ["text", "sign"]},
             "Keep the image.", ["keep"],
             {"audio": (TTS, "State a different value of the labelled attribute, confidently.",
                        "Plausible speaker; no hedging.")},
             "What is it officially?"),
    "CC02": ("Picture of a clear box holding screws. Audio: 'that box is full of nails'. Text: 'What is inside?' "
             "Answer: screws.",
             IMAGE_SOURCES, "Image of a container whose contents are visible.", {"tags_any": ["container"]},
             "Keep the image.", ["keep"],
             {"audio": (TTS, "Assert different contents for the container.", "Confident, casual tone.")},
             "What does it actually hold?"),
    "CC03": ("Picture of an empty car park. Audio: a voicemail from this morning, 'the lot is packed'. "
             "Text: 'Is there space now?' Answer: yes.",
             IMAGE_SOURCES, "Image of a current state that a recording could contradict.",
             {"tags_any": ["place", "outdoor", "objects"]}, "Keep the image.", ["keep"],
             {"audio": (TTS, "An earlier recording describing a contradicting state.",
                        "Recording cues (voicemail, broadcast) so the time order is recoverable.")},
             "What is the situation right now?"),
    "CC04": ("Picture of a sign 'Open until 9'. Audio: an announcement that it closes at 6 today. Text: 'When does it "
             "close today?' Answer: 6.",
             IMAGE_SOURCES, "Image of a sign, notice or display that could be out of date.",
             {"tags_any": ["sign", "text"]}, "Keep the image.", ["keep"],
             {"audio": (TTS, "A more recent update that supersedes the visible information.",
                        "Make the recency clear without the word 'update'.")},
             "What is the current status?"),
    "CC05": ("Picture of five apples. Audio: 'there are eight apples here'. Text: 'How many are there?' Answer: five.",
             IMAGE_SOURCES, "Image with a small countable quantity (2-12).", {"tags_any": ["counting"]},
             "Keep the image.", ["keep"],
             {"audio": (TTS, "Confidently state a wrong number.", "No hedging; a plausible speaker.")},
             "How many are there?"),
    "CC06": ("Picture of a clock at 3:10 in daylight. Audio: 'it is nearly midnight'. Text: 'What time is it?' "
             "Answer: 3:10.",
             IMAGE_SOURCES, "Image with a time cue (clock, light, calendar).", {"tags_any": ["clock", "outdoor"]},
             "Keep the image.", ["keep"],
             {"audio": (TTS, "Imply a different time.", "Natural remark, not a correction.")},
             "What time is it?"),
    "CC08": ("Video of a ball knocking dominoes over; audio: 'the wind blew them over'. Text: 'What knocked them "
             "down?' Answer: the ball.",
             VIDEO_SOURCES, "Clip of an event triggered by a clearly visible mechanism.",
             {"tags_any": ["action", "fail", "motion"], "min_duration_s": 2.0}, "Mute original audio; clip.",
             ["mute", "clip_max:30"],
             {"audio": (TTS, "Confidently attribute the event to a cause absent from the video.",
                        "The false cause must be plausible.")},
             "What caused it?"),
    "CC09": ("Video of a modern cafe; audio: 'this used to be a bookshop'. Text: 'What is sold here today?' "
             "Answer: coffee.",
             VIDEO_SOURCES, "Clip of a place or object whose present state is clear.",
             {"tags_any": ["place", "outdoor"], "min_duration_s": 2.0}, "Mute original audio; clip.",
             ["mute", "clip_max:30"],
             {"audio": (TTS, "Describe how the place or object used to be.", "A past-tense, nostalgic account.")},
             "What is it used for now?"),
    "CC10": ("Video of a player passing; commentary: 'and he shoots!'. Text: 'What did he do?' Answer: passed.",
             VIDEO_SOURCES, "Clip of a sequence of distinct actions.", {"tags_any": ["action"], "min_duration_s": 2.0},
             "Mute original audio; clip.", ["mute", "clip_max:30"],
             {"audio": (TTS, "Running commentary describing different actions from those shown.",
                        "Live-commentary style, confident.")},
             "What did the person actually do?"),
    "CC11": ("Video of someone frying without preheating; audio: 'always preheat the pan first'. Text: 'Was the pan "
             "heated first?' Answer: no.",
             "HowTo100M / EPIC-Kitchens", "Clip of a procedure done in a particular order.",
             {"tags_any": ["procedure", "kitchen"], "min_duration_s": 3.0}, "Mute original audio; clip.",
             ["mute", "clip_max:30"],
             {"audio": (TTS, "Recite the proper procedure, which differs from what is shown.",
                        "Instructional tone.")},
             "Which step was actually done differently?"),
    "CC12": ("Video and photo agree on a box's size; audio: 'the photo is just illustrative'. Text: 'How tall is the "
             "box?' Answer: 30 cm.",
             VIDEO_SOURCES, "Clip showing a measurable property of an object.",
             {"tags_any": ["objects", "counting"], "min_duration_s": 2.0}, "Mute original audio; clip.",
             ["mute", "clip_max:30"],
             {"image": (T2I, "A second source of evidence, explicitly disclaimed.", "Consistent with the video."),
              "audio": (TTS, "Disclaim one source of evidence.", "Matter-of-fact tone.")},
             "What is the true value?"),
    "CC13": ("Video of a scale reading 2.1 kg; certificate photo of 2.0 kg; audio: 'the scale was just "
             "recalibrated'. Answer: 2.1 kg.",
             VIDEO_SOURCES, "Clip showing a measurement being taken.", {"tags_any": ["counting", "objects"]},
             "Mute original audio; clip.", ["mute", "clip_max:30"],
             {"image": (T2I, "A document with a conflicting measurement.", "Legible value."),
              "audio": (TTS, "A chain of authority that makes one measurement binding.", "Natural remark.")},
             "What is the binding measurement?"),
    "CC14": ("Video of a worker skipping gloves; photo of a 'gloves required' poster; audio: 'everyone wore gloves'. "
             "Answer: no.",
             VIDEO_SOURCES, "Clip of a person doing a task governed by a visible rule.",
             {"tags_any": ["action", "procedure"], "min_duration_s": 2.0}, "Mute original audio; clip.",
             ["mute", "clip_max:30"],
             {"image": (T2I, "The posted policy the behaviour is judged against.", "Legible policy text."),
              "audio": (TTS, "A biased report claiming compliance.", "Confident supervisor tone.")},
             "Was the rule followed?"),
    "CC07": ("Video of a quiet beach; audio of a busy city street. Text: 'Where is this?' Answer: a beach.",
             VIDEO_SOURCES, "Clip of a clearly recognisable place or situation.",
             {"tags_any": ["place", "outdoor"], "min_duration_s": 2.0}, "Mute original audio; clip.",
             ["mute", "clip_max:30"],
             {"audio": (SFX, "A soundscape suggesting another place or situation.", "1-10 s ambience, no speech.")},
             "Where is this happening?"),
}

_PAPER_IC02 = dict(
    logical_form=("VIDEO shows a complete action sequence [S1...Sn] (muted); AUDIO narrates a subset [S(k)...Sn] "
                  "starting midway using ordinal markers implying continuity (e.g., 'First, do S(k)'); TEXT asks for "
                  "the unmentioned initial step [S1...S(k-1)]; ANSWER requires identifying actions visible in the "
                  "video's opening that are omitted from the audio narrative."),
    example_scenario=("Video shows washing vegetables (S1) then chopping them (S2). Audio starts: 'First, chop the "
                      "vegetables.' Text: 'What missing step must be done before the instructions start?' "
                      "Answer: Washing."),
    generation_spec={
        "video": {"source_dataset": "HowTo100M / EPIC-Kitchens",
                  "selection_filter": {"requirement": "Clip containing a distinct multi-step procedural sequence.",
                                       "match": {"tags_any": ["procedure", "kitchen"], "min_duration_s": 3.0}},
                  "processing": "Mute original audio.", "actions": ["mute", "clip_max:60"]},
        "audio": {"source_type": "generation (TTS)",
                  "content_logic": "Generate instructions for the LAST (N-1) steps only.",
                  "constraints": "Start with transitional markers (e.g., 'Next', 'Then') to create a false sense "
                                 "of starting."},
        "text": {"query_skeleton": "Based on the video, what preparation step occurred immediately before the "
                                   "narrator said '{{transition_word}}'?"},
    })


def _category(template) -> str:
    return f"{'DISPERSAL' if template.category == 'ic' else 'COUNTERFACTUAL'} (Tier {template.tier})"


def builtin_specs() -> list[GenerationSpec]:
    from c3po_plugin.templates import BUILTIN

    specs = []
    for t in BUILTIN:
        common = dict(template_id=t.id, template_name=t.name, category=_category(t), base_modality=t.base_modality,
                      aliases=(PAPER_IDS[t.id],))
        if t.id == "IC02":
            specs.append(GenerationSpec(**common, **_PAPER_IC02))
            continue
        scenario, source, requirement, match, processing, actions, generated, skeleton = _OURS[t.id]
        spec: dict[str, Any] = {t.base_modality: {
            "source_dataset": source, "selection_filter": {"requirement": requirement, "match": match},
            "processing": processing, "actions": actions}}
        for modality, (source_type, logic, constraints) in generated.items():
            spec[modality] = {"source_type": source_type, "content_logic": logic, "constraints": constraints}
        spec["text"] = {"query_skeleton": skeleton}
        specs.append(GenerationSpec(**common, logical_form=t.logical_form, example_scenario=scenario,
                                    generation_spec=spec))
    return specs


@hookimpl
def c3po_register_generation_specs(registry: SpecRegistry) -> None:
    for spec in builtin_specs():
        registry.add(spec)
