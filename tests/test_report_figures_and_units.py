"""The reports' figures adapt to what was run, every written file is in the report index, and a
quantity has one unit and sign everywhere (tables, report.json). In-process on small synthetic
trial tables: a few seconds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_metrics import acc_rows, frame

from faultline_eval.core.report_writer import INDEX
from faultline_eval.core.tables import drop
from sceval_plugin import report
from sceval_plugin.metrics import compute
from sceval_plugin.metrics.protocol import catalogue_info
from sceval_plugin.report import plots
from sceval_plugin.report.protocol_section import operator_names
from sceval_plugin.report.tables import slope

INFO = catalogue_info()
JOINTS = ("bi_tv_drop_words_noise_t30_v70", "bi_va_noise_mute_v70_a50", "tri_drop_words_noise_mute_t30_v70_a30")


def _trials(models: dict[str, dict[str, float]]):
    return frame([row for model, values in models.items() for row in acc_rows(model, values)], prompt_id="p")


def _drawn(monkeypatch, numbers, name: str):
    """Draw one figure of ``plots.figures`` and return its matplotlib figure (not saved)."""
    captured = []
    monkeypatch.setattr(plots, "save", lambda fig, stem: captured.append(fig) or [])
    draw, caption, reason = plots.figures(numbers, INFO, operator_names())[name]
    assert reason is None, reason
    draw(numbers, INFO, Path("unused"))
    return captured[0], caption


def test_one_model_gets_drop_bars_two_models_and_operators_a_heatmap_labelled_by_modality(monkeypatch):
    one = compute(_trials({"m": {"clean": 0.9, "single_noise_v70": 0.5}}), INFO, b=20)
    fig, caption = _drawn(monkeypatch, one, "drop_heatmap")
    (ax,) = [a for a in fig.axes if a.patches]
    assert not ax.images and len(ax.patches) == 1 and ax.patches[0].get_height() == pytest.approx(40.0)
    assert "bar" in caption and "vision" in [t.get_text() for t in ax.texts]
    both = {"clean": 0.9, "single_noise_v70": 0.5, "single_drop_words_t70": 0.6, "single_mute_a70": 0.8}
    two = compute(_trials({"a": both, "b": {**both, "single_noise_v70": 0.9}}), INFO, b=20)
    fig, caption = _drawn(monkeypatch, two, "drop_heatmap")
    ax = fig.axes[0]
    assert ax.images and "heatmap" not in caption and "grouped under text / vision / audio" in caption
    assert {"text", "vision", "audio"} <= {t.get_text() for t in ax.texts}


def test_fewer_than_three_joint_points_make_no_scatter_three_do(monkeypatch):
    values = {"clean": 0.9, "single_noise_v70": 0.5}
    two = compute(_trials({"m": {**values, **dict.fromkeys(JOINTS[:2], 0.4)}}), INFO, b=20)
    reason = plots.figures(two, INFO, operator_names())["joint_scatter"][2]
    assert reason == "only 2 joint cell(s) with a drop from clean, too few for a scatter: see joint.md"
    three = compute(_trials({"m": {**values, **dict.fromkeys(JOINTS, 0.4)}}), INFO, b=20)
    fig, _ = _drawn(monkeypatch, three, "joint_scatter")
    assert sum(len(c.get_offsets()) for c in fig.axes[0].collections) == 3


def test_equal_severity_curves_are_drawn_side_by_side_with_their_intervals(monkeypatch):
    """Two vision operators with the same accuracies: distinct markers, x offset, error bars."""
    values = {"clean": 1.0, **{f"single_{op}_v{s}": 0.7 for op in ("noise", "motion_blur") for s in (30, 70)}}
    numbers = compute(_trials({"m": values}), INFO, b=50)
    fig, _ = _drawn(monkeypatch, numbers, "severity_curves")
    bars = {c.get_label(): c for c in fig.axes[0].containers}  # one error-bar container per operator
    assert set(bars) == {"motion_blur", "noise"}
    lines = {op: c.lines[0] for op, c in bars.items()}
    xs = {op: list(line.get_xdata()) for op, line in lines.items()}
    assert xs["motion_blur"] != xs["noise"] and xs["noise"][1] - xs["motion_blur"][1] == pytest.approx(
        plots.CURVE_OFFSET
    )
    assert lines["noise"].get_marker() != lines["motion_blur"].get_marker()
    assert all(c.has_yerr and c.lines[2] for c in bars.values())  # the 95 % intervals


def test_two_models_share_the_y_axis_and_equal_curves_differ_in_line_style(monkeypatch):
    """Rows of the severity curves compare at a glance; two operators at 100 % stay two lines."""
    values = {"clean": 1.0, **{f"single_{op}_v{s}": 1.0 for op in ("noise", "motion_blur") for s in (30, 70)}}
    worse = {**values, "single_drop_words_t70": 0.2}
    numbers = compute(_trials({"a": values, "b": worse}), INFO, b=50)
    fig, _ = _drawn(monkeypatch, numbers, "severity_curves")
    panels = [ax for ax in fig.axes if ax.containers]
    assert len({ax.get_ylim() for ax in panels}) == 1 and panels[0].get_ylim()[0] < 20  # b's drop sets a's axis too
    vision = [ax for ax in panels if {c.get_label() for c in ax.containers} == {"motion_blur", "noise"}][0]
    styles = {c.get_label(): c.lines[0].get_linestyle() for c in vision.containers}
    assert styles["motion_blur"] != styles["noise"]


def test_every_joint_point_is_named_and_no_two_names_overlap(monkeypatch):
    values = {
        "clean": 0.9,
        "single_noise_v70": 0.5,
        **dict.fromkeys(JOINTS, 0.4),
        "bi_tv_drop_words_occlusion_t70_v30": 0.4,
    }
    numbers = compute(_trials({"m": values}), INFO, b=20)
    fig, _ = _drawn(monkeypatch, numbers, "joint_scatter")
    ax = fig.axes[0]
    names = {t.get_text(): t for t in ax.texts}
    assert set(names) == {"t30/v70", "v70/a50", "t30/v70/a30", "t70/v30 occlusion"}  # all at the same drop
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in names.values()]
    assert not any(a.overlaps(b) for k, a in enumerate(boxes) for b in boxes[k + 1 :])


def _md_rows(path: Path) -> list[dict[str, str]]:
    lines = [line for line in path.read_text().splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")))) for line in lines[2:]]


@pytest.fixture(scope="module")
def small_report(tmp_path_factory):
    """Two models, singles of three modalities (noise at every severity), the three joints."""
    values = {
        "clean": 0.9,
        **{f"single_noise_v{s}": 0.9 - s / 200 for s in (10, 30, 50, 70)},
        "single_drop_words_t30": 0.8,
        "single_drop_words_t70": 0.6,
        "single_mute_a30": 0.9,
        "single_mute_a70": 0.7,
        "bi_tv_drop_words_noise_t30_v70": 0.7,  # above its weakest single: Δsingle < 0
        "bi_va_noise_mute_v70_a50": 0.4,
        "tri_drop_words_noise_mute_t30_v70_a30": 0.3,
    }
    trials = _trials({"a": values, "b": {**values, "clean": 0.7, "single_noise_v70": 0.6}})
    out = tmp_path_factory.mktemp("report")
    mp = pytest.MonkeyPatch()
    mp.setattr(report, "read_runs", lambda runs, progress=True: (trials, []))
    done = report.build_report(["fake"], out, b=50, progress=False, figures=False)
    mp.undo()
    return out, done, json.loads((out / "report.json").read_text())


def test_a_quantity_has_one_unit_and_sign_in_every_table_and_in_report_json(small_report):
    out, _, data = small_report
    assert "pp per severity unit" in data["conventions"]["slope"] and "↓x" in data["conventions"]["drop"]
    diagnostics = {r["model"]: r for r in _md_rows(out / "diagnostics.md")}
    steepest = {r["model"]: r for r in _md_rows(out / "steepest_channel.md")}
    for row in data["diagnostics"]:
        for m in "tva":  # S_m: the same number and unit in both tables, the json's fraction x 100
            assert diagnostics[row["model"]][f"S_{m} (pp/sev)"] == steepest[row["model"]][f"S_{m} (pp/sev)"]
            assert diagnostics[row["model"]][f"S_{m} (pp/sev)"] == slope(row[f"S_{m}"])
        assert diagnostics[row["model"]]["FS tva"] == drop(row["FS_tva"])
    assert data["diagnostics"][0]["S_v"] < 0 and diagnostics["a"]["S_v (pp/sev)"].startswith("-")
    # Δsingle: the same arrow and number in the joint table and the below-weakest-single table
    joint = {r["condition"]: r for r in _md_rows(out / "joint.md")}
    below = [r for r in _md_rows(out / "below_weakest_single.md") if r["block"] != "all"]
    rows = {(r["model"], r["block"].lower()): r for r in data["below_weakest_single"]}
    assert below
    for shown in below:
        raw = rows[(shown["model"], shown["block"].lower())]
        assert shown["max Δsingle"] == drop(raw["max_delta_single"])
        assert f"Δs {shown['max Δsingle']}" in joint[shown["at"]][shown["model"]]
    tv = rows[("a", "tv")]["max_delta_single"]
    assert tv < 0 and below[0]["max Δsingle"].startswith("↑")  # the paper's sign: negative Δsingle = better
    # a severity-70 drop: the same in the single-modality table and the conditions in report.json
    s70 = {r["model"]: r for r in _md_rows(out / "single_modality_s70.md")}
    for c in data["conditions"]:
        if c["condition_id"] == "single_noise_v70":
            assert s70[c["model"]]["noise"].endswith(f"({drop(c['delta_base'])})")


def _links(index: Path) -> set[Path]:
    return {(index.parent / target).resolve() for target in re.findall(r"\]\(([^)]+)\)", index.read_text())}


def test_the_index_lists_every_file_the_report_wrote(small_report):
    out, done, _ = small_report
    written = {Path(p).resolve() for p in done["written"]}
    assert written == {p.resolve() for p in out.rglob("*") if p.is_file()}
    listed = set().union(*(_links(index) for index in out.rglob(INDEX)))
    assert written <= listed, sorted(map(str, written - listed))
    text = (out / INDEX).read_text()
    assert text.index("## Open first") < text.index("## Units and signs") < text.index("## Headline tables")
    assert "1. [single_modality_s70.md](single_modality_s70.md): Which single-modality" in text
