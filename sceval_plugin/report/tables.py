"""Tables for a paper: each one as Markdown, CSV and LaTeX, and beside each the trials behind
its numbers (``<name>.trials.json``, for the results viewer's links)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from sceval_plugin.metrics.protocol import ASYMMETRY_CELLS, JOINT_BLOCKS, MODALITIES, ConditionInfo, Numbers
from faultline_eval.core.store import replacing, write_atomic


def pp(x: float) -> str:
    """A fraction as percentage points, one decimal."""
    return "–" if x is None or not np.isfinite(x) else f"{100 * x:.1f}"


def drop(x: float) -> str:
    """A drop (positive = worse) with an arrow, in points."""
    if x is None or not np.isfinite(x):
        return "–"
    return f"↓{100 * x:.1f}" if x > 0 else (f"↑{-100 * x:.1f}" if x < 0 else "±0")


def signed(x: float) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{100 * x:+.1f}"


def _markdown(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows]) + "\n"


_LATEX_ESCAPE = {"&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "↓": r"$\downarrow$", "↑": r"$\uparrow$",
                 "±": r"$\pm$", "–": "--", "×": r"$\times$", "Δ": r"$\Delta$", "†": r"$\dagger$",
                 "‡": r"$\ddagger$"}


def _latex_cell(value: object) -> str:
    text = str(value)
    for raw, escaped in _LATEX_ESCAPE.items():
        text = text.replace(raw, escaped)
    return text


def _latex(frame: pd.DataFrame, caption: str) -> str:
    lines = [r"\begin{table}[t]", r"\centering", r"\small", rf"\begin{{tabular}}{{l{'r' * (len(frame.columns) - 1)}}}",
             r"\toprule", " & ".join(_latex_cell(c) for c in frame.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(_latex_cell(v) for v in row) + r" \\" for row in frame.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{_latex_cell(caption)}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


#: ``shown.attrs`` key of a table's trial links (see :func:`with_trials`).
TRIALS = "trials"
#: The label columns of a table whose rows stand for one (model, condition) each (see :func:`write_table`).
ROW_KEYS = ("model", "condition_id")


def trials_in(cells: Iterable[str | None], model: str | Iterable[str] | None = None, **where: str) -> dict | None:
    """The trials one table number was computed from, as the results viewer selects them: those
    of the ``cells`` (SCEval condition ids or C3PO template ids; several for a number over a
    block, a modality or a tier), of ``model`` only when given (a label, or several: a number
    over a model family), and matching ``where`` (the
    viewer's trial-table columns, e.g. ``failure_mode="audio_dominance"``; a value starting with
    ``=`` must match whole, otherwise it is found within the column's text, ``!`` excludes it;
    alternatives joined by ``|``, e.g. ``verdict="=correct|=wrong"``, match either).
    None when no cell is named: nothing to link."""
    cells = sorted({str(c) for c in cells if isinstance(c, str) and c})
    if not cells:
        return None
    models = [model] if isinstance(model, str) else list(model or ())
    return {"cells": cells, **({"model": "|".join(f"={m}" for m in models)} if models else {}), **where}


def holm_scope(holm_families: str) -> str:
    """How a caption names the Holm family reading (:data:`sceval_plugin.metrics.protocol.HOLM_FAMILIES`)."""
    return "per model" if holm_families == "model" else "pooled over the reported models"


def with_trials(shown: pd.DataFrame, links: list[dict[str, dict | list | None]]) -> pd.DataFrame:
    """``shown`` with, per row, ``{column: trials_in(...)}`` for its numbers (columns left out are
    not linked); a list of selectors for a cell of several numbers joined by `` / ``, one each.
    :func:`write_table` writes them beside the table."""
    if len(links) != len(shown):
        raise ValueError(f"{len(links)} rows of trial links for a table of {len(shown)} rows")
    shown.attrs[TRIALS] = [[row.get(str(c)) for c in shown.columns] for row in links]
    return shown


def _row_trials(shown: pd.DataFrame, numbers: pd.DataFrame) -> list[list] | None:
    """For a table whose raw rows are one (model, condition) each and line up with the shown rows:
    every cell but the labels links to that row's trials."""
    if len(numbers) != len(shown) or not set(ROW_KEYS) <= set(numbers.columns) or not len(shown):
        return None
    labels = {"model", "condition", "condition_id", "family", "probe", "parameter"}

    def linked(column: str) -> bool:  # not a label, nor a test's p-value (not a trial aggregate)
        return column not in labels and not column.startswith("p ")

    return [[trials_in([cid], model) if linked(str(c)) else None for c in shown.columns]
            for model, cid in zip(numbers["model"].astype(str), numbers["condition_id"].astype(str))]


