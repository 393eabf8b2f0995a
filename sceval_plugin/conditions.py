"""The SCEval condition catalogue: the single source of truth for what can be run.

Every condition has a stable id (the paper's, e.g. ``bi_tv_drop_words_noise_t30_v70``) and a
task name (``sceval_<id>``); lmms-eval tasks, tags and aliases are generated from here. The
built-in conditions register through the same hook as a third party's
(``sceval_register_conditions``):

- ``clean``; a single-modality cell per operator and severity (56 for the built-ins);
- the 46-cell joint suite (Appendix G.3, Table 32), with the 29 canonical/replacement cells of
  the headline suite (Appendix G.2) flagged, and the 12-cell lightweight panel (Table 31);
- missing-modality controls (G.4), shortcut controls (G.5), the four cyclic (Latin-square)
  option orders for the option-order conditions, and prompt variants (G.6).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

from faultline_eval.core.registry import PluginError, Registry
from sceval_plugin import operators
from sceval_plugin.eval_prompts import PROMPT_VARIANTS, prompt_template
from sceval_plugin.hookspecs import hookimpl
from sceval_plugin.plugins import fill_registry

MODALITY_LETTER = {"text": "t", "vision": "v", "audio": "a"}
LETTER_MODALITY = {v: k for k, v in MODALITY_LETTER.items()}

#: Controls: what each one changes (see sceval_plugin.render).
CONTROLS = {
    "missing_text": "textual evidence beyond the question and options (the context) removed; question, options "
    "and media kept (G.4)",
    "missing_vision": "frames replaced by blank (mid-grey) frames of the same count and size",
    "missing_audio": "audio replaced by silence of the same duration",
    "shortcut_question_options": "question and options only: no context, no media",
    "shortcut_text_only": "all text (question, context, options); no media",
    "shortcut_visual_audio": "media and options with a generic instruction instead of the question",
    "shortcut_options_only": "the option strings only: no question, no context, no media",
}
BLOCKS = (
    "clean",
    "single",
    "tv",
    "ta",
    "va",
    "tva",
    "missing",
    "shortcut",
    "option_order",
    "prompt",
    "probe",
    "no_option",
)


@dataclass(frozen=True)
class Corruption:
    modality: str
    operator: str
    severity: int

    @property
    def code(self) -> str:
        return f"{MODALITY_LETTER[self.modality]}{self.severity}"


@dataclass(frozen=True)
class Condition:
    """One runnable condition. ``variants`` is filled in by the registry from the operators."""

    id: str
    block: str
    corruptions: tuple[Corruption, ...] = ()
    control: str | None = None
    option_order: int = 0
    prompt: str = "json"
    suites: tuple[str, ...] = ()  # "combined" (29), "combined_extended" (46), "panel"
    role: str = ""
    aliases: tuple[str, ...] = ()
    base: str | None = None  # the condition an order/prompt variant is derived from
    probe: Any = None  # a sceval_plugin.probe_conditions.ProbeCall for the "probe" block (mechanism probes)
    variants: int = 1
    plugin: str = ""
    description: str = ""

    @property
    def task_name(self) -> str:
        return f"sceval_{self.id}"

    @property
    def severities(self) -> dict[str, int]:
        return {c.modality: c.severity for c in self.corruptions}

    @property
    def total_severity(self) -> int:
        return sum(c.severity for c in self.corruptions)

    @property
    def prompt_id(self) -> str:
        return prompt_template(self.prompt).id


def single_id(op: str, severity: int) -> str:
    letter = MODALITY_LETTER[operators.get(op).modality]
    return f"single_{op}_{letter}{severity}"


def joint_id(*cells: tuple[str, int]) -> str:
    """The paper's id for a joint cell, e.g. ``bi_tv_drop_words_noise_t30_v70``."""
    specs = sorted(
        ((operators.get(op).modality, op, sev) for op, sev in cells), key=lambda c: "tva".index(MODALITY_LETTER[c[0]])
    )
    codes = "_".join(f"{MODALITY_LETTER[m]}{s}" for m, _, s in specs)
    ops = "_".join(op for _, op, _ in specs)
    if len(specs) == 2:
        return f"bi_{''.join(MODALITY_LETTER[m] for m, _, _ in specs)}_{ops}_{codes}"
    return f"tri_{ops}_{codes}"


def joint(*cells: tuple[str, int], role: str, suites: tuple[str, ...], alias: bool) -> Condition:
    corruptions = tuple(
        Corruption(operators.get(op).modality, op, sev)
        for op, sev in sorted(cells, key=lambda c: "tva".index(MODALITY_LETTER[operators.get(c[0]).modality]))
    )
    block = "".join(MODALITY_LETTER[c.modality] for c in corruptions)
    short = "sceval_" + "_".join(c.code for c in corruptions)
    return Condition(joint_id(*cells), block, corruptions, role=role, suites=suites, aliases=(short,) if alias else ())


