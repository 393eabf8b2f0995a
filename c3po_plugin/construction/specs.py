"""Generation specs of the C3PO templates (paper App. G): what the build's generator is handed.

A :class:`GenerationSpec` has App. G's fields: ``template_id`` (the project's id, e.g. ``IC02``),
``aliases`` (the paper's ids, e.g. ``D_T1_001``), ``template_name``, ``category`` (App. G writes
``"DISPERSAL (Tier 1)"``; Counterfactual Conflict templates ``"COUNTERFACTUAL (Tier n)"``),
``base_modality``, ``logical_form``, ``example_scenario`` and ``generation_spec``, a dict keyed
by modality. The base modality's entry holds ``source_dataset`` (App. A), ``selection_filter``
(``requirement``: the sentence; ``match``: what :func:`c3po_plugin.construction.select.candidates_for`
checks, keys ``tags_any``, ``tags_all``, ``min_duration_s``, ``max_duration_s``, ``has_audio``,
``min_side_px``), ``processing`` (the sentence) and ``actions`` (``mute``, ``extract_audio``,
``clip:<a>-<b>``, ``clip_max:<s>``, ``keep``); each generated modality ``source_type``,
``content_logic`` and ``constraints``; ``text`` the ``query_skeleton``. Every media modality's
entry also states its ``unique_contribution``, the piece of the answer only it holds, and a
Counterfactual Conflict template's ``conflict`` sits on the modality that carries it (what it
contradicts, what signals the truth): App. I's bypass test rejects an item answerable with any one
modality removed, so each spec says what removing each one loses (``tests/test_c3po_build_specs.py``
checks it). In our counterfactuals the misleading modality also names *which* thing is meant.

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

import copy
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from c3po_plugin.construction.selection_filter import check_spec
from c3po_plugin.hookspecs import hookimpl
from c3po_plugin.plugins import HOST
from c3po_plugin.templates import BUILTIN
from c3po_plugin.templates import registry as template_registry
from faultline_eval.core.registry import Registry

#: Base-item tags the built-in specs filter on (``selection_filter.match``).
TAGS = (
    "procedure",
    "kitchen",
    "objects",
    "counting",
    "text",
    "sign",
    "container",
    "clock",
    "outdoor",
    "motion",
    "action",
    "interaction",
    "sound_source",
    "fail",
    "place",
    "speech",
)


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
        check_spec(self)  # the one vocabulary: the selection filter's matcher, processing's actions
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
        return {
            "template_id": self.paper_id,
            "template_name": self.template_name,
            "category": self.category,
            "base_modality": self.base_modality,
            "logical_form": self.logical_form,
            "example_scenario": self.example_scenario,
            "generation_spec": shown,
        }

    @property
    def paper_id(self) -> str:
        return self.aliases[0] if self.aliases else self.template_id


class SpecRegistry(Registry[GenerationSpec]):
    """Specs by template id and by alias; filled by the ``c3po_register_generation_specs`` hook."""

    def __init__(self) -> None:
        super().__init__("generation spec id")

    def add(self, spec: GenerationSpec) -> GenerationSpec:
        """Register ``spec`` under its template id and aliases; a taken one raises PluginError."""
        spec = replace(spec, plugin=self.plugin)
        return self.register(spec.template_id, spec, aliases=dict.fromkeys(spec.aliases, self.kind))

    def __iter__(self) -> Iterator[GenerationSpec]:
        return iter(sorted(super().__iter__(), key=lambda s: s.template_id))


@functools.lru_cache(maxsize=1)
def registry() -> SpecRegistry:
    return HOST.fill_registry("c3po_register_generation_specs", SpecRegistry(), "generation specs")


def template_id(key: str) -> str:
    """The project's template id for an id, a name or a paper id (``D_T1_001``)."""
    spec = registry().find(key)
    if spec is not None:
        return spec.template_id
    return template_registry().get(key).id


def spec_for(key: str) -> GenerationSpec:
    """The spec of a template given by id, name or paper id; KeyError naming it if it has none."""
    spec = registry().find(template_id(key))
    if spec is None:
        raise KeyError(
            f"C3PO template {key!r} has no generation spec (register one through c3po_register_generation_specs)"
        )
    return spec


def all_specs() -> list[GenerationSpec]:
    return list(registry())