def write_table(out: Path, name: str, shown: pd.DataFrame, numbers: pd.DataFrame, caption: str) -> list[Path]:
    """``shown`` (formatted) as Markdown and LaTeX; ``numbers`` (raw) as CSV; and
    ``<name>.trials.json``, per shown row and column the trials behind that number (the table's
    :func:`with_trials` links, or each row's (model, condition) when ``numbers`` has one per shown
    row), which the results viewer turns into links."""
    out.mkdir(parents=True, exist_ok=True)
    md, tex, csv = out / f"{name}.md", out / f"{name}.tex", out / f"{name}.csv"
    write_atomic(md, f"**{caption}**\n\n" + _markdown(shown))
    write_atomic(tex, _latex(shown, caption))
    with replacing(csv) as temporary:
        numbers.to_csv(temporary, index=False)
    written = [md, csv, tex]
    links = shown.attrs.get(TRIALS) or _row_trials(shown, numbers)
    if links and any(any(row) for row in links):
        side = out / f"{name}.trials.json"
        write_atomic(side, json.dumps({"columns": [str(c) for c in shown.columns], "rows": links}))
        written.append(side)
    return written


def cells_of(info: dict[str, ConditionInfo], block: str | None = None, *, panel: bool = False,
             modality: str | None = None, severity: int | None = None) -> list[str]:
    """The catalogue's condition ids of a block (its 12-cell panel part with ``panel``), or its
    single cells of one modality / severity: the cells a block mean, a fault-line score or a
    slope averages, for the trial links (the viewer keeps the ones the logs hold)."""
    return [cid for cid, c in info.items() if (block is None or c.block == block)
            and (not panel or "panel" in c.suites)
            and (modality is None or bool(c.corruptions) and c.corruptions[0][0] == modality)
            and (severity is None or bool(c.corruptions) and c.corruptions[0][2] == severity)]


def _acc(numbers: Numbers) -> pd.Series:
    return numbers.summary.set_index(["model", "condition_id"])["accuracy"]


def single_matrix(numbers: Numbers, info: dict[str, ConditionInfo], operators: list[str]):
    """Models x operators at severity 70: accuracy with its signed drop from clean."""
    s = numbers.summary
    rows_shown, rows_raw, links = [], [], []
    for model in sorted(s["model"].unique()):
        acc = s[s["model"] == model].set_index("condition_id")
        clean = acc["accuracy"].get("clean", np.nan)
        shown, raw = {"model": model, "clean": pp(clean)}, {"model": model, "clean": clean}
        link = {"clean": trials_in(["clean"], model)}
        for op in operators:
            cid = next((c for c, i in info.items() if i.block == "single" and i.corruptions[0][1] == op
                        and i.corruptions[0][2] == 70), None)
            a = acc["accuracy"].get(cid, np.nan) if cid else np.nan
            shown[op] = f"{pp(a)} ({drop(clean - a)})" if np.isfinite(a) else "–"
            raw[op], raw[f"{op}_drop"] = a, clean - a
            link[op] = trials_in([cid, "clean"], model)  # the accuracy and its drop from clean
        rows_shown.append(shown), rows_raw.append(raw), links.append(link)
    raw = pd.DataFrame(rows_raw)
    if raw[operators].isna().all().all():  # no severity-70 cell was run
        return pd.DataFrame(), pd.DataFrame()
    return with_trials(pd.DataFrame(rows_shown), links), raw


def _mark(p: float) -> str:
    return "" if p is None or not np.isfinite(p) else ("**" if p < 0.01 else ("*" if p < 0.05 else ""))