class ConditionRegistry(Registry[Condition]):
    """Condition id -> :class:`Condition`, filled by ``sceval_register_conditions`` hooks."""

    def __init__(self) -> None:
        super().__init__("condition", unknown="SCEval condition")

    def add(self, condition: Condition) -> Condition:
        """Register ``condition`` once its operators, probe, prompt and task names check out;
        anything wrong raises :class:`PluginError` naming the condition."""
        if not isinstance(condition, Condition):
            raise PluginError(f"plugin {self.plugin} registered {condition!r}, not a sceval Condition")
        self.check_free(condition.id)  # a clash is named before anything else
        _check_kind(condition)
        if condition.probe is not None:
            try:  # the probe module's own check (a ProbeCall knows its registry), without importing it here
                condition = replace(condition, probe=condition.probe.checked())
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                raise PluginError(f"condition {condition.id!r}: {exc}") from None
        taken = {a for other in self for a in other.aliases} | {other.task_name for other in self}
        for name in (condition.task_name, *condition.aliases):
            if name in taken:
                raise PluginError(f"condition {condition.id!r}: task name {name!r} is already taken")
        return self.register(condition.id, replace(condition, variants=_variants(condition), plugin=self.plugin))

    def by_task(self) -> dict[str, Condition]:
        """Task name (and alias) -> condition."""
        out = {}
        for c in self:
            out[c.task_name] = c
            out.update(dict.fromkeys(c.aliases, c))
        return out

    def in_suite(self, suite: str) -> list[Condition]:
        return [c for c in self if suite in c.suites]


def _check_kind(condition: Condition) -> None:
    """Its block, control and prompt exist, and it corrupts each modality at most once."""
    if condition.block not in BLOCKS:
        raise PluginError(f"condition {condition.id!r}: block must be one of {BLOCKS}")
    if condition.control is not None and condition.control not in CONTROLS:
        raise PluginError(f"condition {condition.id!r}: unknown control {condition.control!r}")
    if (condition.block == "probe") != (condition.probe is not None):
        raise PluginError(f"condition {condition.id!r}: a probe condition has block 'probe' and a ProbeCall")
    if condition.prompt not in PROMPT_VARIANTS:
        raise PluginError(f"condition {condition.id!r}: unknown prompt {condition.prompt!r}")
    modalities = [c.modality for c in condition.corruptions]
    if len(set(modalities)) != len(modalities):
        raise PluginError(f"condition {condition.id!r} corrupts one modality twice")


def _variants(condition: Condition) -> int:
    """How many variants the condition has: the most of any of its operators (each must exist,
    be of the modality it corrupts and take the severity)."""
    variants = 1
    for c in condition.corruptions:
        spec = operators.get(c.operator)  # unknown operators fail here, by name
        if spec.modality != c.modality:
            raise PluginError(f"condition {condition.id!r}: {c.operator!r} is a {spec.modality} operator")
        spec.parameter(c.severity)
        variants = max(variants, spec.variants)
    return variants


@functools.cache
def catalogue() -> ConditionRegistry:
    """Every registered condition (built-ins first, then plugins), built once per process."""
    return fill_registry("sceval_register_conditions", ConditionRegistry(), "conditions")


# ---------------------------------------------------------------------------------------------
# The built-in catalogue (SCEval paper, Appendices F.3 and G.1-G.6).

C, R, X = "canonical", "replacement", "extended"
S29, S46 = ("combined", "combined_extended"), ("combined_extended",)

#: Table 32: (cells, role, in the 29-cell suite?). Canonical operator pairs get short aliases.
JOINT_SUITE = [
    # text + vision
    *[((("drop_words", t), ("noise", v)), C, True) for t in (30, 70) for v in (30, 70)],
    ((("drop_words", 70), ("occlusion", 30)), R, True),
    ((("word_shuffle", 70), ("noise", 70)), R, True),
    *[((("drop_words", t), ("noise", v)), X, False) for t, v in ((50, 50), (10, 70), (70, 10), (50, 70))],
    # text + audio
    *[((("drop_words", t), ("mute", a)), C, True) for t in (30, 70) for a in (30, 50)],
    ((("drop_words", 70), ("remove", 50)), R, True),
    ((("word_shuffle", 70), ("mute", 50)), R, True),
    *[((("drop_words", t), ("mute", a)), X, False) for t, a in ((50, 30), (10, 50), (70, 10))],
    ((("drop_words", 30), ("remove", 50)), X, False),
    # vision + audio
    *[((("noise", v), ("mute", a)), C, True) for v in (30, 70) for a in (30, 50)],
    ((("noise", 70), ("remove", 50)), R, True),
    ((("occlusion", 30), ("mute", 50)), R, True),
    *[((("noise", v), ("mute", a)), X, False) for v, a in ((50, 30), (10, 50), (70, 10))],
    # text + vision + audio
    *[((("drop_words", t), ("noise", v), ("mute", a)), C, True) for t in (30, 70) for v in (30, 70) for a in (30, 50)],
    ((("drop_words", 70), ("noise", 70), ("remove", 50)), R, True),
    ((("drop_words", 70), ("occlusion", 30), ("mute", 50)), R, True),
    ((("word_shuffle", 70), ("noise", 70), ("mute", 50)), R, True),
    *[
        ((("drop_words", t), ("noise", v), ("mute", a)), X, False)
        for t, v, a in ((50, 50, 30), (50, 50, 50), (10, 70, 30), (10, 30, 50), (30, 50, 30), (70, 50, 50))
    ],
]
CANONICAL_OPERATORS = {
    ("drop_words", "noise"),
    ("drop_words", "mute"),
    ("noise", "mute"),
    ("drop_words", "noise", "mute"),
}

