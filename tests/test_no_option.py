"""The no-option generation control (Tables 33, 35): prompt, parsing, blind graded scoring, Table 35."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from faultline_eval.core.agreement import cohen_kappa, label_kappa
from faultline_eval.judges import grade
from faultline_eval.judges.base import CORRECT, INCORRECT, PARTIAL, UNANSWERABLE, JudgeRequest, Verdict
from faultline_eval.judges.embedding import EmbeddingJudge
from faultline_eval.judges.judge_prompt import parse_reply, parse_verdict
from faultline_eval.model_wrappers.lmms_judge import LmmsJudge
from faultline_eval.tasks import sceval_task
from sceval_plugin import no_option_control as no_option
from sceval_plugin.conditions import catalogue
from sceval_plugin.data.manifest import Manifest
from sceval_plugin.metrics.no_option_drops import agreement_table, no_option_frame, transfer_table
from sceval_plugin.metrics.protocol import catalogue_info, trials_frame

BIN = Path(sys.executable).parent


# --- conditions and prompt -------------------------------------------------------------------------


def test_every_table_35_cell_has_a_no_option_twin_with_the_same_corruptions():
    for base in no_option.NO_OPTION_BASES:
        twin = catalogue().get(no_option.condition_id(base))
        assert twin.block == "no_option" and twin.base == base and twin.prompt_id == "sceval-no-option-v1"
        assert twin.corruptions == catalogue().get(base).corruptions


def test_the_no_option_prompt_shows_no_options_but_the_same_question():
    row = _rows("no_option_clean", limit=1)[0]
    doc = {**row, "released": False}
    text = sceval_task.doc_to_text(doc)
    item = sceval_task._item(row["item"])
    assert item.question in text and "Options:" not in text
    assert not any(f"{key}. {option}" in text for key, option in item.options)
    assert '"evidence"' in text


def test_the_reference_model_answers_freely_and_says_when_it_cannot_tell():
    from faultline_eval.model_wrappers.reference import CANNOT_TELL, answer_messages, decide

    row = _rows("no_option_clean", limit=1)[0]
    item = sceval_task._item(row["item"])
    reply = json.loads(answer_messages(sceval_task.doc_to_messages({**row, "released": False})))
    assert reply["answer"] == dict(item.options)[item.gold_key] and reply["evidence"]
    blind = json.loads(
        answer_messages(
            [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": sceval_task.doc_to_text({**row, "released": False})}],
                }
            ]
        )
    )
    assert blind["answer"] == CANNOT_TELL  # no frames, no audio: nothing to describe
    assert decide(item.question, list(item.options), [], None)["answer"] in dict(item.options)  # MC guesses


def _rows(condition_id: str, limit: int | None = None) -> list[dict]:
    rows, _ = sceval_task.build_rows(catalogue().get(condition_id))
    return rows[:limit] if limit else rows


# --- parsing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply, expected",
    [
        ('{"answer": "red circle", "evidence": "frame 2"}', ("red circle", "frame 2", None)),
        ('```json\n{"answer": 3}\n```', ("3", None, None)),
        ("green", ("green", None, None)),
        ("I cannot tell from the input", ("I cannot tell from the input", None, None)),
        ("   ", (None, None, "empty")),
        ('{"answer": "", "evidence": "noise"}', (None, "noise", "parse_failure")),
        ('{"answer": "red", "evid', (None, None, "parse_failure")),
    ],
)
def test_parse_reply(reply, expected):
    assert no_option.parse_reply(reply) == expected


# --- the graded scale ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply, label",
    [
        ("CORRECT", CORRECT),
        ("correct.", CORRECT),
        ("**Partially correct**", PARTIAL),
        ("PARTIAL", PARTIAL),
        ("Incorrect: it names blue", INCORRECT),
        ("UNANSWERABLE", UNANSWERABLE),
        ("Correct, but also incorrect", None),
        ("Partial or unanswerable", None),
        ("YES", None),
        ("It is right", None),
    ],
)
def test_graded_labels_are_parsed_strictly(reply, label):
    assert parse_verdict(reply, "graded") == label


def test_graded_reply_after_reasoning_and_equivalence_scale_unchanged():
    assert parse_reply("<think>the colour matches</think>\nCORRECT", scale="graded") == (CORRECT, None)
    value, error = parse_reply("maybe", scale="graded")
    assert value is None and error.startswith("unparseable")
    assert parse_verdict("CORRECT") is None and parse_verdict("YES") == "YES"


def _request(gold: str, prediction: str, scale: str = "graded") -> JudgeRequest:
    return JudgeRequest("s1", "What colour is it?", gold, prediction, scale=scale)


@pytest.mark.parametrize(
    "gold, prediction, label",
    [
        ("red circle", "red circle", CORRECT),  # exact match
        ("red circle", "red square", PARTIAL),
        ("red circle", "cannot tell from the input", UNANSWERABLE),
        ("3", "4", INCORRECT),  # the numbers guard, no embedding needed
        ("red", "red and blue", INCORRECT),  # containment with a marker
    ],
)
def test_exact_and_embedding_scorers_give_graded_labels(gold, prediction, label):
    for judge in (no_option_judge("exact"), EmbeddingJudge()):
        (graded,) = grade([_request(gold, prediction)], judge)
        assert graded.label == label, judge.judge_id
        assert graded.correct == (label == CORRECT)


def test_equivalence_requests_keep_yes_no():
    (graded,) = grade([_request("red circle", "cannot tell", scale="equivalence")], no_option_judge("exact"))
    assert graded.label == "NO" and graded.correct is False


def no_option_judge(spec: str):
    from faultline_eval.judges import make_judge

    return make_judge(spec)


def test_label_kappa_matches_its_definition_and_the_binary_case():
    a = [CORRECT, CORRECT, PARTIAL, UNANSWERABLE, INCORRECT, CORRECT]
    b = [CORRECT, PARTIAL, PARTIAL, UNANSWERABLE, CORRECT, CORRECT]
    observed = 4 / 6
    chance = (3 * 3 + 1 * 2 + 1 * 1 + 1 * 0) / 36
    assert label_kappa(a, b) == pytest.approx((observed - chance) / (1 - chance))
    x, y = [True, True, False, False, True], [True, False, False, False, True]
    assert cohen_kappa(x, y) == label_kappa(x, y)


# --- blind grading ---------------------------------------------------------------------------------


class RecordingJudge:
    """A scorer that keeps every request it is shown and answers with one fixed verdict."""

    prompt_version = "test"
    sees_media = False

    def __init__(self, judge_id: str, value: str | None = INCORRECT, error: str | None = None):
        self.judge_id, self.value, self.error, self.seen = judge_id, value, error, []

    def judge(self, requests):
        self.seen += list(requests)
        return [Verdict(self.value, self.judge_id, raw="fixed", error=self.error) for _ in requests]


def _use_scorers(monkeypatch, first, second):
    monkeypatch.setattr(no_option, "scorers", lambda: (("first", first, None), ("second", second, None)))


def test_scorers_never_see_the_condition_or_its_corruption(monkeypatch):
    first, second = RecordingJudge("one"), RecordingJudge("two")
    _use_scorers(monkeypatch, first, second)
    reply = json.dumps({"answer": "a purple hexagon", "evidence": "the question is missing words"})
    cells = ["no_option_clean", "no_option_single_drop_words_t70", "no_option_tri_drop_words_noise_mute_t30_v70_a30"]
    shown = {}
    for cid in cells:
        row = _rows(cid, limit=1)[0]
        doc = {**row, "released": False}
        out = sceval_task.process_results(doc, [reply])
        assert out["sceval_record"]["no_option"]["scorers"][1]["label"] == INCORRECT
        shown[cid] = (second.seen[-1], sceval_task.trial_for(doc, with_media=False)[1].question)
    clean_request = shown["no_option_clean"][0]
    for cid, (request, corrupted_question) in shown.items():
        assert request == clean_request  # the same sample and answer give the same request in every condition
        text = " ".join(
            str(v) for v in (request.sample_id, request.question, request.gold, request.prediction, request.context)
        )
        condition = catalogue().get(cid)
        for leak in (cid, condition.base, "drop_words", "noise", "mute", "evidence", "missing words"):
            assert leak not in text
        if condition.corruptions:
            assert corrupted_question != request.question and corrupted_question not in text
    assert first.seen == second.seen


def test_a_malformed_judge_reply_is_recorded_with_its_category_and_never_counted(monkeypatch):
    class Replies:
        is_simple = True
        task_dict: dict = {}

        def generate_until(self, requests):
            return ["The answer looks mostly fine to me"] * len(requests)

    llm = LmmsJudge("fake", model_instance=Replies(), media=False, thinking=False)
    _use_scorers(monkeypatch, no_option_judge("exact"), llm)
    row = _rows("no_option_clean", limit=1)[0]
    record = sceval_task.process_results(
        {**row, "released": False}, ['{"answer": "a purple hexagon", "evidence": "x"}']
    )["sceval_record"]
    entry = record["no_option"]
    assert entry["scorers"][0]["label"] == INCORRECT and entry["scorers"][1]["label"] is None
    assert entry["scorers"][1]["error"].startswith("unparseable")
    assert record["correct"] is None and record["invalid"] == "judge_error" and entry["agree"] is None


def test_a_scorer_that_would_see_media_is_refused(monkeypatch):
    monkeypatch.setenv(no_option.SCORER_ENVS[1], "lmms:sceval_reference")
    with pytest.raises(ValueError, match="judge_media=false"):
        no_option.scorers()


# --- Table 35 by hand ------------------------------------------------------------------------------


def _mc(cid, sample, correct, variant=0, invalid=None):
    return {
        "model": "m",
        "condition_id": cid,
        "sample_id": sample,
        "variant": variant,
        "correct": correct,
        "invalid": invalid,
        "n_options": 4,
        "prompt_id": "p",
        "dataset": "d",
    }


def _no(cid, sample, labels, variant=0, invalid=None, exact=False):
    scorers = [{"label": label, "judge_id": f"j{k}", "exact_match": exact} for k, label in enumerate(labels)]
    return {
        "model": "m",
        "condition_id": cid,
        "sample_id": sample,
        "variant": variant,
        "invalid": invalid,
        "no_option": {"scorers": scorers if invalid is None else [], "invalid": invalid},
    }


def test_transfer_delta_recomputed_by_hand():
    cell, twin_clean, twin = "single_noise_v70", "no_option_clean", "no_option_single_noise_v70"
    mc = trials_frame(
        [
            _mc("clean", "a", 1),
            _mc("clean", "b", 1),
            _mc("clean", "c", 1),
            _mc("clean", "d", 0),
            _mc(cell, "a", 1, 0),
            _mc(cell, "a", 0, 1),
            _mc(cell, "b", 0),
            _mc(cell, "c", None, invalid="empty"),
            _mc(cell, "d", 0),
        ]
    )
    no = no_option_frame(
        [
            _no(twin_clean, "a", [CORRECT, CORRECT]),
            _no(twin_clean, "b", [CORRECT, CORRECT]),
            _no(twin_clean, "c", [PARTIAL, CORRECT]),
            _no(twin_clean, "d", [CORRECT, CORRECT]),
            _no(twin, "a", [UNANSWERABLE, UNANSWERABLE]),
            _no(twin, "b", [PARTIAL, PARTIAL]),
            _no(twin, "c", [CORRECT, CORRECT]),  # "d" has no no-option cell trial: the manifest excluded it
        ]
    )
    table = transfer_table(mc, no, catalogue_info(), b=200)
    row = table.set_index("condition").loc[cell]
    # shared subset a, b, c. MC: clean 1,1,1; cell 0.5,0,0 (invalid counts as wrong) -> drops .5,1,1
    # no-option (scorer 2): clean 1,1,1; cell 0,0,1 -> drops 1,1,0
    assert row["n_shared"] == 3 and row["row"] == "noise@70"
    assert row["mc_drop"] == pytest.approx(2.5 / 3)
    assert row["no_option_drop"] == pytest.approx(2 / 3)
    assert row["transfer"] == pytest.approx(2 / 3 - 2.5 / 3)
    # scorer 1 grades c PARTIAL on clean: clean 1,1,0; cell 0,0,1 -> drops 1,1,-1
    assert row["no_option_drop_scorer_1"] == pytest.approx(1 / 3)
    assert row["transfer_low"] <= row["transfer"] <= row["transfer_high"]
    # McNemar on per-sample scores >= 0.5: MC a stays right (0.5), b and c turn wrong: b=2, c=0
    assert row["p_mcnemar_mc"] == pytest.approx(0.5)
    half = transfer_table(mc, no, catalogue_info(), b=50, partial_credit=0.5).set_index("condition").loc[cell]
    assert half["no_option_drop"] == pytest.approx((1 + 0.5 + 0) / 3)
    # a manifest set at report time: b's noise@70 cell does not preserve the gold -> subset a, c
    manifest = Manifest(cells={("b", "noise", 70, 0): {"gold_preserved": False}})
    kept = transfer_table(mc, no, catalogue_info(), b=50, manifest=manifest).set_index("condition").loc[cell]
    assert kept["n_shared"] == 2 and kept["mc_drop"] == pytest.approx(1.5 / 2)
    assert kept["no_option_drop"] == pytest.approx(1 / 2)


def test_agreement_table_counts_labels_and_kappa():
    frame = no_option_frame(
        [
            _no("no_option_clean", "a", [CORRECT, CORRECT], exact=True),
            _no("no_option_clean", "b", [PARTIAL, CORRECT]),
            _no("no_option_clean", "c", [UNANSWERABLE, UNANSWERABLE]),
            _no("no_option_clean", "d", [], invalid="empty"),
        ]
    )
    row = agreement_table(frame).set_index("condition_id").loc["no_option_clean"]
    assert (row["graded"], row["ungraded"], row["decided_without_exact_match"]) == (3, 1, 2)
    assert row["agreement"] == pytest.approx(2 / 3)
    assert row["kappa"] == pytest.approx(
        label_kappa([CORRECT, PARTIAL, UNANSWERABLE], [CORRECT, CORRECT, UNANSWERABLE])
    )
    assert (row["correct"], row["partial"], row["unanswerable"]) == (2, 0, 1)


# --- through the real CLI --------------------------------------------------------------------------


@pytest.mark.slow
def test_sceval_no_option_runs_through_lmms_eval_and_the_report_shows_table_35(tmp_path):
    tasks = "sceval_clean,sceval_single_noise_v70,sceval_no_option_clean,sceval_no_option_single_noise_v70"
    done = subprocess.run(
        [
            str(BIN / "lmms-eval"),
            "--model",
            "sceval_reference",
            "--tasks",
            tasks,
            "--limit",
            "6",
            "--log_samples",
            "--output_path",
            "out/",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    records = {}
    for path in (tmp_path / "out").rglob("*_samples_sceval_*.jsonl"):
        records[path.stem.split("_samples_", 1)[1]] = [
            json.loads(x)["sceval_record"] for x in path.read_text().splitlines()
        ]
    clean = records["sceval_no_option_clean"]
    assert all(
        r["no_option"]["label"] == CORRECT and r["correct"] == 1 for r in clean
    )  # the reference model reads the demo
    assert all(r["no_option"]["answer"] == r["no_option"]["gold_text"] for r in clean)
    noisy = records["sceval_no_option_single_noise_v70"]
    assert {r["no_option"]["scorers"][0]["judge_id"] for r in noisy} == {"exact"}
    report = subprocess.run(
        [str(BIN / "sceval"), "report", "out/", "-o", "rep", "--no-figures", "--quiet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert report.returncode == 0, report.stderr[-3000:]
    table = pd.read_csv(tmp_path / "rep" / "no_option_transfer.csv")
    shared = set.intersection(*({r["sample_id"] for r in rs} for rs in records.values()))
    assert list(table["condition"]) == ["single_noise_v70"] and table["n_shared"].iloc[0] == len(shared) >= 2

    def by_sample(rs):
        frame = pd.DataFrame(rs)
        return (
            frame[frame["sample_id"].isin(shared)].groupby("sample_id")["correct"].apply(lambda c: c.fillna(0).mean())
        )

    mc_drop = (by_sample(records["sceval_clean"]) - by_sample(records["sceval_single_noise_v70"])).mean()
    no_drop = (by_sample(clean) - by_sample(noisy)).mean()
    assert table["mc_drop"].iloc[0] == pytest.approx(mc_drop)
    assert table["no_option_drop"].iloc[0] == pytest.approx(no_drop)
    assert table["transfer"].iloc[0] == pytest.approx(no_drop - mc_drop)
    assert "Table 35" in (tmp_path / "rep" / "no_option_transfer.md").read_text()
    everything = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert everything["no_option"]["agreement"] and not any(
        c["condition_id"].startswith("no_option") for c in everything["conditions"]
    )  # never in headline tables
    assert np.isfinite(table["transfer_low"].iloc[0])