def joint_table(numbers: Numbers, info: dict[str, ConditionInfo]):
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
    rows_shown, raw, links = [], [], []
    for cid in order:
        c = info[cid]
        row = {"condition": cid, "role": c.role or "", "in 29": "yes" if "combined" in c.suites else "no"}
        link = {"condition": trials_in([cid])}
        links.append(link)
        for model in models:
            r = joint[(joint["model"] == model) & (joint["condition_id"] == cid)]
            if r.empty:
                row[model] = "–"
                continue
            r = r.iloc[0]
            pb, ps = p_base.get((model, cid), np.nan), p_single.get((model, cid), np.nan)
            partial = "†" if r["single_grid"] == "partial" else ""
            row[model] = (f"{pp(r['accuracy'])} {drop(r['delta_base'])}{_mark(pb)} / "
                          f"Δs {drop(r['delta_single'])}{_mark(ps)}{partial}")
            # accuracy and Δbase: the cell and clean; Δsingle: the cell and its weakest single cell
            link[model] = [trials_in([cid, "clean"], model), trials_in([cid, r["weakest_single"]], model)]
            raw.append({"condition": cid, "model": model, "block": c.block, "role": c.role,
                        "total_severity": sum(x[2] for x in c.corruptions), "accuracy": r["accuracy"],
                        "ci_low": r["ci_low"], "ci_high": r["ci_high"], "delta_base": r["delta_base"],
                        "delta_single": r["delta_single"], "weakest_single": r["weakest_single"],
                        "single_grid": r["single_grid"], "delta_single_same_severity": r["delta_single_same_severity"],
                        "weakest_single_same_severity": r["weakest_single_same_severity"],
                        "p_holm_base": pb, "p_holm_single": ps, "coverage": r["coverage"]})
        rows_shown.append(row)
    return with_trials(pd.DataFrame(rows_shown), links), pd.DataFrame(raw)


def single_baselines_table(numbers: Numbers):
    """The Δsingle baselines: per model and modality, the weakest observed single cell and how
    much of the single-modality grid the logs hold."""
    w = numbers.weakest_singles
    if w.empty:
        return w, w
    pool = w.columns[1]  # "modality" or "operator", as the baseline was chosen
    shown = pd.DataFrame({"model": w["model"], pool: w[pool], "weakest single cell": w["condition_id"],
                          "accuracy": w["accuracy"].map(pp),
                          "cells observed": [f"{o} of {c}" + ("" if ok else " (partial)") for o, c, ok in
                                             zip(w["observed_cells"], w["catalogue_cells"], w["complete"])]})
    links = [{"weakest single cell": trials_in([cid], model), "accuracy": trials_in([cid], model)}
             for model, cid in zip(w["model"], w["condition_id"])]
    return with_trials(shown, links), w


def below_single_table(numbers: Numbers, info: dict[str, ConditionInfo]):
    """C.3: joint cells below the weakest single cell (Δsingle > 0) per model and block."""
    b = numbers.below_weakest_single
    if b.empty:
        return b, b
    shown = pd.DataFrame({
        "model": b["model"], "block": b["block"].str.upper().replace("ALL", "all"),
        "below weakest single": [f"{n} of {m}" for n, m in zip(b["below_weakest_single"], b["joint_cells"])],
        "significant": b["significant"], "max Δsingle": b["max_delta_single"].map(signed), "at": b["max_cell"],
        "below (same severity)": [f"{n} of {m}" for n, m in zip(b["below_same_severity"], b["joint_cells"])],
    })
    links = []
    for model, block, at in zip(b["model"], b["block"].astype(str), b["max_cell"]):
        joint = [cid for blk in (JOINT_BLOCKS if block == "all" else (block,)) for cid in cells_of(info, blk)]
        every = trials_in(joint, model)
        links.append({"below weakest single": every, "significant": every, "below (same severity)": every,
                      "max Δsingle": trials_in([at], model), "at": trials_in([at], model)})
    return with_trials(shown, links), b


def panel_table(numbers: Numbers, info: dict[str, ConditionInfo]):
    """Table 8: clean, panel block means, panel fault, C_asym, strongest cell, coverage."""
    p = numbers.panel
    if p.empty:
        return p, p
    shown = pd.DataFrame({
        "model": p["model"], "clean": p["clean"].map(pp), **{f"{b.upper()}": p[f"mean_{b}"].map(pp) for b in JOINT_BLOCKS},
        "panel fault": p["panel_fault"].map(drop), "C_asym": p["C_asym"].map(signed),
        "panel mean": p["panel_mean"].map(pp), "panel worst": p["panel_worst"].map(pp),
        "strongest fault line": [f"{c} ({drop(d)})" if isinstance(c, str) else "–"
                                 for c, d in zip(p["strongest_fault_line"], p["strongest_drop"])],
        "cells": p["cells"],
        "coverage": p["coverage"].map(lambda x: "–" if not np.isfinite(x) else f"{100 * x:.1f}%"),
    })
    panel = cells_of(info, panel=True)
    links = [{"clean": trials_in(["clean"], m), **{b.upper(): trials_in(cells_of(info, b, panel=True), m) for b in JOINT_BLOCKS},
              "panel fault": trials_in(["clean", *panel], m), "C_asym": trials_in(ASYMMETRY_CELLS, m),
              "panel mean": trials_in(panel, m), "panel worst": trials_in(panel, m), "coverage": trials_in(panel, m),
              # a drop from clean: the cell with clean, so the page recomputes it (as the joint table's drops)
              "strongest fault line": trials_in([c, "clean"], m) if isinstance(c, str) else None}
             for m, c in zip(p["model"], p["strongest_fault_line"])]
    return with_trials(shown, links), p