#: Table 31: the 12-cell lightweight panel.
PANEL = [
    "bi_tv_drop_words_noise_t30_v30",
    "bi_tv_drop_words_noise_t30_v70",
    "bi_tv_drop_words_noise_t70_v30",
    "bi_tv_drop_words_noise_t70_v70",
    "bi_ta_drop_words_mute_t30_a30",
    "bi_ta_drop_words_mute_t70_a50",
    "bi_va_noise_mute_v30_a30",
    "bi_va_noise_mute_v70_a50",
    "tri_drop_words_noise_mute_t30_v30_a30",
    "tri_drop_words_noise_mute_t30_v70_a30",
    "tri_drop_words_noise_mute_t70_v70_a30",
    "tri_word_shuffle_noise_mute_t70_v70_a50",
]
#: Table 33: conditions evaluated under all four option orders.
OPTION_ORDER_BASES = [
    "clean",
    "single_drop_words_t70",
    "single_noise_v70",
    "bi_tv_drop_words_noise_t30_v70",
    "bi_tv_drop_words_noise_t70_v70",
    "tri_drop_words_noise_mute_t30_v70_a30",
]
#: G.6: the prompt-robustness subset (clean, the paper's steepest single cell per modality, the
#: strongest text-vision and trimodal cells): the default, fixed list. ``sceval prompt-subset``
#: chooses those cells from one model's own results instead (:mod:`sceval_plugin.prompt_subset`).
PROMPT_BASES = [
    "clean",
    "single_drop_words_t70",
    "single_noise_v70",
    "single_mute_a70",
    "bi_tv_drop_words_noise_t30_v70",
    "tri_drop_words_noise_mute_t30_v70_a30",
]


#: The prompt variants of the G.6 robustness subset (beside the standard JSON prompt).
PROMPT_ROBUSTNESS_VARIANTS = ("cot", "open")


def variant(base: Condition, cid: str, block: str, description: str, **change: Any) -> Condition:
    """``base`` with one thing changed, as condition ``cid`` of ``block``: it stays out of the suites,
    roles and aliases of the grid and names ``base`` as the cell it is compared with."""
    return replace(
        base, id=cid, block=block, suites=(), role="", aliases=(), base=base.id, description=description, **change
    )


def prompt_variant(base: Condition, prompt: str) -> Condition:
    """``base`` under another prompt: condition ``prompt_<prompt>_<base id>`` of the prompt block."""
    return variant(base, f"prompt_{prompt}_{base.id}", "prompt", f"{PROMPT_VARIANTS[prompt].id} prompt", prompt=prompt)


@hookimpl
def sceval_register_conditions(registry: ConditionRegistry) -> None:
    registry.add(Condition("clean", "clean", description="all modalities intact"))
    for name in operators.names():
        for severity in operators.CORRUPTING_SEVERITIES:
            spec = operators.get(name)
            registry.add(Condition(single_id(name, severity), "single", (Corruption(spec.modality, name, severity),)))
    for cells, role, in_29 in JOINT_SUITE:
        ops = tuple(op for op, _ in cells)
        suites = (S29 if in_29 else S46) + (("panel",) if joint_id(*cells) in PANEL else ())
        registry.add(joint(*cells, role=role, suites=suites, alias=ops in CANONICAL_OPERATORS))
    for control, description in CONTROLS.items():
        block = "missing" if control.startswith("missing") else "shortcut"
        registry.add(Condition(control, block, control=control, description=description))
    for base_id in OPTION_ORDER_BASES:
        base = registry.get(base_id)
        for order in range(4):
            shifted = f"options cyclically shifted by {order}"
            registry.add(variant(base, f"order{order}_{base_id}", "option_order", shifted, option_order=order))
    for base_id in PROMPT_BASES:
        for prompt in PROMPT_ROBUSTNESS_VARIANTS:
            registry.add(prompt_variant(registry.get(base_id), prompt))
