"""The 25 generation specs against App. I's bypass test, as far as a spec's text can be checked.

App. I rejects an item "if the sample can be answered correctly by ignoring ANY of the given
modalities", or by priors ("The Prior Test", "The 'Frontier Prior' Check"), and asks for no
"complex arithmetic". A spec cannot prove its items pass, but it must ask for items that can:
each modality's entry says what only it contributes, a counterfactual's says which modality
carries the conflict, and no spec invites a yes/no answer.
"""

from __future__ import annotations

import json
import re

from c3po_plugin.construction.settings import BANNED_WORDS
from c3po_plugin.construction.specs import builtin_specs, spec_for
from c3po_plugin.templates import registry

MEDIA = ("video", "image", "audio")
YES_NO_QUESTION = re.compile(r"^(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", re.I)


def answer_of(spec) -> str:
    return spec.example_scenario.rsplit("Answer:", 1)[1].strip()


def test_every_spec_states_what_each_modality_alone_contributes_and_where_the_conflict_is():
    for spec in builtin_specs():
        template = registry().get(spec.template_id)
        entries = spec.generation_spec
        media = [m for m in MEDIA if m in template.modalities]
        assert sorted(m for m in entries if m != "text") == sorted(media), spec.template_id
        contributions = [entries[m].get("unique_contribution", "").strip() for m in media]
        assert all(contributions), (spec.template_id, contributions)
        assert len(set(contributions)) == len(contributions), spec.template_id
        carriers = [m for m, entry in entries.items() if entry.get("conflict")]
        assert len(carriers) == (1 if template.category == "cc" else 0), (spec.template_id, carriers)
        shown = spec.prompt_json()["generation_spec"]  # the generator and the auditor see both
        assert all(shown[m]["unique_contribution"] == entries[m]["unique_contribution"] for m in media)


def test_no_spec_invites_an_answer_guessable_without_the_media():
    for spec in builtin_specs():
        skeleton = spec.generation_spec["text"]["query_skeleton"]
        assert not YES_NO_QUESTION.match(skeleton), (spec.template_id, skeleton)
        assert answer_of(spec).lower().rstrip(".") not in ("yes", "no"), spec.template_id
        if spec.template_id != "IC02":  # the paper's own skeleton, which App. I has the generator rewrite
            words = re.findall(r"[\w'{}]+", skeleton.lower())
            assert len(words) <= 12 and not set(words) & set(BANNED_WORDS), (spec.template_id, skeleton)


def test_disclaimed_evidence_keeps_a_conflict_that_only_the_disclaimer_resolves():
    """The old CC12 drew the disclaimed picture "consistent with the video": nothing was left to
    resolve, and the video alone answered."""
    spec = spec_for("DisclaimedEvidence")
    entries = spec.generation_spec
    assert "consistent with" not in json.dumps(spec.prompt_json()).lower()
    assert "agree" not in spec.logical_form
    assert entries["video"]["conflict"] and "differs from the video's" in entries["image"]["content_logic"]
    assert "disclaim" in entries["audio"]["content_logic"].lower()
    assert "without it" in entries["audio"]["unique_contribution"]  # the disclaimer is what resolves it


def test_quantitative_verification_needs_counting_not_arithmetic():
    spec = spec_for("QuantitativeVerification")
    words = " ".join([spec.logical_form, spec.example_scenario, spec.generation_spec["text"]["query_skeleton"]])
    assert not re.search(r"how many more|difference|shortfall|\bsum\b|\btotal\b|\bsuffice", words, re.I)
    answer = answer_of(spec)  # which group, not a number
    assert not re.search(r"\d", answer)
    assert not re.fullmatch(r"\W*(one|two|three|four|five|six|seven|eight|nine|ten)\W*", answer, re.I)
    assert "no arithmetic" in spec.generation_spec["audio"]["constraints"]


def test_silent_outcome_inference_leaves_the_outcome_open_to_priors():
    """The old IC10 ("a glass tips off a table ... Answer: it broke") was answerable by common sense."""
    spec = spec_for("SilentOutcomeInference")
    entries = spec.generation_spec
    assert "broke" not in spec.example_scenario
    assert "two or more" in entries["video"]["selection_filter"]["requirement"]
    assert "most likely" in entries["audio"]["constraints"] and "most likely" in spec.logical_form
    assert "colour or place" in entries["video"]["unique_contribution"]  # the answer needs the video
