"""The SCEval protocol's tables (single-modality, joint, panel, controls, diagnostics ...): each
builder returns ``(shown, raw, trial_links)`` for a :class:`faultline_eval.core.tables.Table`
(``shown`` formatted in points, ``raw`` the numbers, and per shown cell the trials behind it)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from faultline_eval.core.tables import Body, drop, pp, signed, trial_links, trials_in
from sceval_plugin.metrics.protocol import ASYMMETRY_CELLS, JOINT_BLOCKS, MODALITIES, ConditionInfo, Numbers

#: SCEval's own unit on top of :data:`faultline_eval.core.tables.CONVENTIONS`.
SLOPE_CONVENTION = (
    "Fragility slopes S_m (Table 19) are pp per severity unit, three decimals, signed as the paper's: negative = "
    "accuracy falls as severity rises (the desync slope: pp per second of |shift|); report.json and the CSV "
    "files hold them as fractions per unit (-0.00378 = -0.378 pp/sev)."
)


def slope(x: float | None) -> str:
    """A fragility slope S_m (a fraction per severity unit) in pp per severity unit, signed (Table 19)."""
    return "–" if x is None or not np.isfinite(x) else f"{100 * x:+.3f}"


def holm_scope(holm_families: str) -> str:
    """How a caption names the Holm family reading (:data:`sceval_plugin.metrics.protocol.HOLM_FAMILIES`)."""
    return "per model" if holm_families == "model" else "pooled over the reported models"


def cells_of(
    info: dict[str, ConditionInfo],
    block: str | None = None,
    *,
    panel: bool = False,
    modality: str | None = None,
    severity: int | None = None,
) -> list[str]:
    """The catalogue's condition ids of a block (its 12-cell panel part with ``panel``), or its
    single cells of one modality / severity: the cells a block mean, a fault-line score or a
    slope averages, for the trial links (the viewer keeps the ones the logs hold)."""
    return [
        cid
        for cid, c in info.items()
        if (block is None or c.block == block)
        and (not panel or "panel" in c.suites)
        and (modality is None or bool(c.corruptions) and c.corruptions[0][0] == modality)
        and (severity is None or bool(c.corruptions) and c.corruptions[0][2] == severity)
    ]


def _acc(numbers: Numbers) -> pd.Series:
    return numbers.summary.set_index(["model", "condition_id"])["accuracy"]


def single_matrix(numbers: Numbers, info: dict[str, ConditionInfo], operators: list[str]) -> Body:
    """Models x operators at severity 70: accuracy with its signed drop from clean."""
    s = numbers.summary
    rows_shown, rows_raw, links = [], [], []
    for model in sorted(s["model"].unique()):
        acc = s[s["model"] == model].set_index("condition_id")
        clean = acc["accuracy"].get("clean", np.nan)
        shown, raw = {"model": model, "clean": pp(clean)}, {"model": model, "clean": clean}
        link = {"clean": trials_in(["clean"], model)}
        for op in operators:
            cid = next(
                (
                    c
                    for c, i in info.items()
                    if i.block == "single" and i.corruptions[0][1] == op and i.corruptions[0][2] == 70
                ),
                None,
            )
            a = acc["accuracy"].get(cid, np.nan) if cid else np.nan
            shown[op] = f"{pp(a)} ({drop(clean - a)})" if np.isfinite(a) else "–"
            raw[op], raw[f"{op}_drop"] = a, clean - a
            link[op] = trials_in([cid, "clean"], model)  # the accuracy and its drop from clean
        rows_shown.append(shown), rows_raw.append(raw), links.append(link)
    raw = pd.DataFrame(rows_raw)
    if raw[operators].isna().all().all():  # no severity-70 cell was run
        return pd.DataFrame(), pd.DataFrame(), None
    shown = pd.DataFrame(rows_shown)
    return shown, raw, trial_links(shown, links)


def significance_mark(p: float | None) -> str:
    """``*`` for p < .05, ``**`` for p < .01, nothing otherwise (or without a p-value)."""
    return "" if p is None or not np.isfinite(p) else ("**" if p < 0.01 else ("*" if p < 0.05 else ""))


def joint_table(numbers: Numbers, info: dict[str, ConditionInfo]) -> Body:
    """Joint cells x models: accuracy, Δbase and Δsingle (eq. 6, against the weakest observed
    single cell of each corrupted modality); * / ** mark Holm-adjusted p < .05 / .01 (McNemar;
    invalid outputs as incorrect) for clean-vs-joint and single-vs-joint. The CSV adds Δsingle
    against the same operators at the same severities (``delta_single_same_severity``)."""
    s = numbers.summary
    joint = s[s["condition_id"].map(lambda c: c in info and info[c].block in JOINT_BLOCKS).astype(bool)]
    cmp = numbers.comparisons
    p_base = cmp[cmp["kind"] == "clean_vs_condition"].set_index(["model_b", "condition_b"])["p_holm"]
    p_single = cmp[cmp["kind"] == "single_vs_joint"].set_index(["model_b", "condition_b"])["p_holm"]
    order = sorted(joint["condition_id"].unique(), key=lambda c: (JOINT_BLOCKS.index(info[c].block), c))
    models = sorted(joint["model"].unique())
    first_row: dict[tuple, int] = {}  # (model, cell) -> its first row's position: one pass, not a filter per cell
    for position, key in enumerate(zip(joint["model"], joint["condition_id"])):
        first_row.setdefault(key, position)
    rows_shown, raw, links = [], [], []
    for cid in order:
        c = info[cid]
        row = {"condition": cid, "role": c.role or "", "in 29": "yes" if "combined" in c.suites else "no"}
        link = {"condition": trials_in([cid])}
        links.append(link)
        for model in models:
            if (model, cid) not in first_row:
                row[model] = "–"
                continue
            r = joint.iloc[first_row[(model, cid)]]
            pb, ps = p_base.get((model, cid), np.nan), p_single.get((model, cid), np.nan)
            partial = "†" if r["single_grid"] == "partial" else ""
            row[model] = (
                f"{pp(r['accuracy'])} {drop(r['delta_base'])}{significance_mark(pb)} / "
                f"Δs {drop(r['delta_single'])}{significance_mark(ps)}{partial}"
            )
            # accuracy and Δbase: the cell and clean; Δsingle: the cell and its weakest single cell
            link[model] = [trials_in([cid, "clean"], model), trials_in([cid, r["weakest_single"]], model)]
            raw.append(
                {
                    "condition": cid,
                    "model": model,
                    "block": c.block,
                    "role": c.role,
                    "total_severity": sum(x[2] for x in c.corruptions),
                    "accuracy": r["accuracy"],
                    "ci_low": r["ci_low"],
                    "ci_high": r["ci_high"],
                    "delta_base": r["delta_base"],
                    "delta_single": r["delta_single"],
                    "weakest_single": r["weakest_single"],
                    "single_grid": r["single_grid"],
                    "delta_single_same_severity": r["delta_single_same_severity"],
                    "weakest_single_same_severity": r["weakest_single_same_severity"],
                    "p_holm_base": pb,
                    "p_holm_single": ps,
                    "coverage": r["coverage"],
                }
            )
        rows_shown.append(row)
    shown = pd.DataFrame(rows_shown)
    return shown, pd.DataFrame(raw), trial_links(shown, links)


def single_baselines_table(numbers: Numbers) -> Body:
    """The Δsingle baselines: per model and modality, the weakest observed single cell and how
    much of the single-modality grid the logs hold."""
    w = numbers.weakest_singles
    if w.empty:
        return w, w, None
    pool = w.columns[1]  # "modality" or "operator", as the baseline was chosen
    shown = pd.DataFrame(
        {
            "model": w["model"],
            pool: w[pool],
            "weakest single cell": w["condition_id"],
            "accuracy": w["accuracy"].map(pp),
            "cells observed": [
                f"{o} of {c}" + ("" if ok else " (partial)")
                for o, c, ok in zip(w["observed_cells"], w["catalogue_cells"], w["complete"])
            ],
        }
    )
    links = [
        {"weakest single cell": trials_in([cid], model), "accuracy": trials_in([cid], model)}
        for model, cid in zip(w["model"], w["condition_id"])
    ]
    return shown, w, trial_links(shown, links)


def below_single_table(numbers: Numbers, info: dict[str, ConditionInfo]) -> Body:
    """C.3: joint cells below the weakest single cell (Δsingle > 0) per model and block."""
    b = numbers.below_weakest_single
    if b.empty:
        return b, b, None
    shown = pd.DataFrame(
        {
            "model": b["model"],
            "block": b["block"].str.upper().replace("ALL", "all"),
            "below weakest single": [f"{n} of {m}" for n, m in zip(b["below_weakest_single"], b["joint_cells"])],
            "significant": b["significant"],
            "max Δsingle": b["max_delta_single"].map(drop),
            "at": b["max_cell"],
            "below (same severity)": [f"{n} of {m}" for n, m in zip(b["below_same_severity"], b["joint_cells"])],
        }
    )
    links = []
    for model, block, at in zip(b["model"], b["block"].astype(str), b["max_cell"]):
        joint = [cid for blk in (JOINT_BLOCKS if block == "all" else (block,)) for cid in cells_of(info, blk)]
        every = trials_in(joint, model)
        links.append(
            {
                "below weakest single": every,
                "significant": every,
                "below (same severity)": every,
                "max Δsingle": trials_in([at], model),
                "at": trials_in([at], model),
            }
        )
    return shown, b, trial_links(shown, links)


def panel_table(numbers: Numbers, info: dict[str, ConditionInfo]) -> Body:
    """Table 8: clean, panel block means, panel fault, C_asym, strongest cell, coverage."""
    p = numbers.panel
    if p.empty:
        return p, p, None
    shown = pd.DataFrame(
        {
            "model": p["model"],
            "clean": p["clean"].map(pp),
            **{f"{b.upper()}": p[f"mean_{b}"].map(pp) for b in JOINT_BLOCKS},
            "panel fault": p["panel_fault"].map(drop),
            "C_asym": p["C_asym"].map(signed),
            "panel mean": p["panel_mean"].map(pp),
            "panel worst": p["panel_worst"].map(pp),
            "strongest fault line": [
                f"{c} ({drop(d)})" if isinstance(c, str) else "–"
                for c, d in zip(p["strongest_fault_line"], p["strongest_drop"])
            ],
            "cells": p["cells"],
            "coverage": p["coverage"].map(lambda x: "–" if not np.isfinite(x) else f"{100 * x:.1f}%"),
        }
    )
    panel = cells_of(info, panel=True)
    links = [
        {
            "clean": trials_in(["clean"], m),
            **{b.upper(): trials_in(cells_of(info, b, panel=True), m) for b in JOINT_BLOCKS},
            "panel fault": trials_in(["clean", *panel], m),
            "C_asym": trials_in(ASYMMETRY_CELLS, m),
            "panel mean": trials_in(panel, m),
            "panel worst": trials_in(panel, m),
            "coverage": trials_in(panel, m),
            # a drop from clean: the cell with clean, so the page recomputes it (as the joint table's drops)
            "strongest fault line": trials_in([c, "clean"], m) if isinstance(c, str) else None,
        }
        for m, c in zip(p["model"], p["strongest_fault_line"])
    ]
    return shown, p, trial_links(shown, links)


def controls_table(numbers: Numbers, info: dict[str, ConditionInfo]) -> Body:
    """Per model: the missing-modality controls, M_m (eq. 7), the shortcut controls, G and option order."""
    d = numbers.diagnostics.set_index("model")
    acc = _acc(numbers)
    void = numbers.not_applicable.set_index(["model", "condition_id"])["items"] if len(numbers.not_applicable) else {}
    rows_shown, raw, links = [], [], []
    orders = ["clean", *(cid for cid, c in info.items() if c.block == "option_order" and c.base == "clean")]
    for model in d.index:
        row_raw = {"model": model}
        for cid in (
            "missing_text",
            "missing_vision",
            "missing_audio",
            "shortcut_question_options",
            "shortcut_text_only",
            "shortcut_visual_audio",
            "shortcut_options_only",
        ):
            row_raw[cid] = acc.get((model, cid), np.nan)
        row_raw["missing_text_items_not_applicable"] = int(void.get((model, "missing_text"), 0))
        for k in ("M_t", "M_v", "M_a", "G", "chance"):
            row_raw[k] = d.loc[model, k]
        o = numbers.option_orders[numbers.option_orders["model"] == model]
        for _, r in o.iterrows():
            row_raw[f"{r['base']}:mean_order"] = r["mean_order"]
            row_raw[f"{r['base']}:worst_order"] = r["worst_order"]
            row_raw[f"{r['base']}:consistency"] = r["consistency"]
        raw.append(row_raw)
        clean_order = o[o["base"] == "clean"]
        no_text = pp(row_raw["missing_text"])
        if row_raw["missing_text_items_not_applicable"] and not np.isfinite(row_raw["missing_text"]):
            no_text = "n/a‡"
        elif row_raw["missing_text_items_not_applicable"]:
            no_text += "‡"
        rows_shown.append(
            {
                "model": model,
                "no text / vision / audio": " / ".join(
                    [no_text] + [pp(row_raw[f"missing_{m}"]) for m in ("vision", "audio")]
                ),
                "M_t / M_v / M_a": " / ".join(signed(row_raw[k]) for k in ("M_t", "M_v", "M_a")),
                "Q+options": pp(row_raw["shortcut_question_options"]),
                "text only": pp(row_raw["shortcut_text_only"]),
                "G": signed(row_raw["G"]),
                "V+A generic": pp(row_raw["shortcut_visual_audio"]),
                "options only": pp(row_raw["shortcut_options_only"]),
                "order mean / worst (clean)": "–"
                if clean_order.empty
                else f"{pp(clean_order['mean_order'].iloc[0])} / {pp(clean_order['worst_order'].iloc[0])}",
                "consistency (clean)": "–" if clean_order.empty else f"{100 * clean_order['consistency'].iloc[0]:.1f}%",
            }
        )
        links.append(
            {
                "no text / vision / audio": [trials_in([f"missing_{m}"], model) for m in MODALITIES.values()],
                "M_t / M_v / M_a": [
                    trials_in([f"missing_{m}", *cells_of(info, "single", modality=m, severity=70)], model)
                    for m in MODALITIES.values()
                ],
                "Q+options": trials_in(["shortcut_question_options"], model),
                "text only": trials_in(["shortcut_text_only"], model),
                "G": trials_in(["shortcut_text_only"], model),
                "V+A generic": trials_in(["shortcut_visual_audio"], model),
                "options only": trials_in(["shortcut_options_only"], model),
                "order mean / worst (clean)": [trials_in(orders, model)] * 2,
                "consistency (clean)": trials_in(orders, model),
            }
        )
    shown = pd.DataFrame(rows_shown)
    return shown, pd.DataFrame(raw), trial_links(shown, links)


def diagnostics_table(numbers: Numbers, info: dict[str, ConditionInfo]) -> Body:
    """FS_S over the panel (Table 20), the drop over every run cell of each block, fragility
    slopes (Table 19) and the shortcut gap."""
    d = numbers.diagnostics
    shown = pd.DataFrame(
        {
            "model": d["model"],
            "clean": d["clean"].map(pp),
            **{f"FS {b}": d[f"FS_{b}"].map(drop) for b in JOINT_BLOCKS},
            **{f"drop all {b}": d[f"drop_all_{b}"].map(drop) for b in JOINT_BLOCKS},
            **{f"S_{m} (pp/sev)": d[f"S_{m}"].map(slope) for m in "tva"},
            "G": d["G"].map(signed),
        }
    )
    links = [
        {
            "clean": trials_in(["clean"], m),
            **{f"FS {b}": trials_in(["clean", *cells_of(info, b, panel=True)], m) for b in JOINT_BLOCKS},
            **{f"drop all {b}": trials_in(["clean", *cells_of(info, b)], m) for b in JOINT_BLOCKS},
            **{
                f"S_{letter} (pp/sev)": trials_in(["clean", *cells_of(info, "single", modality=modality)], m)
                for letter, modality in MODALITIES.items()
            },
            "G": trials_in(["shortcut_text_only"], m),
        }
        for m in d["model"]
    ]
    return shown, d, trial_links(shown, links)
