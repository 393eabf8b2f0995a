"""The published-rows data files against the papers' own arithmetic and prose: each check could fail on a
mistyped number (a transcription error shows up as a broken drop, mean or ranking)."""

import json
from statistics import mean

import pytest

from c3po_plugin.data.c3po_published import published_rows as c3po_rows
from faultline_eval.core.published import load_published
from sceval_plugin.data.sceval_published import published_rows as sceval_rows

SCEVAL = sceval_rows()
C3PO = c3po_rows()


def test_every_sceval_table_2_model_has_clean_and_all_fourteen_operators():
    models = SCEVAL.models("2")
    assert len(models) == 15
    for model in models:
        assert set(SCEVAL.row("2", model)) == {"clean", *SCEVAL.operators}


def test_table_2_printed_drops_are_clean_minus_corrupted():
    for model in SCEVAL.models("2"):
        row = SCEVAL.row("2", model)
        clean = row["clean"].value
        for op in SCEVAL.operators:
            assert row[op].printed_drop == pytest.approx(clean - row[op].value, abs=0.011), (model, op)


def test_table_2_matches_the_prose():
    noise_drops = {m: SCEVAL.value("2", m, "noise").printed_drop for m in SCEVAL.models("2")}
    groups = {m: SCEVAL.value("2", m, "clean").group for m in SCEVAL.models("2")}
    # "noise averages 11.3 pp drop on the seven proprietary systems and 11.3 pp on the eight open systems"
    for group, count in (("proprietary", 7), ("open", 8)):
        drops = [d for m, d in noise_drops.items() if groups[m] == group]
        assert len(drops) == count and round(mean(drops), 1) == 11.3
    # "The two single hardest cells ... noise on Baichuan-Omni-1.5 (-15.70) and word_shuffle on Qwen2.5-Omni-7B
    # (-14.60) ... the worst proprietary cell (-15.64 on Gemini 3.5 Flash)"
    drops = {
        (m, op): v.printed_drop for m in SCEVAL.models("2") for op, v in SCEVAL.row("2", m).items() if op != "clean"
    }
    assert (
        max(drops, key=drops.get) == ("Baichuan-Omni-1.5", "noise") and drops[("Baichuan-Omni-1.5", "noise")] == 15.70
    )
    assert drops[("Qwen2.5-Omni-7B", "word_shuffle")] == 14.60
    proprietary = {k: d for k, d in drops.items() if groups[k[0]] == "proprietary"}
    assert max(proprietary, key=proprietary.get) == ("Gemini 3.5 Flash", "noise")


def test_table_6_severity_70_column_is_table_2s_row():
    for model in ("Qwen3.5-Omni-Plus", "Gemini 3 Flash"):
        for op in SCEVAL.operators:
            assert SCEVAL.value("6", model, f"{op}@70").value == SCEVAL.value("2", model, op).value, (model, op)
        assert SCEVAL.value("5", model, "clean").value == SCEVAL.value("2", model, "clean").value


def test_table_8_panel_fault_is_clean_minus_the_mean_block_accuracy_and_clean_matches_table_2():
    for model in SCEVAL.models("8"):
        row = SCEVAL.row("8", model)
        blocks = mean(row[b].value for b in ("TV", "TA", "VA", "TVA"))
        assert row["panel_fault"].value == pytest.approx(row["clean"].value - blocks, abs=0.011), model
        assert row["clean"].value == SCEVAL.value("2", model, "clean").value
    # "The contrast is positive for 14 of 15 evaluated models."
    assert sum(v > 0 for v in SCEVAL.column("8", "C_asym").values()) == 14


def test_c3po_table_3_overall_lies_within_its_columns_and_the_prose_ranking_holds():
    columns = ("IC_tier1", "IC_tier2", "IC_tier3", "CC_tier1", "CC_tier2", "CC_tier3", "CC_tier4")
    models = [m for m in C3PO.models("3") if m != "Human"]
    assert len(models) == 15
    for model in models:
        row = C3PO.row("3", model)
        # Overall is the sample-weighted mean of the seven cells, so it lies between their extremes.
        assert min(row[c].value for c in columns) <= row["overall"].value <= max(row[c].value for c in columns)
    overall = C3PO.column("3", "overall")
    # "Gemini-3.1-Pro leads at 73.17% ... Qwen3-Omni, the largest, scoring 43.98%" (best open model).
    assert max(models, key=overall.get) == "gemini-3.1-pro-preview" and overall["gemini-3.1-pro-preview"] == 73.17
    open_models = [m for m in models if C3PO.value("3", m, "overall").group == "open"]
    assert max(open_models, key=overall.get) == "Qwen-3-Omni-Instruct" and overall["Qwen-3-Omni-Instruct"] == 43.98
    assert all(overall[m] < overall["Human"] for m in models)


def test_a_file_of_another_format_is_refused_by_name(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"format": "faultline.published", "format_version": 2}))
    with pytest.raises(ValueError, match=r"x\.json.*format_version 1"):
        load_published(bad)