def resolve(templates: Iterable[str] | None) -> tuple[list[GenerationSpec], list[str]]:
    """(specs to build, template ids skipped because they have no spec) for a stage's
    ``templates`` argument; None means every registered template."""
    keys = [t.id for t in template_registry()] if templates is None else [template_id(k) for k in templates]
    found, skipped = [], []
    for key in dict.fromkeys(keys):
        spec = registry().find(key)
        (found.append(spec) if spec is not None else skipped.append(key))
    return found, skipped


# --- the 25 built-in specs ---------------------------------------------------------------------

VIDEO_SOURCES = "HowTo100M / EPIC-Kitchens / Ego4D / OOPS"
IMAGE_SOURCES = "Visual Genome / COCO / TextVQA / Visual Counterfact"
TTS, SFX = "generation (TTS)", "generation (SFX, text-to-audio)"
T2I = "generation (text-to-image)"

# Per template: the example scenario, the base modality's entry (source, requirement, machine
# ``match``, processing sentence and ``actions``), each generated modality's (source_type,
# content_logic, constraints), the query skeleton, and the two fields the paper's bypass test
# needs stated (App. I, "Missing Modality": an item must not be answerable with any one modality
# removed): ``unique_contribution`` — per modality, the piece of the answer only it holds — and,
# for a Counterfactual Conflict template, ``conflict`` — on the modality that carries it, what
# it contradicts and what signals which side holds the truth (App. I, "Ambiguity Check"). In a
# counterfactual the misleading modality also holds a true piece (which thing is meant), so the
# item cannot be answered by dropping it either.
_OURS: dict[str, dict[str, Any]] = {
    "IC01": dict(
        scenario="Picture of three mugs (red, blue, green), each with a different logo. Audio: 'Grab the blue one "
        "for me.' Text: 'Which logo is on it?' Answer: the star.",
        base=(
            IMAGE_SOURCES,
            "Image with several same-kind objects differing in visible attributes.",
            {"tags_any": ["objects"], "min_side_px": 64},
            "Keep the image.",
            ["keep"],
        ),
        generated={
            "audio": (
                TTS,
                "Name the attribute value that selects one candidate, never the asked attribute.",
                "Natural request; no mention of the answer attribute; the value fits exactly one candidate.",
            )
        },
        contributes={
            "image": "The candidates and their attributes: the asked attribute of each is only visible.",
            "audio": "Which candidate is meant; without it several candidates fit.",
        },
        skeleton="What {{attribute}} does the selected one have?",
    ),
    "IC03": dict(
        scenario="Picture of a hallway where a framed picture has fallen from the wall and shattered. Audio: a cat "
        "hissing in the next room, then a heavy door slamming. Text: 'What made this happen?' Answer: the "
        "door slamming.",
        base=(
            IMAGE_SOURCES,
            "Scene with a visible state (fallen, broken, spilled, moved) whose cause is out of frame.",
            {"tags_any": ["objects", "place"]},
            "Keep the image.",
            ["keep"],
        ),
        generated={
            "audio": (
                SFX,
                "Two or more distinct off-screen sound events, exactly one of which could have "
                "produced the visible state.",
                "1-10 s, non-speech, each source recognisable; the visible state alone must not point to its cause.",
            )
        },
        contributes={
            "image": "The effect: a state whose cause is out of frame, which rules out all but one of "
            "the heard events.",
            "audio": "The candidate causes: two or more off-screen events, one of them the cause.",
        },
        skeleton="What made this happen?",
    ),
    "IC04": dict(
        scenario="Picture of three baskets (red, blue, green) holding 4, 6 and 9 eggs. Audio: 'The recipe takes "
        "exactly six eggs.' Text: 'Which basket should be used?' Answer: the blue one.",
        base=(
            IMAGE_SOURCES,
            "Image with several groups or containers of countable items (2-12 each), each with a "
            "different count and a visible identity.",
            {"tags_any": ["counting", "objects"]},
            "Keep the image.",
            ["keep"],
        ),
        generated={
            "audio": (
                TTS,
                "State the required amount as a number of items, once.",
                "No colour, label or position; the amount equals exactly one group's count, so "
                "counting verifies it and no arithmetic is needed.",
            )
        },
        contributes={
            "image": "The groups, their counts (by counting) and identities; the answer is one identity.",
            "audio": "The required amount, which selects the group; without it every group fits.",
        },
        skeleton="Which {{group}} has the amount that is needed?",
    ),
    "IC05": dict(
        scenario="Picture of a shelf. Audio: 'It's just left of the kettle.' Text: 'What is there?' Answer: the jar.",
        base=(
            IMAGE_SOURCES,
            "Image with a clear spatial arrangement of distinct objects.",
            {"tags_any": ["objects"]},
            "Keep the image.",
            ["keep"],
        ),
        generated={
            "audio": (
                TTS,
                "Describe a location relative to a visible landmark.",
                "Never name the object at the location; the landmark is unique and the spot holds exactly one object.",
            )
        },
        contributes={
            "image": "What sits at each spot (the answer) and the landmark.",
            "audio": "Which spot is meant; without it any object could be.",
        },
        skeleton="What is at the described spot?",
    ),
    "IC06": dict(
        scenario="Audio of a baker listing steps: sift the flour, add the water, fold in the salt, then knead; "
        "picture of dough being kneaded. Text: 'What came right before this?' Answer: folding in the salt.",
        base=(
            "HowTo100M (audio segments)",
            "Narrated audio segment listing an ordered sequence of steps or events.",
            {"tags_any": ["procedure", "speech"], "min_duration_s": 4.0},
            "Extract the audio track; clip to the narrated steps.",
            ["extract_audio", "clip_max:30"],
        ),
        generated={
            "image": (
                T2I,
                "Show the state at one moment of the narrated sequence.",
                "The depicted step must not be named in the caption's scene text; choose a moment "
                "whose neighbour in the narration is not what routine would predict.",
            )
        },
        contributes={
            "audio": "The order of the steps (the answer is one of them), not predictable by routine.",
            "image": "Which moment of the sequence is meant; without it any step could be.",
        },
        skeleton="What happened immediately before this?",
    ),
    "IC07": dict(
        scenario="Video of a woman taping a note over a doorbell. Audio, whispered: 'The baby's finally asleep, the "
        "oven timer's about to go and the guests are due any minute.' Text: 'Why is she doing that?' "
        "Answer: so the guests don't ring and wake the baby.",
        base=(
            VIDEO_SOURCES,
            "Clip of an action whose purpose is ambiguous without context.",
            {"tags_any": ["action", "interaction"], "min_duration_s": 2.0},
            "Mute original audio; clip.",
            ["mute", "clip_max:30"],
        ),
        generated={
            "audio": (
                TTS,
                "Supply context with two or more goals or circumstances, one of which the action serves.",
                "Never describe the action; the context alone must not imply which action is done.",
            )
        },
        contributes={
            "video": "The action, which alone admits several purposes and picks which goal is served.",
            "audio": "The context that fixes the action's meaning; without it the purpose is open.",
        },
        skeleton="Why is the person doing this?",
    ),
    "IC08": dict(
        scenario="Video of three similar cups shuffled; audio: 'follow the chipped one'. Text: 'Where does it end up?' "
        "Answer: on the right.",
        base=(
            VIDEO_SOURCES,
            "Clip of several similar objects moving, one with a feature visible early.",
            {"tags_any": ["motion", "objects"], "min_duration_s": 2.0},
            "Mute original audio; clip.",
            ["mute", "clip_max:30"],
        ),
        generated={
            "audio": (
                TTS,
                "Single one object out by a feature visible early in the clip.",
                "Never say where it goes; the objects end up in different places.",
            )
        },
        contributes={
            "video": "Where each object ends up (the answer) and the feature seen early on.",
            "audio": "Which object to follow; without it any end position fits.",
        },
        skeleton="Where does that one end up?",
    ),
    "IC09": dict(
        scenario="Video of two people at a table, each tapping a glass with a spoon at different moments; one chime "
        "at 0:03. Text: 'Who made that sound?' Answer: the man in the grey shirt.",
        base=(
            VIDEO_SOURCES,
            "Clip with several possible sound sources of the same kind acting at different moments.",
            {"tags_any": ["sound_source", "interaction"], "min_duration_s": 2.0},
            "Mute original audio; clip.",
            ["mute", "clip_max:30"],
        ),
        generated={
            "audio": (
                SFX,
                "One sound event aligned with one source's visible action.",
                "1-10 s; the source is not named and the sound's kind does not tell the sources "
                "apart: only its moment does.",
            )
        },
        contributes={
            "video": "The candidate sources and when each acts; the answer is one source's identity.",
            "audio": "The sound event and its moment; without it no source is singled out.",
        },
        skeleton="Which one produced that sound?",
    ),
    "IC10": dict(
        scenario="Video of a ball thrown toward a red bucket of water and, further back, an empty blue bucket, cut "
        "while it flies; audio: a hollow metallic clang. Text: 'Which one did it land in?' Answer: the "
        "blue one.",
        base=(
            "OOPS / Ego4D",
            "Clip of an action with two or more visibly different possible outcomes, cut before "
            "the outcome is visible.",
            {"tags_any": ["fail", "action"], "min_duration_s": 2.0},
            "Mute original audio; clip before the outcome.",
            ["mute", "clip_max:30"],
        ),
        generated={
            "audio": (
                SFX,
                "The sound of the outcome that happened, which tells the possible outcomes apart.",
                "1-10 s; names nothing; not the outcome the motion or common sense makes most likely.",
            )
        },
        contributes={
            "video": "The possible outcomes and their visible identities (the answer names one by colour or place).",
            "audio": "Which outcome happened; without it the clip leaves two or more open.",
        },
        skeleton="Where did it end up?",
    ),
    "IC11": dict(
        scenario="Picture of a red backpack; video of a hallway with several bags; audio: 'the second time it "
        "appears, which side?'. Answer: left.",
        base=(
            VIDEO_SOURCES,
            "Clip where one object appears more than once among similar ones.",
            {"tags_any": ["objects", "motion"], "min_duration_s": 3.0},
            "Mute original audio; clip.",
            ["mute", "clip_max:30"],
        ),
        generated={
            "image": (
                T2I,
                "A reference picture of one object seen in the video.",
                "Match the object's appearance in the video closely.",
            ),
            "audio": (TTS, "The selector: which appearance and what to report.", "Never describe the object."),
        },
        contributes={
            "image": "Which object is meant; the video holds several similar ones.",
            "video": "The object's appearances and what is seen at each (the answer).",
            "audio": "Which appearance and what to report; without it several answers fit.",
        },
        skeleton="Where is it on that appearance?",
    ),
    "CC01": dict(
        scenario="Picture of three jars with red, white and green lids, labelled 'Sugar', 'Salt' and 'Flour'. Audio: "
        "'Pass me the salt, the jar with the red lid.' Text: 'What is it officially?' Answer: sugar.",
        base=(
            IMAGE_SOURCES,
            "Image of several items, each with a clearly printed label or value.",
            {"tags_any": ["text", "sign"]},
            "Keep the image.",
            ["keep"],
        ),
        generated={
            "audio": (
                TTS,
                "Single one item out by a visible trait (not its label) and give a different "
                "value of the labelled attribute, confidently.",
                "Plausible speaker; no hedging; the trait fits exactly one item.",
            )
        },
        contributes={
            "image": "Each item's printed label (the answer) and the traits that tell them apart.",
            "audio": "Which item is meant; without it several labels fit.",
        },
        conflict=(
            "audio",
            "The spoken value contradicts the item's printed label; the query's framing "
            "('officially') signals that the label holds the truth.",
        ),
        skeleton="What is it officially?",
    ),
    "CC02": dict(
        scenario="Picture of three clear boxes: screws, washers, nails. Audio: 'The middle box is full of nails.' "
        "Text: 'What does it actually hold?' Answer: washers.",
        base=(
            IMAGE_SOURCES,
            "Image of several containers whose contents are visible.",
            {"tags_any": ["container"]},
            "Keep the image.",
            ["keep"],
        ),
        generated={
            "audio": (
                TTS,
                "Single one container out by a visible trait or place and assert different contents for it.",
                "Confident, casual tone.",
            )
        },
        contributes={
            "image": "What each container visibly holds (the answer).",
            "audio": "Which container is meant; without it several fit.",
        },
        conflict=(
            "audio",
            "The asserted contents contradict what that container visibly holds; 'actually' signals that sight wins.",
        ),
        skeleton="What does it actually hold?",
    ),
    "CC03": dict(
        scenario="Picture of a car park with sections A, B and C; section B holds two cars. Audio: a voicemail from "
        "this morning, 'Section B is packed, don't bother.' Text: 'How many cars are there right now?' "
        "Answer: two.",
        base=(
            IMAGE_SOURCES,
            "Image of the current state of several places or things that a recording could contradict.",
            {"tags_any": ["place", "outdoor", "objects"]},
            "Keep the image.",
            ["keep"],
        ),
        generated={
            "audio": (
                TTS,
                "An earlier recording that names one of the places or things and describes it "
                "in a contradicting state.",
                "Recording cues (voicemail, broadcast) so the time order is recoverable.",
            )
        },
        contributes={
            "image": "The present state of each place or thing (the answer).",
            "audio": "Which one is meant; without it several states fit.",
        },
        conflict=(
            "audio",
            "The recorded account contradicts the present state; its recording cues and the "
            "query's 'right now' signal that the picture is current.",
        ),
        skeleton="What is the situation there right now?",
    ),
    "CC04": dict(
        scenario="Picture of a shop sign: 'Mon-Fri 9-21, Sat 10-18, Sun 12-16'. Audio: 'Heads up, with the "
        "renovation we keep Sunday hours all this week.' Text: 'When does it close today?' Answer: 4 pm.",
        base=(
            IMAGE_SOURCES,
            "Image of a sign, notice or display with several entries that could be out of date.",
            {"tags_any": ["sign", "text"]},
            "Keep the image.",
            ["keep"],
        ),
        generated={
            "audio": (
                TTS,
                "A more recent announcement that makes another entry of the display apply, without stating any value.",
                "Make the recency clear without the word 'update'; no numbers.",
            )
        },
        contributes={
            "image": "The display's entries, among them the value that now applies (the answer).",
            "audio": "Which entry now applies; without it the outdated entry would be read.",
        },
        conflict=(
            "image",
            "Its entry for the asked case is outdated; the spoken announcement is more recent and wins.",
        ),
        skeleton="What is the current status?",
    ),
    "CC05": dict(
        scenario="Picture of wicker, plastic and metal baskets holding 5, 7 and 3 apples. Audio: 'There are eight "
        "apples in the wicker basket.' Text: 'How many are really in there?' Answer: five.",
        base=(
            IMAGE_SOURCES,
            "Image with several groups of a small countable quantity (2-12) each.",
            {"tags_any": ["counting"]},
            "Keep the image.",
            ["keep"],
        ),
        generated={
            "audio": (
                TTS,
                "Single one group out by a visible trait and confidently state a wrong number for it.",
                "No hedging; a plausible speaker.",
            )
        },
        contributes={
            "image": "The groups and their true counts (the answer, by counting).",
            "audio": "Which group is meant; without it several counts fit.",
        },
        conflict=("audio", "The stated number contradicts the visible count; 'really' signals that what is seen wins."),
        skeleton="How many are really there?",
    ),
    "CC06": dict(
        scenario="Picture of an office wall with clocks labelled London, Tokyo and New York at 3:10, 11:10 and "
        "10:10. Audio: 'It's barely six in the morning here in Tokyo.' Text: 'What time is it there now?' "
        "Answer: 11:10.",
        base=(
            IMAGE_SOURCES,
            "Image with several time cues (clocks, a timetable, a calendar).",
            {"tags_any": ["clock", "outdoor"]},
            "Keep the image.",
            ["keep"],
        ),
        generated={
            "audio": (
                TTS,
                "Name which of the cues applies (the place or thing) and imply a different time.",
                "Natural remark, not a correction.",
            )
        },
        contributes={
            "image": "One time per cue (the answer is one of them).",
            "audio": "Which cue applies; without it several times fit.",
        },
        conflict=(
            "audio",
            "The implied time contradicts the applicable cue; the query's 'now' makes the cue authoritative.",
        ),
        skeleton="What time is it there now?",
    ),
    "CC08": dict(
        scenario="Video: a cat brushes a vase off a shelf; later a child pushes a book off the table. Audio: 'The "
        "wind knocked that vase right off the shelf.' Text: 'What made it fall?' Answer: the cat.",
        base=(
            VIDEO_SOURCES,
            "Clip of two or more events, each triggered by a clearly visible mechanism.",
            {"tags_any": ["action", "fail", "motion"], "min_duration_s": 2.0},
            "Mute original audio; clip.",
            ["mute", "clip_max:30"],
        ),
        generated={
            "audio": (
                TTS,
                "Single one event out and confidently attribute it to a cause absent from the video.",
                "The false cause must be plausible.",
            )
        },
        contributes={
            "video": "The events and each one's visible mechanism (the answer).",
            "audio": "Which event is meant; without it several causes fit.",
        },
        conflict=(
            "audio",
            "The stated cause is absent from the video; no spoken cue says so, the visible mechanism is the truth.",
        ),
        skeleton="What caused it?",
    ),
    "CC09": dict(
        scenario="Video of a street with three shopfronts. Audio: 'The one with the arched window used to be a "
        "bookshop.' Text: 'What is sold there today?' Answer: coffee.",
        base=(
            VIDEO_SOURCES,
            "Clip of several places or objects whose present state is clear.",
            {"tags_any": ["place", "outdoor"], "min_duration_s": 2.0},
            "Mute original audio; clip.",
            ["mute", "clip_max:30"],
        ),
        generated={
            "audio": (
                TTS,
                "Single one place or object out by a lasting trait and describe how it used to be.",
                "A past-tense, nostalgic account.",
            )
        },
        contributes={
            "video": "The present state of each place (the answer).",
            "audio": "Which place is meant; without it several fit.",
        },
        conflict=(
            "audio",
            "The past account contradicts the present; the query's 'today' signals that the video's present holds.",
        ),
        skeleton="What is it used for now?",
    ),
    "CC10": dict(
        scenario="Video of three players; number 7 passes the ball. Commentary: 'Number seven cuts inside, and he "
        "shoots!' Text: 'What did he actually do?' Answer: passed to a teammate.",
        base=(
            VIDEO_SOURCES,
            "Clip of several people doing distinct actions.",
            {"tags_any": ["action"], "min_duration_s": 2.0},
            "Mute original audio; clip.",
            ["mute", "clip_max:30"],
        ),
        generated={
            "audio": (
                TTS,
                "Running commentary that names one person by a visible mark and describes "
                "actions different from theirs.",
                "Live-commentary style, confident.",
            )
        },
        contributes={
            "video": "What each person does (the answer).",
            "audio": "Which person is meant; without it several actions fit.",
        },
        conflict=("audio", "The commented action contradicts the video; 'actually' signals that what is seen wins."),
        skeleton="What did the person actually do?",
    ),
    "CC11": dict(
        scenario="Video of someone layering a sandwich: bread, cheese, tomato, ham. Audio: 'Our house sandwich: "
        "bread, ham, tomato, then the cheese on top.' Text: 'Which layer went on differently?' Answer: the "
        "cheese.",
        base=(
            "HowTo100M / EPIC-Kitchens",
            "Clip of a procedure done in a particular order.",
            {"tags_any": ["procedure", "kitchen"], "min_duration_s": 3.0},
            "Mute original audio; clip.",
            ["mute", "clip_max:30"],
        ),
        generated={
            "audio": (
                TTS,
                "Recite the procedure as being followed; it differs from what is shown at one step.",
                "Instructional tone; a procedure specific to the scene, not common knowledge.",
            )
        },
        contributes={
            "audio": "The reference procedure; without it nothing is 'different'.",
            "video": "What was actually done (the answer is the step that departs).",
        },
        conflict=(
            "audio",
            "It presents the procedure as followed while the video departs from it at one step; "
            "the query asks what was actually done.",
        ),
        skeleton="Which step was actually done differently?",
    ),
    "CC12": dict(
        scenario="Video: a seller holds up a green jar beside a ruler reading 12 cm. Picture: the "
        "shelf tags 'red 15 cm, green 18 cm, blue 20 cm'. Audio: 'Don't go by the ruler in the clip, it's "
        "just a prop, not to scale.' Text: 'How tall is this jar?' Answer: 18 cm.",
        base=(
            VIDEO_SOURCES,
            "Clip of an object beside a visible value of one of its properties (a ruler, a display, a label).",
            {"tags_any": ["objects", "counting"], "min_duration_s": 2.0},
            "Mute original audio; clip.",
            ["mute", "clip_max:30"],
        ),
        generated={
            "image": (
                T2I,
                "The record of the asked value for several candidates, the one in the video "
                "among them; its value for that one differs from the video's.",
                "Legible values; the candidates named as the video shows them (colour, label).",
            ),
            "audio": (
                TTS,
                "Explicitly disclaim the video's source of the value (illustrative, a prop, not to scale).",
                "Matter-of-fact tone; no numbers.",
            ),
        },
        contributes={
            "video": "Which candidate is meant (the object shown); without it the image's values fit several.",
            "image": "The true value of each candidate (the answer).",
            "audio": "Which source is disclaimed; without it the video's and the image's values "
            "contradict with nothing to choose between them.",
        },
        conflict=(
            "video",
            "Its value, from the disclaimed source, contradicts the image's; the explicit spoken "
            "disclaimer signals which to set aside.",
        ),
        skeleton="What is its true {{property}}?",
    ),
    "CC13": dict(
        scenario="Video: a crate weighed on two scales, S-14 reading 2.1 kg and S-22 reading 2.3 kg. Picture: a "
        "certificate, 'Port authority scale S-14'. Audio: 'Customs only goes by the port authority's "
        "scale; the supplier's note says 2.5 kilos, ignore that.' Text: 'What is the binding weight?' "
        "Answer: 2.1 kg.",
        base=(
            VIDEO_SOURCES,
            "Clip showing a measurement taken on two or more instruments with visible marks.",
            {"tags_any": ["counting", "objects"]},
            "Mute original audio; clip.",
            ["mute", "clip_max:30"],
        ),
        generated={
            "image": (
                T2I,
                "A document linking one instrument, by a mark visible in the video, to an authority.",
                "Legible mark and authority; no measured value.",
            ),
            "audio": (
                TTS,
                "Which authority's measurement binds, and a conflicting figure from another source.",
                "Natural remark; never the instrument's mark.",
            ),
        },
        contributes={
            "video": "The instruments' readings and marks (the answer is one reading).",
            "image": "Which instrument is the authority's; without it the rule picks no reading.",
            "audio": "Which authority binds; without it the readings contradict with no way to choose.",
        },
        conflict=(
            "audio",
            "Its figure from another source contradicts the binding reading, and its own rule sets it aside.",
        ),
        skeleton="What is the binding measurement?",
    ),
    "CC14": dict(
        scenario="Picture: a poster, 'Cutting: gloves and goggles. Welding: mask and apron.' Video: two workers "
        "cutting tiles, the one in yellow without gloves, the other without goggles. Audio: 'I checked the "
        "lad in yellow myself, fully kitted out.' Text: 'While cutting, what did he skip?' Answer: gloves.",
        base=(
            VIDEO_SOURCES,
            "Clip of people doing a task governed by a visible rule.",
            {"tags_any": ["action", "procedure"], "min_duration_s": 2.0},
            "Mute original audio; clip.",
            ["mute", "clip_max:30"],
        ),
        generated={
            "image": (T2I, "The posted policy: requirements for two or more situations.", "Legible policy text."),
            "audio": (
                TTS,
                "A biased report that names one person and claims full compliance.",
                "Confident supervisor tone; every person in view departs from the policy differently.",
            ),
        },
        contributes={
            "image": "The requirements of each situation.",
            "video": "What each person actually did (the answer: the unmet requirement).",
            "audio": "Which person is meant; without it several departures fit.",
            "text": "The situation, which selects the requirements that apply.",
        },
        conflict=("audio", "The report claims compliance the video contradicts; nothing but the evidence says so."),
        skeleton="While {{situation}}, what did the person skip?",
    ),
    "CC07": dict(
        scenario="Video of a dark residential street in heavy rain. Audio: a calm park ambience with birdsong, "
        "broken by a loud thunderclap. Text: 'What is the weather doing?' Answer: a heavy thunderstorm "
        "(App. I's example: heavy rain seen, thunder heard).",
        base=(
            VIDEO_SOURCES,
            "Clip of a clearly recognisable place or situation.",
            {"tags_any": ["place", "outdoor"], "min_duration_s": 2.0},
            "Mute original audio; clip.",
            ["mute", "clip_max:30"],
        ),
        generated={
            "audio": (
                SFX,
                "A soundscape suggesting another place or situation, with one sound event the video cannot show.",
                "1-10 s ambience, no speech.",
            )
        },
        contributes={
            "video": "The place or conditions, which the answer starts from.",
            "audio": "One event the video cannot show (thunder, a siren), which completes the answer.",
        },
        conflict=(
            "audio",
            "Its ambience suggests another place or situation than the video shows; the visible scene settles it.",
        ),
        skeleton="What is happening here?",
    ),
}

