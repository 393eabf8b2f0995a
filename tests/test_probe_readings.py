"""The probe numbers follow the project's rules (issue 25): invalid answers missing for accuracy,
drops and slopes but wrong for the McNemar tests; Holm families per model unless pooled by name;
T_m intervals resample items, not trials; a probe's record states the frame times it sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from c3po_fixtures import write_mp4
from fixtures import write_logs

from faultline_eval.model_wrappers.reference import answer_messages
from faultline_eval.tasks import sceval_task as task
from sceval_plugin.conditions import catalogue
from sceval_plugin.data.records import item_from_row
from sceval_plugin.metrics.probe_effects import trust_bias
from sceval_plugin.metrics.protocol import TRIAL_COLUMNS, catalogue_info

BIN = Path(sys.executable).parent
DESYNC = [c.id for c in catalogue() if c.id.startswith("probe_desync_")]
INVALID = "no idea"  # the parser finds no option: an invalid answer


def unaffected(doc: dict) -> str:
    """A model the desync probes do not change: per item the same answer as clean (one in five
    invalid, one in five wrong); under frame reverse one in five invalid (others), the rest right."""
    k = int(doc["sample_id"].rsplit("-", 1)[1])
    if doc["condition_id"] == "probe_temporal_frame_reverse":
        return INVALID if k % 5 == 0 else json.dumps({"answer": doc["target"]})
    wrong = "B" if doc["target"] == "A" else "A"
    return INVALID if k % 5 == 1 else json.dumps({"answer": wrong if k % 5 == 2 else doc["target"]})


def report(tmp_path: Path, logs: list[Path], name: str, *flags: str) -> Path:
    env = {**os.environ, "SCEVAL_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [
            str(BIN / "sceval"),
            "report",
            *map(str, logs),
            "-o",
            str(tmp_path / name),
            "--bootstrap",
            "50",
            "--quiet",
            "--no-figures",
            "--no-model-pairs",
            *flags,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp_path / name


@pytest.mark.slow
def test_probe_accuracy_drop_and_desync_slope_leave_invalid_answers_out_but_tests_count_them_wrong(tmp_path):
    """~15 s: demo logs of clean, the ten desync shifts and frame reverse, then `sceval report`."""
    records = write_logs(
        tmp_path / "logs", "unaffected", unaffected, ["clean", *DESYNC, "probe_temporal_frame_reverse"]
    )
    out = report(tmp_path, [tmp_path / "logs"], "report")
    trials = pd.DataFrame(
        {
            "condition_id": r["condition_id"],
            "sample_id": r["sample_id"],
            "correct": r["correct"],
            "not_applicable": (r.get("probe") or {}).get("not_applicable"),
        }
        for r in records
    )
    clean = trials[trials["condition_id"] == "clean"].set_index("sample_id")["correct"]
    table = pd.concat([pd.read_csv(out / f"probes_{f}.csv") for f in ("desync", "temporal")]).set_index("condition_id")
    assert len(table) == 11
    for cid, row in table.iterrows():
        applied = trials[(trials["condition_id"] == cid) & trials["not_applicable"].isna()]
        assert row["accuracy"] == pytest.approx(applied["correct"].mean())  # pandas skips None: valid only
        assert row["clean_accuracy"] == pytest.approx(clean.reindex(applied["sample_id"]).mean()), cid
        assert row["drop"] == pytest.approx(row["clean_accuracy"] - row["accuracy"]), cid
    desync = table.loc[DESYNC]
    assert (desync["drop"].abs() < 1e-12).all() and (desync["accuracy"] == desync["clean_accuracy"]).all()
    summary = pd.read_csv(out / "probes_summary.csv").iloc[0]
    assert summary["desync_slope"] == pytest.approx(0, abs=1e-12)  # a flat curve: clean at 0 s is valid-only too
    assert summary["temporal_drop"] == pytest.approx(table.loc["probe_temporal_frame_reverse", "drop"])
    # the significance test counts invalid answers as wrong: its paired difference is another number
    # (strict: 3/5 clean vs 4/5 reversed; valid only: 3/4 vs 4/4), its p is the table's
    comparisons = pd.read_csv(out / "comparisons.csv").set_index("condition_b")
    reverse = comparisons.loc["probe_temporal_frame_reverse"]
    assert reverse["diff"] == pytest.approx(-0.2) and table.loc["probe_temporal_frame_reverse", "drop"] == -0.25
    assert table.loc["probe_temporal_frame_reverse", "p_mcnemar"] == pytest.approx(reverse["p_mcnemar"])


def reference(doc: dict) -> str:
    return answer_messages(task.doc_to_messages(doc))


@pytest.mark.slow
def test_holm_families_are_per_model_unless_pooled_by_name(tmp_path):
    """~40 s: two models' desync logs, three reports. By default one model's adjusted p does not
    depend on which other models are reported; --holm-families pooled corrects over all of them."""
    write_logs(tmp_path / "ref", "sceval_reference", reference, ["clean", *DESYNC])
    write_logs(tmp_path / "other", "other", unaffected, ["clean", *DESYNC])
    alone = pd.read_csv(report(tmp_path, [tmp_path / "ref"], "alone") / "probes_desync.csv")
    both = pd.read_csv(report(tmp_path, [tmp_path / "ref", tmp_path / "other"], "both") / "probes_desync.csv")
    pooled_dir = report(tmp_path, [tmp_path / "ref", tmp_path / "other"], "pooled", "--holm-families", "pooled")
    pooled = pd.read_csv(pooled_dir / "probes_desync.csv")
    ref = both[both["model"] == "sceval_reference"].reset_index(drop=True)
    assert (ref["p_mcnemar"] < 0.05).any()  # the reference model does break with desync
    assert np.allclose(ref["p_holm"], alone["p_holm"])
    pooled_ref = pooled[pooled["model"] == "sceval_reference"].reset_index(drop=True)
    assert (pooled_ref["p_holm"] >= ref["p_holm"] - 1e-12).all() and (pooled_ref["p_holm"] > ref["p_holm"]).any()
    assert "per model" in (tmp_path / "both" / "probes_desync.md").read_text()
    assert "pooled over the reported models" in (pooled_dir / "probes_desync.md").read_text()
    settings = json.loads((pooled_dir / "report.json").read_text())["settings"]
    assert settings["holm_families"] == "pooled"


@pytest.mark.slow
def test_running_a_named_option_does_not_change_table_17_conditions_adjusted_p(tmp_path):
    """~10 s: a named option (``probe_temporal_middle_drop_1``, sceval_probe_options) is another
    reading, not one more of Table 17's comparisons: logging it beside the temporal probes leaves
    their Holm-adjusted p as it was (the option is corrected among the family's options)."""
    temporal = [
        c.id for c in catalogue() if c.id.startswith("probe_temporal_") and c.id != "probe_temporal_middle_drop_1"
    ]
    write_logs(tmp_path / "paper", "sceval_reference", reference, ["clean", *temporal])
    write_logs(tmp_path / "option", "sceval_reference", reference, ["probe_temporal_middle_drop_1"])
    alone = pd.read_csv(report(tmp_path, [tmp_path / "paper"], "alone") / "probes_temporal.csv")
    both = pd.read_csv(report(tmp_path, [tmp_path / "paper", tmp_path / "option"], "both") / "probes_temporal.csv")
    assert len(alone) == 5 and len(both) == 6
    assert (alone["p_mcnemar"] < 0.05).any()  # the reference model breaks with shuffled frames
    kept = both[~both["option"].astype(bool)].set_index("condition_id")["p_holm"]
    assert np.allclose(kept.loc[alone["condition_id"]], alone["p_holm"])


def test_trust_bias_over_all_tiers_resamples_items_not_trials():
    """An item answered alike under the three donor tiers is one item: the all-tier interval is
    the one-tier interval, not a narrower one from three times as many trials."""
    rows = []
    for k in range(12):
        follows = k % 3 == 0
        for tier in ("random", "category", "answer"):
            rows.append(
                {
                    "model": "m",
                    "condition_id": f"probe_mismatch_audio_{tier}",
                    "sample_id": f"s{k:02d}",
                    "variant": 0,
                    "correct": float(not follows),
                    "invalid": None,
                    "n_options": 4,
                    "prompt_id": "p",
                    "dataset": "d",
                    "answer": "B" if follows else "A",
                    "not_applicable": None,
                    "donor": "x",
                    "follows_donor": "B",
                    "donor_key_map": "-B--",
                }
            )
    t = pd.DataFrame(rows)[list(TRIAL_COLUMNS) + ["donor", "follows_donor", "donor_key_map"]]
    found = trust_bias(t, catalogue_info(), b=400).set_index("tier")
    assert found.loc["all", "trust_bias"] == pytest.approx(1 / 3) and found.loc["all", "determinable"] == 36
    assert found.loc["all", ["ci_low", "ci_high"]].tolist() == pytest.approx(
        found.loc["random", ["ci_low", "ci_high"]].tolist()
    )


def test_a_frame_budget_record_states_the_times_of_the_frames_sent(tmp_path):
    """A 16 s video: the default decode (F.2: at most 8 frames) takes 0, 2, ..., 14 s; the
    4-frame budget sends 0, 4, 8, 12 s, and the record says so, as the prompt does."""
    import soundfile

    write_mp4(tmp_path / "media" / "clip.mp4", frames=16, fps=1)
    soundfile.write(tmp_path / "media" / "a.wav", np.zeros(16_000 * 16, np.float32), 16_000)
    item = item_from_row(
        {
            "sample_id": "v1",
            "question": "What happens?",
            "options": ["a", "b"],
            "gold_key": "A",
            "visual": "media/clip.mp4",
            "audio": "media/a.wav",
        },
        tmp_path,
    )
    assert item.frame_times() == pytest.approx([0, 2, 4, 6, 8, 10, 12, 14])
    doc = {
        "row_id": "probe_frame_budget_4/v1/0",
        "condition_id": "probe_frame_budget_4",
        "sample_id": "v1",
        "source": "local",
        "variant": 0,
        "released": False,
        "target": "A",
        "dataset": "d",
        "item": task._item_json(item),
        "donor": "",
        "cohort": "gold_preserved",
    }
    record = task.process_results(doc, ['{"answer": "A"}'])["sceval_record"]
    assert record["frame_times_s"] == pytest.approx([0, 4, 8, 12])
    assert "taken at 0, 4, 8, 12 s" in task.doc_to_text(doc)  # what the prompt states
    clean = task.process_results({**doc, "condition_id": "clean", "row_id": "clean/v1/0"}, ['{"answer": "A"}'])
    assert clean["sceval_record"]["frame_times_s"] == pytest.approx([0, 2, 4, 6, 8, 10, 12, 14])


@pytest.mark.slow
def test_logs_of_a_reread_probe_made_under_the_earlier_reading_are_left_out_or_refused_by_name(tmp_path):
    """~8 s: `probe_distractor_text` kept its id when it took the paper's G.11 reading; a log of it
    without ``probe_readings`` (made before) is never pooled with today's: left out by name, or
    with --strict refused by name (tests/test_old_logs.py does the same on real old logs)."""
    write_logs(tmp_path / "new", "reference", unaffected, ["clean", "probe_distractor_text"])
    report(tmp_path, [tmp_path / "new"], "fresh")  # today's logs report
    old = tmp_path / "old"
    old.mkdir()
    for path in (tmp_path / "new").iterdir():
        text = path.read_text()
        if "samples_sceval_probe_distractor_text" in path.name:
            lines = [json.loads(line) for line in text.splitlines()]
            for line in lines:
                assert line["sceval_record"].pop("probe_readings") == 2
            text = "\n".join(map(json.dumps, lines)) + "\n"
        (old / path.name).write_text(text)
    kept = report(tmp_path, [old], "kept")
    trials = sum(len(p.read_text().splitlines()) for p in old.glob("*_samples_sceval_probe_distractor_text.jsonl"))
    assert json.loads((kept / "report.json").read_text())["left_out"] == [
        {
            "model": "reference",
            "condition_id": "probe_distractor_text",
            "reason": "earlier_probe_reading",
            "trials": trials,
        }
    ]
    assert "probe_distractor_text" not in set(pd.read_csv(kept / "conditions.csv")["condition_id"])
    done = subprocess.run(
        [str(BIN / "sceval"), "report", str(old), "-o", str(tmp_path / "stale"), "--quiet", "--no-figures", "--strict"],
        capture_output=True,
        text=True,
        env={**os.environ, "SCEVAL_CACHE": str(tmp_path / "cache")},
        timeout=300,
    )
    assert done.returncode != 0
    assert "probe_distractor_text: reference" in done.stderr and "earlier reading" in done.stderr
