"""`sceval report` and `faultline audit` on runs of wrapped lmms-eval tasks (issue 27, design §7-8).

The run folders are written as lmms-eval 0.7.3 writes them (``loggers/evaluation_tracker.py``:
``<output_path>/<model dir>/<date>_results.json`` and ``<date>_samples_<task>.jsonl``, one line per
doc with ``doc_id``, ``target``, ``filtered_resps`` (flattened), ``token_counts``, ``doc_hash``,
``input`` and every value ``process_results`` returned). The per-doc items come from the REAL
base task's ``process_results`` (worldsense, mme, ami_test) on scripted replies, and each
variant's aggregate in results.json from the real base aggregation, as lmms-eval computes it.
The scripted models answer from one modality only, so the audit's shares are known in advance.
The expected numbers below are computed here from the replies, not read from the report.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_lmms_cli import lmms_eval

from faultline_eval.core.stats import resample_weights
from sceval_plugin.base_task import BaseTaskError, aggregate, base_config, metric_specs
from sceval_plugin.metrics.task_metrics import aggregate_drops, mean_score_drops
from sceval_plugin.report import build_report
from sceval_plugin.report.task_metric_section import UNWRAPPED
from sceval_plugin.report.wrapped_reader import option_count, read_wrapped_runs
from sceval_plugin.sceval_trial import WrappedTrial

FAULTLINE = str(Path(sys.executable).with_name("faultline"))
LETTERS = "ABCD"
N_DOCS = 24
#: Condition -> variants run (the catalogue's counts).
CONDITIONS = {
    "clean": 1,
    "single_noise_v30": 3,
    "single_noise_v70": 3,
    "single_mute_a70": 3,
    "bi_va_noise_mute_v70_a50": 3,
    "missing_audio": 1,
    "missing_vision": 1,
    "missing_text": 1,
    "shortcut_question_options": 1,
    "shortcut_options_only": 1,
}
NO_MEDIA = ("shortcut_question_options", "shortcut_options_only")


def worldsense_doc(i: int) -> dict:
    return {
        "index": i,
        "question": f"What plays at moment {i}?",
        "candidates": [f"{x}. thing {x}{i}" for x in LETTERS],
        "answer": LETTERS[i % 4],
        "task_type": ["Counting", "Recognition"][i % 2],
        "task_domain": "Music",
        "duration": "short",
        "audio_class": ["music"],
    }


def prompt(doc: dict) -> str:
    return f"{doc['question']}\n" + "\n".join(doc["candidates"]) + "\nAnswer with the option's letter."


def listener(condition: str, variant: int, doc: dict) -> str:
    """Right whenever it hears the audio; noise on the frames breaks one doc in four per variant
    at severity 70 (one in eight at 30); without audio it says "A"."""
    heard = condition not in ("missing_audio", "single_mute_a70", "bi_va_noise_mute_v70_a50", *NO_MEDIA)
    if not heard:
        return "A"
    i = doc["index"]
    if condition == "single_noise_v70" and (i + variant) % 4 == 0:
        return LETTERS[(i + 1) % 4]
    if condition == "single_noise_v30" and (i + variant) % 8 == 0:
        return LETTERS[(i + 1) % 4]
    return doc["answer"]


def watcher(condition: str, variant: int, doc: dict) -> str:
    """Right whenever it sees the frames (noise at 70 breaks half the docs); otherwise "B"."""
    seen = condition not in ("missing_vision", *NO_MEDIA)
    if not seen or (condition in ("single_noise_v70", "bi_va_noise_mute_v70_a50") and doc["index"] % 2 == variant % 2):
        return "B"
    return doc["answer"]


def write_run(
    root: Path, model: str, base: str, docs: list[dict], reply, conditions: dict[str, int], *, date: str
) -> Path:
    """One lmms-eval output folder of ``model`` over ``<base>__<condition>__var<k>``, laid out as
    EvaluationTracker writes it; items from the base task's real ``process_results``, each
    task's aggregate from its real aggregation."""
    folder = root / model
    folder.mkdir(parents=True, exist_ok=True)
    process = base_config(base)["process_results"]
    specs = metric_specs(base)
    results, higher, samples = {}, {}, {}
    for condition, variants in conditions.items():
        for variant in range(variants):
            task = f"{base}__{condition}__var{variant}"
            lines, items = [], {s.name: [] for s in specs}
            for doc_id, doc in enumerate(docs):
                text = reply(condition, variant, doc)
                out = process(doc, [text])
                score = next(iter(out.values())).get("score") if isinstance(next(iter(out.values())), dict) else None
                key = str(doc.get("index", doc.get("question_id", doc_id)))
                out["faultline_trial"] = WrappedTrial(
                    sample_id=key,
                    variant=variant,
                    correct=WrappedTrial.correct_of(score),
                    invalid="empty" if not text else None,
                    base_task=base,
                    condition_id=condition,
                    doc_id=doc_id,
                    unit=str(doc.get("question_id", key)),
                    score=score,
                    adapter=f"{base}@1",
                    seed_scheme="3",
                ).to_json()
                for name in items:
                    if name in out:
                        items[name].append(out[name])
                lines.append(
                    {
                        "doc_id": doc_id,
                        "target": str(doc.get("answer", doc.get("text", ""))),
                        "filtered_resps": text,
                        "token_counts": [None],
                        "doc_hash": f"{doc_id:064x}",
                        "input": prompt(doc) if "candidates" in doc else str(doc.get("question", "")),
                        **out,
                    }
                )
            results[task] = {"alias": task}
            for spec in specs:
                if items[spec.name]:
                    # as lmms-eval's evaluator calls it: what it returns (None: air_bench's submission) is written
                    value = spec.aggregation(items[spec.name], **({"args": None} if spec.takes_args else {}))
                    results[task][f"{spec.name},none"] = value
                    results[task][f"{spec.name}_stderr,none"] = "N/A"
            higher[task] = {s.name: s.higher_is_better for s in specs}
            samples[task] = lines
    payload = {
        "results": results,
        "group_subtasks": {task: [] for task in results},
        "configs": {task: {"task": task} for task in results},
        "versions": dict.fromkeys(results, "Yaml"),
        "n-shot": dict.fromkeys(results, 0),
        "higher_is_better": higher,
        "n-samples": {task: {"original": len(docs), "effective": len(docs)} for task in results},
        "config": {"model": model, "model_args": "", "batch_size": "1", "limit": None},
        "model_name": model,
        "model_name_sanitized": model,
        "date": date,
    }
    (folder / f"{date}_results.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
    for task, lines in samples.items():
        with (folder / f"{date}_samples_{task}.jsonl").open("a", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
    return folder


@pytest.fixture(scope="module")
def worldsense_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("wrapped")
    docs = [worldsense_doc(i) for i in range(N_DOCS)]
    write_run(root, "listener", "worldsense", docs, listener, CONDITIONS, date="20261202_070000")
    write_run(root, "watcher", "worldsense", docs, watcher, CONDITIONS, date="20261202_070000")
    # an unwrapped run of the base task by the listener (original media): 23 of 24 right
    unwrapped = {"results": {"worldsense": {"alias": "worldsense", "worldsense_score,none": 100 * 23 / 24}}}
    unwrapped["config"] = {"model": "listener", "model_args": ""}
    (root / "listener" / "20261202_060000_results.json").write_text(json.dumps(unwrapped), encoding="utf-8")
    return root, docs


def test_option_count_reads_the_lettered_options_of_the_prompt():
    assert option_count(prompt(worldsense_doc(0))) == 4
    assert option_count("Is it red? Please answer yes or no.") is None
    assert option_count("Question: x\nOption:\n(A) a\n(B) b\n(C) c\n") == 3


def test_reader_pairs_the_trials_items_and_reported_values(worldsense_runs):
    root, docs = worldsense_runs
    runs = read_wrapped_runs([root])
    per_model = sum(CONDITIONS.values()) * len(docs)
    assert len(runs.trials) == 2 * per_model
    assert set(runs.trials["model"]) == {"listener", "watcher"}
    clean = runs.values[(runs.values["model"] == "listener") & (runs.values["condition_id"] == "clean")]
    assert clean["value"].tolist() == [100.0]
    items = runs.items[("listener", "worldsense__clean__var0", "worldsense_score")]
    assert [item["question_id"] for item in items] == list(range(len(docs)))
    assert runs.trials["n_options"].eq(4).all()


def test_the_base_run_on_the_same_data_is_the_unwrapped_row(worldsense_runs, tmp_path):
    """``<base>__unwrapped`` (what ``faultline wrap`` writes beside the wrapped tasks, on their
    data) is read as the base's value, before a run of the base under its own name, in any file order."""
    import shutil

    root, _ = worldsense_runs
    copy = tmp_path / "runs"
    shutil.copytree(root, copy)
    same_data = {"results": {"worldsense__unwrapped": {"worldsense_score,none": 50.0}}}
    same_data["config"] = {"model": "listener", "model_args": ""}
    (copy / "listener" / "20261202_050000_results.json").write_text(json.dumps(same_data), encoding="utf-8")
    unwrapped = read_wrapped_runs([copy]).unwrapped
    listener = unwrapped[unwrapped["model"] == "listener"]
    assert listener[["base_task", "metric", "value"]].values.tolist() == [["worldsense", "worldsense_score", 50.0]]
    assert read_wrapped_runs([root]).unwrapped["value"].tolist() == [100 * 23 / 24]  # alone, the base's own name


def test_drops_worst_variant_and_paired_interval(worldsense_runs, tmp_path):
    root, docs = worldsense_runs
    done = build_report([root], tmp_path / "r", b=400, seed=7, progress=False)
    raw = pd.read_csv(tmp_path / "r" / "task_metrics_worldsense.csv")
    row = raw[(raw["model"] == "listener") & (raw["condition_id"] == "single_noise_v70")].iloc[0]
    # independently: the listener misses doc i at variant k when (i + k) % 4 == 0
    wrong = [sum((i + k) % 4 == 0 for i in range(N_DOCS)) for k in range(3)]
    per_variant = [100 * (N_DOCS - w) / N_DOCS for w in wrong]
    assert row["value"] == pytest.approx(np.mean(per_variant))
    assert row["worst_variant_value"] == pytest.approx(min(per_variant))
    assert row["drop"] == pytest.approx(100 - np.mean(per_variant))  # clean − condition, higher is better
    assert row["worst_variant_drop"] == pytest.approx(100 - min(per_variant))
    assert row["drop_ci_low"] <= row["drop"] <= row["drop_ci_high"]
    assert row["interval_by"] == "mean of the per-doc score"  # worldsense: a plain mean of unique-id 0/1 scores
    assert row["coverage"] == 1.0
    # the listener without audio answers "A": right on the docs whose gold is A (one in four)
    mute = raw[(raw["model"] == "listener") & (raw["condition_id"] == "missing_audio")].iloc[0]
    assert mute["value"] == pytest.approx(25.0)
    # the effect of wrapping itself: the unwrapped base task beside clean, in the same convention
    base = raw[(raw["model"] == "listener") & (raw["condition_id"] == UNWRAPPED)].iloc[0]
    assert base["value"] == pytest.approx(100 * 23 / 24)
    assert base["drop"] == pytest.approx(100 - 100 * 23 / 24)
    assert raw[raw["model"] == "listener"]["condition_id"].tolist()[:2] == ["clean", UNWRAPPED]
    # reproducible: the same seed gives the same interval, another seed another one
    again = build_report([root], tmp_path / "again", b=400, seed=7, progress=False, figures=False)
    build_report([root], tmp_path / "other", b=400, seed=8, progress=False, figures=False)
    assert again["trials"] == done["trials"]
    same = pd.read_csv(tmp_path / "again" / "task_metrics_worldsense.csv")
    moved = pd.read_csv(tmp_path / "other" / "task_metrics_worldsense.csv")
    pd.testing.assert_series_equal(same["drop_ci_low"], raw["drop_ci_low"])
    assert not moved["drop_ci_low"].fillna(0).equals(raw["drop_ci_low"].fillna(0))
    # the fault-line figures, in the metric's own units and captioned so
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    captions = data["figure_captions"]
    for name in ("severity_curves", "drop_heatmap", "modality_severity_heatmap"):
        assert (tmp_path / "r" / f"worldsense__worldsense_score__{name}.png").is_file()
        assert captions[f"worldsense__worldsense_score__{name}"].startswith("worldsense, worldsense_score: ")
    assert "worldsense_score; clean − condition" in captions["worldsense__worldsense_score__drop_heatmap"]
    assert "(pp" not in " ".join(captions.values()) and "no interval bars" in " ".join(captions.values())
    assert captions["audit_stacked"]
    # one joint cell per model, two in all: too few for a scatter (plots.MIN_SCATTER_POINTS), said so
    assert data["figures_skipped"]["worldsense__worldsense_score__joint_scatter"].startswith("only 2 joint cell")
    assert not (tmp_path / "r" / "worldsense__worldsense_score__joint_scatter.png").exists()
    assert "clean − condition" in data["task_metrics_legend"]


def test_the_aggregation_path_gives_the_fast_paths_interval():
    """Through the task's own aggregation (worldsense's, which dedupes by question id) or as a
    ratio of resampled sums: the same draws give the same resampled drops."""
    docs = [worldsense_doc(i) for i in range(N_DOCS)]
    process = base_config("worldsense")["process_results"]
    clean = [process(d, [d["answer"]])["worldsense_score"] for d in docs]
    variants = [[process(d, [listener("single_noise_v70", k, d)])["worldsense_score"] for d in docs] for k in range(3)]
    units = [str(d["index"]) for d in docs]
    weights = resample_weights(len(units), b=60, seed=3)
    slow = aggregate_drops(
        [clean],
        variants,
        units,
        lambda items: aggregate("worldsense", "worldsense_score", items),
        weights,
        higher_is_better=True,
    )
    fast = mean_score_drops(
        [[x["score"] for x in clean]],
        [[x["score"] for x in v] for v in variants],
        units,
        weights,
        factor=100.0,
        higher_is_better=True,
    )
    np.testing.assert_allclose(slow, fast)
    assert slow.std() > 0


def mme_doc(i: int) -> dict:
    return {"question_id": f"img{i // 2}.png", "category": "color", "answer": "Yes" if i % 2 == 0 else "No"}


def mme_reply(condition: str, variant: int, doc: dict) -> str:
    """Right in clean; under noise it says "Yes" to the second question of every third image."""
    image = int(doc["question_id"][3:-4])
    if condition != "clean" and image % 3 == variant % 3:
        return "Yes"
    return doc["answer"]


def test_mme_pairs_go_through_the_task_aggregation(tmp_path):
    docs = [mme_doc(i) for i in range(24)]
    write_run(
        tmp_path / "runs", "m", "mme", docs, mme_reply, {"clean": 1, "single_noise_v70": 3}, date="20261202_070100"
    )
    build_report([tmp_path / "runs"], tmp_path / "r", b=200, seed=1, progress=False, figures=False)
    raw = pd.read_csv(tmp_path / "r" / "task_metrics_mme.csv")
    row = raw[(raw["metric"] == "mme_perception_score") & (raw["condition_id"] == "single_noise_v70")].iloc[0]
    # independently: an image with one wrong answer scores acc 50 + acc+ 0 instead of 200
    broken = [sum(1 for img in range(12) if img % 3 == k % 3) for k in range(3)]
    per_variant = [(200 * (12 - n) + 50 * n) / 12 for n in broken]
    assert row["value"] == pytest.approx(np.mean(per_variant))
    assert row["drop"] == pytest.approx(200 - np.mean(per_variant))
    assert row["interval_by"] == "the task's aggregation"  # acc+ is not a mean of the per-doc score
    assert row["drop_ci_low"] <= row["drop"] <= row["drop_ci_high"]


def ami_doc(i: int) -> dict:
    return {"text": f"the quick brown fox number {i} jumps"}


def ami_reply(condition: str, variant: int, doc: dict) -> str:
    """Exact in clean; under audio noise it drops the last word of every other doc."""
    words = doc["text"].split()
    n = int(words[5])
    return " ".join(words[:-1]) if condition != "clean" and n % 2 == variant % 2 else doc["text"]


def test_wer_drop_is_condition_minus_clean(tmp_path):
    docs = [ami_doc(i) for i in range(12)]
    write_run(
        tmp_path / "runs", "m", "ami_test", docs, ami_reply, {"clean": 1, "single_noise_v70": 3}, date="20261202_070200"
    )
    build_report([tmp_path / "runs"], tmp_path / "r", b=200, seed=1, progress=False, figures=False)
    raw = pd.read_csv(tmp_path / "r" / "task_metrics_ami_test.csv")
    row = raw[raw["condition_id"] == "single_noise_v70"].iloc[0]
    assert not row["higher_is_better"]
    # independently: half the docs lose one of their 7 words in every variant
    wer = np.mean([1 / 7 if i % 2 == k % 2 else 0.0 for k in range(3) for i in range(12)])
    assert row["value"] == pytest.approx(wer)
    assert row["drop"] == pytest.approx(wer - 0.0) and row["drop"] > 0  # a higher WER is a loss
    assert row["drop_ci_low"] <= row["drop"] <= row["drop_ci_high"]


def test_audit_shares_of_one_modality_models(worldsense_runs, tmp_path):
    root, docs = worldsense_runs
    done = subprocess.run(
        [FAULTLINE, "audit", str(root), "-o", str(tmp_path / "audit"), "--min-models", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shares = pd.read_csv(tmp_path / "audit" / "audit_shares.csv").set_index(["model", "control"])
    # the listener needs the audio: without it only the docs whose gold is "A" stay right (chance: 1/4)
    assert shares.loc[("listener", "missing_audio"), "answerable"] == pytest.approx(0.25)
    assert shares.loc[("listener", "missing_audio"), "chance"] == pytest.approx(0.25)
    assert shares.loc[("listener", "missing_audio"), "needs"] == pytest.approx(0.75)
    assert shares.loc[("listener", "missing_vision"), "needs"] == pytest.approx(0.0)
    # the watcher needs the frames (it says "B" without them) and not the audio
    assert shares.loc[("watcher", "missing_vision"), "needs"] == pytest.approx(0.75)
    assert shares.loc[("watcher", "missing_audio"), "needs"] == pytest.approx(0.0)
    items = pd.read_csv(tmp_path / "audit" / "audit_items.csv")
    without_audio = items[items["control"] == "missing_audio"]
    # answered without audio: every doc by the watcher, and the gold-A docs by both models
    assert len(without_audio) == N_DOCS
    both = without_audio[without_audio["models_correct"] == 2]
    assert sorted(both["doc_id"]) == [i for i in range(N_DOCS) if i % 4 == 0]
    assert (tmp_path / "audit" / "audit_stacked.png").is_file()
    assert (tmp_path / "audit" / "audit_stacked.pdf").is_file()


@pytest.mark.slow
def test_report_and_audit_read_what_the_real_lmms_eval_cli_wrote(tmp_path, monkeypatch):
    """The real ``lmms-eval`` CLI (its ``dummy`` model, replying "Yes") on wrapped MME tasks built
    from the local copy (tests/wrap_datasets.py; about 60 s, most of it lmms-eval's imports and
    index), then ``sceval report`` and ``faultline audit`` on its output folder. "Yes" is right on
    the first question of each image and wrong on the second, whatever the condition: every
    variant scores 50 + 0 per category, every drop is 0, and each control leaves half the items
    answerable, all of those answerable in clean."""
    import wrap_datasets

    from faultline_eval.tasks import wrap_configs
    from sceval_plugin.conditions import catalogue

    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    copy = wrap_datasets.build_mme(tmp_path / "copy")
    ids = ["clean", "single_noise_v70", "missing_vision", "shortcut_question_options"]
    wrap_configs.write("mme", [catalogue().get(c) for c in ids], wrap_configs.data_override("mme", copy.dataset_path))
    tasks = "mme__clean__var0,mme__single_noise_v70,mme__missing_vision__var0,mme__shortcut_question_options__var0"
    bin_dir = Path(sys.executable).parent
    lmms_eval(
        "--model", "dummy", "--model_args", "response=Yes", "--tasks", tasks,
        "--log_samples", "--output_path", str(tmp_path / "out"), cwd=tmp_path,
    )  # fmt: skip
    reported = json.loads(next((tmp_path / "out").rglob("*_results.json")).read_text())["results"]
    noise = [reported[f"mme__single_noise_v70__var{k}"]["mme_perception_score,none"] for k in range(3)]
    clean = reported["mme__clean__var0"]["mme_perception_score,none"]
    report = subprocess.run(
        [str(bin_dir / "sceval"), "report", str(tmp_path / "out"), "-o", str(tmp_path / "r"), "--bootstrap", "100"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert report.returncode == 0, report.stderr[-3000:]
    raw = pd.read_csv(tmp_path / "r" / "task_metrics_mme.csv")
    row = raw[(raw["metric"] == "mme_perception_score") & (raw["condition_id"] == "single_noise_v70")].iloc[0]
    assert row["variants"] == 3 and row["value"] == pytest.approx(np.mean(noise))
    assert row["drop"] == pytest.approx(clean - np.mean(noise)) == 0.0
    assert row["drop_ci_low"] == row["drop_ci_high"] == 0.0  # the same replies everywhere: no resample moves it
    shares = pd.read_csv(tmp_path / "r" / "audit_shares.csv").set_index("control")
    assert shares.loc["missing_vision", "answerable"] == pytest.approx(0.5)
    assert shares.loc["missing_vision", "needs"] == pytest.approx(0.0)
    assert shares.loc["shortcut_question_options", "answerable_among_clean"] == pytest.approx(1.0)


def test_a_line_without_its_trial_or_a_log_without_results_is_an_error_naming_it(tmp_path):
    from faultline_eval.core.run_logs import ReportError

    docs = [worldsense_doc(i) for i in range(4)]
    folder = write_run(tmp_path / "runs", "m", "worldsense", docs, listener, {"clean": 1}, date="20261202_070300")
    log = folder / "20261202_070300_samples_worldsense__clean__var0.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[2])
    del broken["faultline_trial"]
    log.write_text("\n".join([*lines[:2], json.dumps(broken), *lines[3:]]) + "\n", encoding="utf-8")
    with pytest.raises(ReportError, match=r"samples_worldsense__clean__var0\.jsonl:3: no faultline_trial entry"):
        read_wrapped_runs([tmp_path / "runs"])
    (folder / "20261202_070300_results.json").unlink()
    with pytest.raises(ReportError, match="no results JSON beside it"):
        read_wrapped_runs([tmp_path / "runs"])


def test_sceval_logs_beside_wrapped_ones_get_the_wrapped_report_in_a_subfolder(worldsense_runs, tmp_path):
    from fixtures import guesser, write_logs

    root, _ = worldsense_runs
    write_logs(tmp_path / "sceval" / "guesser", "guesser", guesser, ["clean", "single_noise_v70"])
    done = build_report([tmp_path / "sceval", root], tmp_path / "r", b=50, seed=1, progress=False, figures=False)
    assert done["models"] == ["guesser"]  # the SCEval report's own trials
    assert (tmp_path / "r" / "conditions.csv").is_file()
    wrapped = pd.read_csv(tmp_path / "r" / "wrapped" / "task_metrics_worldsense.csv")
    assert set(wrapped["model"]) == {"listener", "watcher"}
    assert (tmp_path / "r" / "wrapped" / "audit_shares.csv").is_file()


# --- the audit of every metric kind (issue 36) ----------------------------------------------------


def ami_heard(condition: str, variant: int, doc: dict) -> str:
    """In clean: exact on even docs, the last word dropped on odd ones. Without audio: the same
    on docs 0, 1, 3 (mod 4), "unknown" on docs 2 (mod 4)."""
    words, n = doc["text"].split(), int(doc["text"].split()[5])
    if condition == "missing_audio" and n % 4 == 2:
        return "unknown"
    return doc["text"] if n % 2 == 0 else " ".join(words[:-1])


def test_audit_scores_an_error_rate_against_clean_or_at_a_threshold(worldsense_runs, tmp_path):
    """WER has no 0/1 per-doc score: by default an item is answerable when its per-item WER is no
    higher than in clean; ``--answerable-at wer=X`` reads a threshold instead. Audited beside the
    worldsense runs, the per-item table's blank cells (controls ami_test did not run) say why."""
    from sceval_plugin.report.audit_section import audit_report

    docs = [ami_doc(i) for i in range(8)]
    write_run(
        tmp_path / "runs", "asr", "ami_test", docs, ami_heard, {"clean": 1, "missing_audio": 1}, date="20261202_070400"
    )
    process = base_config("ami_test")["process_results"]
    wer = {c: np.array([process(d, [ami_heard(c, 0, d)])["wer"] for d in docs]) for c in ("clean", "missing_audio")}
    root, _ = worldsense_runs
    audit_report([tmp_path / "runs", root], tmp_path / "relative", figures=False)
    shares = pd.read_csv(tmp_path / "relative" / "audit_shares.csv")
    row = shares[shares["base_task"] == "ami_test"].set_index("control").loc["missing_audio"]
    assert row["kind"] == "error rate" and row["metric"] == "wer"
    assert row["answerable_if"].startswith("per-item wer no higher than in clean")
    assert row["answerable"] == pytest.approx(np.mean(wer["missing_audio"] <= wer["clean"])) == 0.75
    assert row["clean_answerable"] == len(docs) and row["needs"] == pytest.approx(0.25)
    assert np.isnan(row["chance"]) and "no chance rate for a graded metric" in row["note"]
    per_item = pd.read_csv(tmp_path / "relative" / "audit_per_item.csv")
    for _, item in per_item.iterrows():
        for condition in ("clean", *CONDITIONS):
            if condition in per_item and pd.isna(item[condition]):
                assert condition in str(item["blank"]), (item["base_task"], condition, item["blank"])
    assert "missing_vision" in per_item[per_item["base_task"] == "ami_test"]["blank"].iloc[0]

    done = subprocess.run(
        [
            FAULTLINE,
            "audit",
            str(tmp_path / "runs"),
            "-o",
            str(tmp_path / "at"),
            "--no-figures",
            "--answerable-at",
            "wer=0.1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    row = pd.read_csv(tmp_path / "at" / "audit_shares.csv").set_index("control").loc["missing_audio"]
    answerable = {c: w <= 0.1 for c, w in wer.items()}
    assert row["answerable_if"].startswith("per-item wer at most 0.1")
    assert row["answerable"] == pytest.approx(answerable["missing_audio"].mean())
    assert row["clean_answerable"] == answerable["clean"].sum() == 4
    assert row["needs"] == pytest.approx(1 - answerable["missing_audio"][answerable["clean"]].mean()) == 0.5
    # a model that ran the control without clean: nothing to compare with, said so in a row
    write_run(tmp_path / "alone", "asr2", "ami_test", docs, ami_heard, {"missing_audio": 1}, date="20261202_070410")
    done = audit_report([tmp_path / "alone"], tmp_path / "alone_audit", figures=False)
    left = pd.read_csv(tmp_path / "alone_audit" / "audit_shares.csv")
    assert left[["control", "note"]].values.tolist() == [
        ["missing_audio", "left out: no item of this control has a value (see audit_per_item's blank)"]
    ]
    blank = pd.read_csv(tmp_path / "alone_audit" / "audit_per_item.csv")["blank"]
    assert blank.str.startswith("missing_audio: no value").all() and done["audit"]["audit"]["left_out"]
    bad = subprocess.run(
        [FAULTLINE, "audit", str(tmp_path / "runs"), "-o", str(tmp_path / "x"), "--answerable-at", "wer"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0 and "give METRIC=VALUE" in bad.stderr
    typo = [FAULTLINE, "audit", str(tmp_path / "runs"), "-o", str(tmp_path / "y"), "--answerable-at", "wre=50"]
    bad = subprocess.run(typo, capture_output=True, text=True)
    assert (
        bad.returncode != 0 and "wre, which is no graded metric of the runs (graded metrics audited: wer)" in bad.stderr
    )


def mme_blind(condition: str, variant: int, doc: dict) -> str:
    """Right with the image and its question; "No" without the image, "Yes" without the question."""
    if condition == "missing_vision":
        return "No"
    if condition == "shortcut_visual_audio":
        return "Yes"
    return doc["answer"]


def test_audit_of_yes_no_pairs_has_a_chance_rate_and_what_is_left_out_is_a_row(tmp_path):
    """MME: yes/no questions in pairs, chance 1/2 per question; the shortcut that removes the
    question is audited; a task run without any control is a row saying so, not a missing one."""
    from sceval_plugin.report.audit_section import audit_report

    docs = [mme_doc(i) for i in range(8)]
    conditions = {"clean": 1, "missing_vision": 1, "shortcut_visual_audio": 1}
    write_run(tmp_path / "runs", "m", "mme", docs, mme_blind, conditions, date="20261202_070500")
    worldsense = [worldsense_doc(i) for i in range(4)]
    write_run(tmp_path / "runs", "m", "worldsense", worldsense, listener, {"clean": 1}, date="20261202_070600")
    done = audit_report([tmp_path / "runs"], tmp_path / "a", figures=False)
    shares = pd.read_csv(tmp_path / "a" / "audit_shares.csv")
    mme = shares[shares["base_task"] == "mme"].set_index("control")
    assert set(mme["kind"]) == {"yes/no pairs"}
    assert mme["chance"].tolist() == [0.5, 0.5]
    no = np.mean([d["answer"] == "No" for d in docs])
    assert mme.loc["missing_vision", "answerable"] == pytest.approx(no) and mme.loc[
        "missing_vision", "needs"
    ] == pytest.approx(1 - no)
    assert mme.loc["shortcut_visual_audio", "takes_away"] == "question"
    assert mme.loc["shortcut_visual_audio", "needs"] == pytest.approx(1 - (1 - no))
    left = shares[shares["base_task"] == "worldsense"]
    assert len(left) == 1 and pd.isna(left["control"].iloc[0])
    assert left["note"].iloc[0] == "left out: no control was run (conditions run: clean)"
    assert any("worldsense (m): left out: no control was run" in n for n in done["notes"])
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert [r["base_task"] for r in report["audit"]["left_out"]] == ["worldsense"]
    assert report["audit"]["rules"]["mme"]["kind"] == "yes/no pairs"


def test_audit_per_pair_reads_mme_as_its_acc_plus(tmp_path):
    """``--per-pair``: the pair is the item, answerable when both its questions are; chance 1/4."""
    from sceval_plugin.report.audit_section import audit_report

    docs = [mme_doc(i) for i in range(8)]
    write_run(tmp_path / "runs", "m", "mme", docs, mme_blind, {"clean": 1, "missing_vision": 1}, date="20261202_070700")
    audit_report([tmp_path / "runs"], tmp_path / "a", figures=False, per_pair=True)
    row = pd.read_csv(tmp_path / "a" / "audit_shares.csv").set_index("control").loc["missing_vision"]
    assert row["items"] == len(docs) // 2 and row["chance"] == 0.25
    assert row["answerable"] == 0.0 and row["needs"] == 1.0  # "No" to both questions: never both right
    assert row["answerable_if"].startswith("every question of the pair correct")
    per_item = pd.read_csv(tmp_path / "a" / "audit_per_item.csv")
    assert sorted(per_item["sample_id"]) == sorted({d["question_id"] for d in docs})


def test_a_partial_credit_score_is_graded_against_clean_or_a_threshold():
    """A per-doc score that is not 0/1 (partial credit) is the "score" kind: answerable when no
    lower than in clean, or at least the threshold given for its metric."""
    from sceval_plugin.metrics.modality_audit import control_shares, per_item, score_trials

    clean = [1.0, 0.5, 0.25, 0.75]
    blind = [1.0, 0.25, 0.25, 0.0]
    rows = [
        {"model": "m", "task": f"t__{c}__var0", "base_task": "t", "condition_id": c, "variant": 0, "doc_id": d,
         "sample_id": str(d), "unit": str(d), "score": s, "correct": None, "n_options": None, "target": "x"}
        for c, scores in (("clean", clean), ("missing_vision", blind))
        for d, s in enumerate(scores)
    ]  # fmt: skip
    trials = pd.DataFrame(rows)
    readings = {
        None: ([1] * len(clean), [int(b >= c) for b, c in zip(blind, clean)]),
        0.5: ([int(c >= 0.5) for c in clean], [int(b >= 0.5) for b in blind]),
    }
    for at, (expected_clean, expected) in readings.items():
        scored, kinds = score_trials(
            trials, {"t": [("credit", True)]}, {}, lambda *a: 0.0, {"credit": at} if at else None
        )
        assert (kinds["t"].kind, kinds["t"].metric) == ("score", "credit")
        items = per_item(scored, kinds)
        assert items["clean"].tolist() == expected_clean and items["missing_vision"].tolist() == expected
        share = control_shares(items, kinds).iloc[0]
        assert share["answerable"] == np.mean(expected) and 0 < share["needs"] < 1
        among = [x for x, c in zip(expected, expected_clean) if c]
        assert share["needs"] == pytest.approx(1 - np.mean(among))


def air_bench_doc(i: int) -> dict:
    """An AIR-Bench Foundation doc as tests/wrap_datasets.build_air_bench writes it (no audio:
    process_results does not read it)."""
    words = ["a hum", "a whistle", "a beep", "a tone"]
    return {
        "question": f"What sounds? (item {i})",
        **{f"choice_{k}": w for k, w in zip("abcd", words)},
        "answer_gt": words[i % 4],
        "task_name": "Sound_AQA",
        "uniq_id": i,
    }


def test_a_metric_with_no_score_is_named_so_and_writes_nothing(tmp_path, monkeypatch):
    """air_bench's ``submission`` aggregation writes a file and returns None (results.json: null).
    The report says that (not "the logs predate it") and re-runs no aggregation of it, so nothing
    lands in the working directory; accuracy is reported as usual."""
    docs = [air_bench_doc(i) for i in range(8)]
    writer = tmp_path / "lmms_eval_cwd"  # lmms-eval's own aggregation writes submissions/ here
    writer.mkdir()
    monkeypatch.chdir(writer)
    write_run(
        tmp_path / "runs",
        "m",
        "air_bench_foundation_sound",
        docs,
        lambda condition, variant, doc: LETTERS[doc["uniq_id"] % 4 if condition == "clean" else 0],
        {"clean": 1, "missing_audio": 1},
        date="20261202_070500",
    )
    assert (writer / "submissions").is_dir()
    with pytest.raises(BaseTaskError, match="aggregation of 'submission' returned None, no score"):
        aggregate("air_bench_foundation_sound", "submission", [{0: "A"}])
    reporter = tmp_path / "report_cwd"
    reporter.mkdir()
    monkeypatch.chdir(reporter)
    done = build_report([tmp_path / "runs"], tmp_path / "r", b=100, seed=1, progress=False, figures=False)
    assert list(reporter.iterdir()) == []
    notes = json.loads((tmp_path / "r" / "report.json").read_text())["notes"] + done.get("notes", [])
    assert any("submission has no score" in n and "submission file" in n for n in notes), notes
    assert not any("no submission; the logs predate it" in n for n in notes), notes
    raw = pd.read_csv(tmp_path / "r" / "task_metrics_air_bench_foundation_sound.csv")
    assert set(raw["metric"]) == {"accuracy"}


def mmmu_doc(i: int) -> dict:
    """An MMMU validation doc as tests/wrap_datasets.build_mmmu writes it (no image: scoring does not read it)."""
    return {
        "id": f"validation_Art_{i + 1}",
        "question": f"Which colour fills <image 1>? (item {i})",
        "options": repr(["red", "green", "blue", "yellow"]),
        "answer": LETTERS[i % 4],
        "question_type": "multiple-choice",
    }


def test_audit_scores_mmmu_through_its_own_aggregation(tmp_path):
    """mmmu_val's per-doc item holds the parsed reply, not a score: correctness is decided inside
    its aggregation. The audit scores each item by that aggregation on the one item (a graded
    per-item mmmu_acc), so mmmu_val is a row of the shares, never missing."""
    from sceval_plugin.report.audit_section import audit_report

    docs = [mmmu_doc(i) for i in range(8)]

    def seer(condition: str, variant: int, doc: dict) -> str:
        """Right with the image; without it, "A" (right for one doc in four)."""
        return doc["answer"] if condition == "clean" else "A"

    write_run(tmp_path / "runs", "m", "mmmu_val", docs, seer, {"clean": 1, "missing_vision": 1}, date="20261202_070600")
    audit_report([tmp_path / "runs"], tmp_path / "audit", figures=False)
    shares = pd.read_csv(tmp_path / "audit" / "audit_shares.csv")
    rows = shares[shares["base_task"] == "mmmu_val"]
    assert not rows.empty, shares
    row = rows.set_index("control").loc["missing_vision"]
    assert row["metric"] == "mmmu_acc" and row["kind"] == "score", row.to_dict()
    right_without = np.mean([doc["answer"] == "A" for doc in docs])
    assert row["answerable"] == pytest.approx(right_without) == 0.25
    assert row["clean_answerable"] == len(docs) and row["needs"] == pytest.approx(0.75)


def test_sceval_report_takes_the_audits_readings(tmp_path):
    """``sceval report`` on wrapped runs holds the audit; it takes ``--answerable-at`` and
    ``--per-pair`` as ``faultline audit`` does (one definition), and refuses a bad threshold alike."""
    docs = [mme_doc(i) for i in range(8)]
    write_run(tmp_path / "runs", "m", "mme", docs, mme_blind, {"clean": 1, "missing_vision": 1}, date="20261202_070700")
    asr = [ami_doc(i) for i in range(8)]
    write_run(
        tmp_path / "runs", "asr", "ami_test", asr, ami_heard, {"clean": 1, "missing_audio": 1}, date="20261202_070710"
    )
    sceval = str(Path(sys.executable).with_name("sceval"))
    argv = [sceval, "report", str(tmp_path / "runs"), "-o", str(tmp_path / "r"), "--no-figures", "--quiet"]
    argv += ["--bootstrap", "50", "--per-pair", "--answerable-at", "wer=0.1"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    shares = pd.read_csv(tmp_path / "r" / "audit_shares.csv").set_index(["base_task", "control"])
    assert shares.loc[("mme", "missing_vision"), "answerable_if"].startswith("every question of the pair correct")
    assert shares.loc[("mme", "missing_vision"), "items"] == len(docs) // 2
    assert shares.loc[("ami_test", "missing_audio"), "answerable_if"].startswith("per-item wer at most 0.1")
    bad = subprocess.run([*argv[:-1], "wer"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "'wer': give METRIC=VALUE, e.g. wer=50" in bad.stderr


def test_an_error_rate_trial_read_from_an_older_log_is_no_verdict(tmp_path):
    """Logs written before the fix said ``correct`` 1 for a per-doc WER of 1 (the generic reading
    of ami_test's score); the reader gives no verdict for a task whose metric is lower-is-better."""
    docs = [ami_doc(i) for i in range(4)]
    folder = write_run(
        tmp_path / "runs", "m", "ami_test", docs, ami_heard, {"missing_audio": 1}, date="20261202_070800"
    )
    log = next(folder.glob("*_samples_ami_test__missing_audio__var0.jsonl"))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    for line in lines:  # as the generic reading wrote it before: score = WER, correct = score when 0/1
        line["faultline_trial"] |= {
            "score": line["wer"],
            "correct": int(line["wer"]) if line["wer"] in (0, 1) else None,
        }
    assert any(line["faultline_trial"]["correct"] == 1 for line in lines)
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    trials = read_wrapped_runs([tmp_path / "runs"]).trials
    assert trials["correct"].isna().all() and trials["score"].notna().all()