#: App. G's InstructionalGapDetection spec is the paper's word for word; these two fields are ours.
_IC02_CONTRIBUTES = {
    "video": "The opening step(s) the narration leaves out (the answer), read off the clip, not inferred from the "
    "narrated steps by routine.",
    "audio": "Where the narration starts, which fixes which steps were left out; without it any step fits.",
}

_PAPER_IC02 = dict(
    logical_form=(
        "VIDEO shows a complete action sequence [S1...Sn] (muted); AUDIO narrates a subset [S(k)...Sn] "
        "starting midway using ordinal markers implying continuity (e.g., 'First, do S(k)'); TEXT asks for "
        "the unmentioned initial step [S1...S(k-1)]; ANSWER requires identifying actions visible in the "
        "video's opening that are omitted from the audio narrative."
    ),
    example_scenario=(
        "Video shows washing vegetables (S1) then chopping them (S2). Audio starts: 'First, chop the "
        "vegetables.' Text: 'What missing step must be done before the instructions start?' "
        "Answer: Washing."
    ),
    generation_spec={
        "video": {
            "source_dataset": "HowTo100M / EPIC-Kitchens",
            "selection_filter": {
                "requirement": "Clip containing a distinct multi-step procedural sequence.",
                "match": {"tags_any": ["procedure", "kitchen"], "min_duration_s": 3.0},
            },
            "processing": "Mute original audio.",
            "actions": ["mute", "clip_max:60"],
        },
        "audio": {
            "source_type": "generation (TTS)",
            "content_logic": "Generate instructions for the LAST (N-1) steps only.",
            "constraints": "Start with transitional markers (e.g., 'Next', 'Then') to create a false sense "
            "of starting.",
        },
        "text": {
            "query_skeleton": "Based on the video, what preparation step occurred immediately before the "
            "narrator said '{{transition_word}}'?"
        },
    },
)


