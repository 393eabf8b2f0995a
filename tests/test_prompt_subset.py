"""The G.6 prompt-robustness subset chosen per model (sceval prompt-subset) and its generated tasks."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from faultline_eval.tasks.sceval_configs import is_builtin, task_dirs
from sceval_plugin import prompt_subset
from sceval_plugin.conditions import PROMPT_BASES, catalogue
from sceval_plugin.metrics.protocol import catalogue_info
from sceval_plugin.plugins import PluginError
from sceval_plugin.report.prompt_subset_choice import subset_from_runs


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh $SCEVAL_CACHE; the catalogue is rebuilt before and after (subset files add conditions)."""
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    catalogue.cache_clear()
    yield tmp_path / "cache"
    catalogue.cache_clear()


def _standard_info():
    return {cid: c for cid, c in catalogue_info().items() if catalogue().get(cid).prompt == "json"}


#: A synthetic model: the worst cells are not the paper's fixed ones.
ACCURACY = {
    "clean": 0.9,
    "single_drop_words_t70": 0.5,
    "single_word_shuffle_t50": 0.4,
    "single_typo_ocr_t30": 0.4,  # tie: severity 50 wins
    "single_noise_v70": 0.6,
    "single_occlusion_v30": 0.35,
    "bi_tv_drop_words_noise_t30_v70": 0.3,
    "bi_tv_drop_words_noise_t70_v30": 0.2,
    "bi_ta_drop_words_mute_t70_a50": 0.05,  # text-audio: not a G.6 cell
    "tri_drop_words_noise_mute_t30_v70_a30": 0.25,
    "tri_drop_words_noise_mute_t70_v70_a50": math.nan,  # no valid output
    "prompt_cot_single_noise_v70": 0.0,
    "no_option_single_noise_v70": 0.0,
    "missing_text": 0.0,  # never chosen
}


def test_choose_bases_picks_that_models_worst_and_strongest_cells():
    chosen, notes = prompt_subset.choose_bases(ACCURACY, _standard_info())
    assert chosen == {
        "clean": "clean",
        "worst_text": "single_word_shuffle_t50",
        "worst_vision": "single_occlusion_v30",
        "strongest_tv": "bi_tv_drop_words_noise_t70_v30",
        "strongest_tva": "tri_drop_words_noise_mute_t30_v70_a30",
    }
    assert notes == ["worst_audio: the run has no scored cell of this kind; left out"]


def test_the_fixed_list_stays_the_default(cache):
    prompt_cells = sorted(c.base for c in catalogue() if c.block == "prompt")
    assert prompt_cells == sorted(PROMPT_BASES * 2)


def _write_logs(folder, model: str, accuracy: dict[str, float], samples: int = 4):
    """Per-sample logs as lmms-eval writes them (one file per task), with the given accuracies."""
    folder.mkdir(parents=True)
    for cid, acc in accuracy.items():
        right = round(acc * samples)
        lines = [
            {
                "sceval_record": {
                    "model": model,
                    "condition_id": cid,
                    "prompt_id": catalogue().get(cid).prompt_id,
                    "dataset": "demo#1",
                    "sample_id": f"s{i}",
                    "variant": 0,
                    "correct": int(i < right),
                    "invalid": None,
                    "n_options": 4,
                    "parsed_answer_original_key": "A",
                }
            }
            for i in range(samples)
        ]
        (folder / f"2026_samples_sceval_{cid}.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def test_prompt_subset_from_a_run_generates_registered_conditions_and_an_lmms_eval_group(cache, tmp_path):
    run = tmp_path / "run"
    _write_logs(
        run,
        "tiny-model",
        {
            "clean": 1.0,
            "single_drop_words_t30": 0.75,
            "single_word_shuffle_t70": 0.25,
            "single_noise_v70": 0.5,
            "single_mute_a30": 0.75,
            "single_remove_a50": 0.5,
            "bi_tv_drop_words_noise_t70_v70": 0.25,
            "bi_tv_drop_words_noise_t30_v70": 0.5,
            "tri_drop_words_noise_mute_t70_v70_a50": 0.0,
        },
    )
    done = subset_from_runs([run])
    assert done["model"] == "tiny-model" and done["group"] == "sceval_prompt_subset_tiny_model"
    assert list(done["cells"].values()) == [
        "clean",
        "single_word_shuffle_t70",
        "single_noise_v70",
        "single_remove_a50",
        "bi_tv_drop_words_noise_t70_v70",
        "tri_drop_words_noise_mute_t70_v70_a50",
    ]
    assert done["path"].parent == cache / "prompt_subsets"
    # the bases the fixed list lacks get prompt variants, generated (not committed) like a third party's
    new = catalogue().get("prompt_cot_single_word_shuffle_t70")
    assert new.block == "prompt" and new.base == "single_word_shuffle_t70" and not is_builtin(new)
    assert is_builtin(catalogue().get("prompt_cot_clean"))
    folders = task_dirs()
    group = yaml.safe_load((folders[-1] / f"{done['group']}.yaml").read_text())
    assert group["group"] == done["group"] and group["task"] == done["tasks"]
    assert "sceval_prompt_open_tri_drop_words_noise_mute_t70_v70_a50" in group["task"]
    assert (folders[-1] / "sceval_prompt_open_single_remove_a50.yaml").is_file()
    assert not (folders[-1] / "sceval_prompt_cot_clean.yaml").exists()  # committed with the built-ins


def test_prompt_subset_errors_name_the_problem(cache, tmp_path):
    run = tmp_path / "run"
    _write_logs(run, "a", {"clean": 1.0, "single_noise_v70": 0.5})
    with pytest.raises(prompt_subset.SubsetError, match="no trials of model 'b'"):
        subset_from_runs([run], "b")
    with pytest.raises(prompt_subset.SubsetError, match="choose among cot, open"):
        subset_from_runs([run], "a", ["json"])
    broken = cache / "prompt_subsets" / "sceval_prompt_subset_x.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{not json")
    catalogue.cache_clear()
    with pytest.raises(PluginError, match="sceval_prompt_subset_x.json: not a prompt-subset file"):
        catalogue()
