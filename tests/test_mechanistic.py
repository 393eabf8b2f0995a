"""Mechanistic probes (C3PO App. F) end to end through ``faultline probe`` on the tiny random
Qwen2.5-Omni and Qwen3-Omni checkpoints: real processors, real placeholder tokens, real tasks."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from c3po_plugin.mechanistic import spans
from c3po_plugin.mechanistic.attention import entropy_bits, mid_layer_indices
from faultline_app.faultline_cli import main as faultline
from faultline_eval.model_wrappers import tiny_checkpoints

REFERENCE = "The beeps count the red and green shapes; a blue disc in the frame."


@pytest.fixture(scope="module", params=["qwen2_5", "qwen3"])
def checkpoint(request, tmp_path_factory):
    if request.param == "qwen2_5":
        return "faultline_qwen2_5_omni", tiny_checkpoints.build_qwen2_5_omni(tmp_path_factory.mktemp("tiny25"))
    return "faultline_qwen3_omni", tiny_checkpoints.build_qwen3_omni(tmp_path_factory.mktemp("tiny3"))


def _records(folder: Path, probe: str) -> list[dict]:
    return [json.loads(line) for line in (folder / f"{probe}.jsonl").read_text().splitlines()]


def _probe(model: str, path: Path, out: Path, *extra: str, probe: str = "all", tasks: str = "c3po_ic_t1") -> None:
    args = [
        "probe",
        probe,
        "--model",
        model,
        "--model_args",
        f"pretrained={path},device=cpu,attn_implementation=eager,store=none",
        "--tasks",
        tasks,
        "--limit",
        "1",
        "--max_new_tokens",
        "2",
        "--output_path",
        str(out),
        *extra,
    ]
    assert faultline(args) == 0


@pytest.mark.slow
def test_every_probe_runs_through_the_cli_and_the_report_has_the_tables(checkpoint, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    model, path = checkpoint
    from c3po_plugin.data.sources import checked_items

    sample_id = checked_items()[1][0].sample_id
    refs = tmp_path / "refs.jsonl"
    refs.write_text(json.dumps({"sample_id": sample_id, "transcript": REFERENCE, "image_description": REFERENCE}))
    out = tmp_path / "probes"
    _probe(model, path, out, "--references", str(refs))

    [e1], [e2], [e3] = (_records(out, p) for p in ("e1", "e2", "e3"))
    assert {e1["status"], e2["status"], e3["status"]} == {"ok"}
    assert e1["positions"]["audio"] > 0 and e1["positions"]["image"] > 0
    alpha = np.array(e1["alpha"])
    assert np.allclose(alpha.sum(axis=1), 1.0) and (alpha > 0).all()
    assert all(0 <= h <= math.log2(3) + 1e-9 for h in e1["entropy"]) and e1["steps"] == 2
    assert 0 <= e2["latent_recovery"] <= 1 and e2["reference_size"] > 0 and e2["positions"]["audio"] > 0
    assert e3["audio_fidelity"] is not None and 0 <= e3["audio_fidelity"] <= 1

    # No query may attend to the audio: its share goes to zero, the others still sum to one.
    masked = tmp_path / "masked"
    _probe(model, path, masked, "--mask", "audio", probe="e1")
    [m1] = _records(masked, "e1")
    alpha = np.array(m1["alpha"])
    assert np.allclose(alpha[:, 1], 0, atol=1e-6) and np.allclose(alpha.sum(axis=1), 1.0)

    report = tmp_path / "report"
    assert faultline(["probe", "report", str(out), "-o", str(report)]) == 0
    text = (report / "index.md").read_text()
    for title in ("Table 4", "Table 7", "Table 8", "Figure 5"):
        assert title in text
    coverage = json.loads((report / "report.json").read_text())["tables"]["coverage"]
    assert coverage[0]["e1_samples"] == coverage[0]["e2_samples"] == coverage[0]["e3_samples"] == 1
    assert (report / "attention_budget.png").stat().st_size > 0 and (report / "attention_budget.pdf").exists()

    if model != "faultline_qwen2_5_omni":
        return
    # An SCEval task through the same probe; and fused attention kernels are refused.
    _probe(model, path, tmp_path / "sceval", probe="e1", tasks="sceval_clean")
    [record] = _records(tmp_path / "sceval", "e1")
    assert record["status"] == "ok" and record["positions"]["audio"] > 0
    assert np.allclose(np.array(record["alpha"]).sum(axis=1), 1.0)
    args = [
        "probe",
        "e1",
        "--model",
        model,
        "--model_args",
        f"pretrained={path},device=cpu,attn_implementation=sdpa",
        "--tasks",
        "c3po_ic_t1",
        "--limit",
        "1",
        "--output_path",
        str(tmp_path / "sdpa"),
    ]
    assert faultline(args) == 2
    assert "eager" in capsys.readouterr().err


def test_a_hidden_state_whose_unembedding_hits_the_reference_has_hit_rate_one():
    import torch

    from c3po_plugin.mechanistic.logit_lens import lens_hits, reference_ids

    tokenizer = tiny_checkpoints.build_tokenizer()
    torch.manual_seed(0)
    unembedding = torch.nn.Linear(16, len(tokenizer), bias=False)
    norm = torch.nn.LayerNorm(16, elementwise_affine=False)
    reference = torch.tensor(sorted(reference_ids(tokenizer, "colours of the beeps")))
    assert reference.numel() > 0
    # hidden states pointing along a reference token's unembedding row: that token tops the logits
    rows = unembedding.weight[reference] * 50
    assert lens_hits(rows, norm, unembedding, reference).all()
    assert not lens_hits(rows, norm, unembedding, torch.tensor([], dtype=torch.long)).any()


def test_entropy_bounds_and_the_middle_layers():
    assert entropy_bits(np.array([[1, 0, 0]]))[0] == 0
    assert math.isclose(entropy_bits(np.full((1, 3), 1 / 3))[0], math.log2(3))
    assert mid_layer_indices(10) == [3, 4, 5, 6] and mid_layer_indices(2) == [0]


def test_an_unsupported_model_is_blocked_with_its_reason_and_still_gets_e3(tmp_path, monkeypatch):
    """The runner and report with a MiniCPM-o-typed model (no checkpoint here: its answer is canned)."""
    from c3po_plugin.mechanistic.report import write_report
    from c3po_plugin.mechanistic.runner import ProbeError, run_probes

    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    adapter = SimpleNamespace(
        model=SimpleNamespace(config=SimpleNamespace(model_type="minicpmo")),
        model_id="faultline_minicpm_o",
        pretrained="openbmb/MiniCPM-o-2_6",
        _answer=lambda messages, gen: "AUDIO: beeps count shapes\nIMAGE: red green shapes",
    )
    with pytest.raises(spans.Blocked, match="inputs_embeds"):
        spans.family_of(adapter)
    summary = run_probes(
        ["e1", "e2", "e3"], "faultline_minicpm_o", "", ["c3po_ic_t1"], tmp_path / "out", limit=1, adapter=adapter
    )
    assert "inputs_embeds" in summary["blocked"] and set(summary["counts"]) == {"e3"}
    again = run_probes(["e3"], "faultline_minicpm_o", "", ["c3po_ic_t1"], tmp_path / "out", limit=1, adapter=adapter)
    assert again["counts"]["e3"]["skipped"] == 1 and len(_records(tmp_path / "out", "e3")) == 1  # resumed
    with pytest.raises(ProbeError, match="another --output_path"):
        run_probes(["e3"], "faultline_qwen2_5_omni", "", ["c3po_ic_t1"], tmp_path / "out", adapter=adapter)
    coverage = write_report([tmp_path / "out"], tmp_path / "report")["tables"]["coverage"].iloc[0]
    assert coverage["architectural_status"].startswith("E1/E2 blocked") and coverage["e1_samples"] == 0
    assert coverage["e3_samples"] == 1 and coverage["profile"] == "unclassified"


def test_entropy_gaps_tier_gaps_and_fingerprints_by_hand(tmp_path):
    """Tables 5, 6 and 10 from hand-written E1 records joined with C3PO verdict logs."""
    from test_c3po_report import RIGHT_EXACT, SAMPLES, TEMPLATES, write_run, wrong

    from c3po_plugin.mechanistic.report import write_report

    correct = {"ic01-a", "ic07-a", "cc01-a", "cc01-b"}
    entropy = {s: 0.5 + 0.1 * k for k, s in enumerate(SAMPLES)}
    audio = {s: 0.1 + 0.01 * k for k, s in enumerate(SAMPLES)}
    probes = tmp_path / "probes"
    probes.mkdir()
    (probes / "run.json").write_text(
        json.dumps(
            {
                "model": "faultline_qwen2_5_omni",
                "pretrained": "ckpt",
                "family": "Qwen2.5-Omni thinker",
                "blocked": None,
                "counts": {},
            }
        )
    )
    lines = []
    for sample, template in SAMPLES.items():
        _, category, tier = TEMPLATES[template]
        lines.append(
            json.dumps(
                {
                    "probe": "e1",
                    "status": "ok",
                    "model": "faultline_qwen2_5_omni",
                    "sample_id": sample,
                    "category": category,
                    "tier": tier,
                    "mid_entropy": entropy[sample],
                    "argmin_depth": 0.25,
                    "alpha_mean": [0.9 - audio[sample], audio[sample], 0.1],
                }
            )
        )
    (probes / "e1.jsonl").write_text("\n".join(lines) + "\n")
    write_run(
        tmp_path / "eval",
        "faultline_qwen2_5_omni",
        "pretrained=ckpt,device=cuda",
        {0: {s: RIGHT_EXACT if s in correct else wrong("text_dominance") for s in SAMPLES}},
    )

    tables = write_report([probes], tmp_path / "report", verdicts=[str(tmp_path / "eval")])["tables"]
    gaps = tables["entropy_correctness"].set_index(["model", "category"])

    def mean(names):
        return float(np.mean([entropy[s] for s in names]))

    cc = gaps.loc[("faultline_qwen2_5_omni:ckpt", "cc")]
    assert math.isclose(cc["delta_h_bits"], mean(["cc01-a", "cc01-b"]) - mean(["cc08-a", "cc08-b"]))
    assert cc["ci_low"] <= cc["delta_h_bits"] <= cc["ci_high"] and cc["n_correct"] == 2
    assert ("pooled (within-model z)", "ic") in gaps.index
    tier = tables["tier_gap"].iloc[0]
    expected = np.mean([audio["cc01-a"], audio["cc01-b"]]) - np.mean([audio["ic01-a"], audio["ic01-b"]])
    assert math.isclose(tier["T1"], expected) and tier["T1_kind"] == "cc-ic"
    assert 0.99 < tables["cc_ic"].iloc[0]["cos_cc_ic"] <= 1.0
    assert "Table 10" in (tmp_path / "report" / "index.md").read_text()
    assert (tmp_path / "report" / "entropy_correctness.csv").exists()
    assert (tmp_path / "report" / "entropy_correctness.png").stat().st_size > 0


def test_caption_fidelity_is_rouge1_recall_of_content_lemmas_per_section():
    from c3po_plugin.mechanistic.fidelity import IMAGE_ONLY_PROMPT, describe_messages, rouge1_recall, sections

    assert rouge1_recall("The red cars are parked.", "a red car") == pytest.approx(2 / 3)  # red, car of red, car, park
    assert rouge1_recall("the and of", "anything") is None  # no content word to recall
    reply = "AUDIO: a dog barks twice\n**IMAGE:** two cats on a mat"
    assert sections(reply) == {"audio": "a dog barks twice", "image": "two cats on a mat"}
    assert sections("just words") is None
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "answer briefly"}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Image:"},
                {"type": "image", "url": "x"},
                {"type": "text", "text": "Audio:"},
                {"type": "audio", "url": "y"},
                {"type": "text", "text": "Question?"},
            ],
        },
    ]
    [image_only] = describe_messages(messages, audio=False)
    assert [p.get("text", p["type"]) for p in image_only["content"]] == ["Image:", "image", IMAGE_ONLY_PROMPT]


def test_frames_after_the_video_label_are_video_and_each_image_run_is_one_image_part():
    from c3po_plugin import eval_prompt as prompts

    TOKEN_ID = tiny_checkpoints.TOKEN_ID

    content = [
        {"type": "text", "text": prompts.video_label([0.0, 1.0])},
        {"type": "image", "url": "f0"},
        {"type": "image", "url": "f1"},
        {"type": "text", "text": prompts.IMAGE_LABEL},
        {"type": "image", "url": "pic"},
        {"type": "text", "text": prompts.AUDIO_LABEL},
        {"type": "audio", "url": "a"},
        {"type": "text", "text": "Question?"},
    ]
    roles = spans.image_part_roles([{"role": "user", "content": content}])
    assert roles == ["video", "video", "image"]
    bos, eos, img, aud = (TOKEN_ID[t] for t in ("<|vision_bos|>", "<|vision_eos|>", "<|IMAGE|>", "<|AUDIO|>"))
    ids = [20, bos, img, img, eos, bos, img, eos, 21, bos, img, img, img, eos, aud, aud, 22]
    config = SimpleNamespace(audio_token_id=aud, image_token_id=img, video_token_id=TOKEN_ID["<|VIDEO|>"])
    codes = spans.qwen_omni_spans(np.array(ids), config, roles)
    names = "".join("taiv"[c] for c in codes)
    assert names == "ttvvttvtttiiitaat"  # markers and prompt are text; frames video; the picture image
    with pytest.raises(ValueError, match="2 image parts"):
        spans.qwen_omni_spans(np.array(ids), config, roles[:2])