def _category(template) -> str:
    return f"{'DISPERSAL' if template.category == 'ic' else 'COUNTERFACTUAL'} (Tier {template.tier})"


def _state_roles(spec: dict[str, Any], contributes: dict[str, str], conflict: tuple[str, str] | None) -> None:
    """Write each modality's ``unique_contribution`` and the counterfactual's ``conflict`` into its entry."""
    for modality, text in contributes.items():
        spec[modality]["unique_contribution"] = text
    if conflict is not None:
        spec[conflict[0]]["conflict"] = conflict[1]


def builtin_specs() -> list[GenerationSpec]:
    specs = []
    for t in BUILTIN:
        common = dict(
            template_id=t.id,
            template_name=t.name,
            category=_category(t),
            base_modality=t.base_modality,
            aliases=t.aliases,
        )
        if t.id == "IC02":
            paper = {**_PAPER_IC02, "generation_spec": copy.deepcopy(_PAPER_IC02["generation_spec"])}
            _state_roles(paper["generation_spec"], _IC02_CONTRIBUTES, None)
            specs.append(GenerationSpec(**common, **paper))
            continue
        ours = _OURS[t.id]
        source, requirement, match, processing, actions = ours["base"]
        spec: dict[str, Any] = {
            t.base_modality: {
                "source_dataset": source,
                "selection_filter": {"requirement": requirement, "match": match},
                "processing": processing,
                "actions": actions,
            }
        }
        for modality, (source_type, logic, constraints) in ours["generated"].items():
            spec[modality] = {"source_type": source_type, "content_logic": logic, "constraints": constraints}
        spec["text"] = {"query_skeleton": ours["skeleton"]}
        _state_roles(spec, ours["contributes"], ours.get("conflict"))
        specs.append(
            GenerationSpec(
                **common, logical_form=t.logical_form, example_scenario=ours["scenario"], generation_spec=spec
            )
        )
    return specs


@hookimpl
def c3po_register_generation_specs(registry: SpecRegistry) -> None:
    for spec in builtin_specs():
        registry.add(spec)