def controls_table(numbers: Numbers, info: dict[str, ConditionInfo]):
    """Per model: the missing-modality controls, M_m (eq. 7), the shortcut controls, G and option order."""
    d = numbers.diagnostics.set_index("model")
    acc = _acc(numbers)
    void = numbers.not_applicable.set_index(["model", "condition_id"])["items"] if len(numbers.not_applicable) else {}
    rows_shown, raw, links = [], [], []
    orders = ["clean", *(cid for cid, c in info.items() if c.block == "option_order" and c.base == "clean")]
    for model in d.index:
        row_raw = {"model": model}
        for cid in ("missing_text", "missing_vision", "missing_audio", "shortcut_question_options",
                    "shortcut_text_only", "shortcut_visual_audio", "shortcut_options_only"):
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
        rows_shown.append({
            "model": model,
            "no text / vision / audio": " / ".join([no_text] + [pp(row_raw[f"missing_{m}"]) for m in ("vision", "audio")]),
            "M_t / M_v / M_a": " / ".join(signed(row_raw[k]) for k in ("M_t", "M_v", "M_a")),
            "Q+options": pp(row_raw["shortcut_question_options"]), "text only": pp(row_raw["shortcut_text_only"]),
            "G": pp(row_raw["G"]), "V+A generic": pp(row_raw["shortcut_visual_audio"]),
            "options only": pp(row_raw["shortcut_options_only"]),
            "order mean / worst (clean)": "–" if clean_order.empty else
            f"{pp(clean_order['mean_order'].iloc[0])} / {pp(clean_order['worst_order'].iloc[0])}",
            "consistency (clean)": "–" if clean_order.empty else f"{100 * clean_order['consistency'].iloc[0]:.1f}%",
        })
        links.append({
            "no text / vision / audio": [trials_in([f"missing_{m}"], model) for m in MODALITIES.values()],
            "M_t / M_v / M_a": [trials_in([f"missing_{m}", *cells_of(info, "single", modality=m, severity=70)], model)
                                for m in MODALITIES.values()],
            "Q+options": trials_in(["shortcut_question_options"], model),
            "text only": trials_in(["shortcut_text_only"], model), "G": trials_in(["shortcut_text_only"], model),
            "V+A generic": trials_in(["shortcut_visual_audio"], model),
            "options only": trials_in(["shortcut_options_only"], model),
            "order mean / worst (clean)": [trials_in(orders, model)] * 2, "consistency (clean)": trials_in(orders, model),
        })
    return with_trials(pd.DataFrame(rows_shown), links), pd.DataFrame(raw)


def diagnostics_table(numbers: Numbers, info: dict[str, ConditionInfo]):
    """FS_S over the panel (Table 20), the drop over every run cell of each block, fragility
    slopes (Table 19) and the shortcut gap."""
    d = numbers.diagnostics
    shown = pd.DataFrame({"model": d["model"], "clean": d["clean"].map(pp),
                          **{f"FS {b}": d[f"FS_{b}"].map(pp) for b in JOINT_BLOCKS},
                          **{f"drop all {b}": d[f"drop_all_{b}"].map(pp) for b in JOINT_BLOCKS},
                          **{f"S_{m} (pp/10 sev)": d[f"S_{m}"].map(lambda x: "–" if not math.isfinite(x) else f"{1000 * x:+.2f}")
                             for m in "tva"},
                          "G": d["G"].map(pp)})
    links = [{"clean": trials_in(["clean"], m),
              **{f"FS {b}": trials_in(["clean", *cells_of(info, b, panel=True)], m) for b in JOINT_BLOCKS},
              **{f"drop all {b}": trials_in(["clean", *cells_of(info, b)], m) for b in JOINT_BLOCKS},
              **{f"S_{letter} (pp/10 sev)": trials_in(["clean", *cells_of(info, "single", modality=modality)], m)
                 for letter, modality in MODALITIES.items()},
              "G": trials_in(["shortcut_text_only"], m)} for m in d["model"]]
    return with_trials(shown, links), d
