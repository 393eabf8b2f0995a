"""The mechanism probes' part of ``sceval report``: one table per probe family, Table 17's summary,
the trust-bias table, calibration under each probe, and the desync / frame-budget / key-frame
position figures. Numbers come from :mod:`sceval_plugin.metrics.probe_effects`; a table or figure the
logs cannot fill is left out with a note.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd

from faultline_eval.core.figures import Figure, pyplot, save
from faultline_eval.core.report_writer import Section
from faultline_eval.core.tables import Table, TrialLinks, drop, json_records, pp, trial_links, trials_in
from sceval_plugin.metrics.probe_effects import (
    desync_curve,
    family_metrics,
    probe_calibration,
    probe_conditions,
    trust_bias,
)
from sceval_plugin.metrics.protocol import Numbers
from sceval_plugin.metrics.reliability import CONFIDENCE_VALUES
from sceval_plugin.probe_conditions import HEADLINE_BUDGET, PROBE_FAMILIES
from sceval_plugin.report.tables import holm_scope, significance_mark

FAMILY_TITLES = {
    "mismatch": "Cross-modal mismatch (G.9): one modality's evidence from a donor item (random, category- or "
    "answer-matched)",
    "temporal": "Temporal order (G.10): frames shuffled, reversed or middle frames dropped; audio segments shuffled "
    "or silent gaps inserted",
    "desync": "A/V desync (G.10): audio shifted against the frames (+ later, − earlier), same duration",
    "frame_budget": f"Frame budget (G.10): frames sampled at each budget; the headline budget is {HEADLINE_BUDGET}",
    "key_frame": "Key-frame position (G.10): the item's key frame moved first, middle or last",
    "distractor": "Distractor insertion (G.11): unrelated audio in items whose evidence needs no audio, unrelated "
    "frames in items that need no visual, misleading text in items that need no text (appended_*: "
    "an unrelated clip, frame or sentence added to an item that keeps all its evidence)",
}


def _interval(r) -> str:
    if not np.isfinite(r["ci_low"]):
        return pp(r["accuracy"])
    return f"{pp(r['accuracy'])} [{pp(r['ci_low'])}, {pp(r['ci_high'])}]"


def _parameter(p) -> str:
    return f"{p:+g} s" if isinstance(p, float) else str(p)


def family_table(table: pd.DataFrame) -> tuple[pd.DataFrame, TrialLinks]:
    """A probe family's rows as printed: accuracy [95 % CI], drop from clean with its Holm mark;
    each number linked to its trials (the drop: the probe's with clean's, to recompute it)."""
    links = [
        {
            "accuracy % [95% CI]": trials_in([cid], model),
            "drop (pp)": trials_in([cid, "clean"], model),
            "items": trials_in([cid], model),
            "not applicable": trials_in([cid], model),
        }
        for model, cid in zip(table["model"].astype(str), table["condition_id"].astype(str))
    ]
    shown = pd.DataFrame(
        {
            "model": table["model"],
            "probe": table["probe"],
            "parameter": table["parameter"].map(_parameter),
            "accuracy % [95% CI]": [_interval(r) for _, r in table.iterrows()],
            "drop (pp)": [drop(d) + significance_mark(p) for d, p in zip(table["drop"], table["p_holm"])],
            "p (Holm)": [f"{p:.3g}" if np.isfinite(p) else "–" for p in table["p_holm"]],
            "items": table["n_samples"],
            "not applicable": table["not_applicable"],
        }
    )
    return shown, trial_links(shown, links)


def summary_table(metrics: pd.DataFrame, trust: pd.DataFrame, ece: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 17's row per model: T_t / T_v / T_a (all tiers), temporal drop, desync slope (pp/s),
    budget gap, position gap, mean ECE over the probe conditions and the distractor effect."""
    raw = metrics.copy()
    pooled = trust[trust["tier"] == "all"] if len(trust) else trust
    for modality in ("text", "vision", "audio"):
        got = pooled[pooled["modality"] == modality].set_index("model")["trust_bias"] if len(pooled) else {}
        raw[f"T_{modality[0]}"] = raw["model"].map(lambda m, got=got: got.get(m, np.nan))
    probe_ece = ece[ece["family"] != "clean"].groupby("model")["ece"].mean() if len(ece) else pd.Series(dtype=float)
    raw["ece"] = raw["model"].map(lambda m: probe_ece.get(m, np.nan))
    keep = [
        c
        for c in (
            "model",
            "T_t",
            "T_v",
            "T_a",
            "temporal_drop",
            "desync_slope",
            "budget_gap",
            "position_gap",
            "ece",
            "distractor_effect",
        )
        if c in raw
    ]
    raw = raw.reindex(columns=keep)
    shown = pd.DataFrame({"model": raw["model"]})
    for c in ("T_t", "T_v", "T_a"):
        shown[f"{c} %"] = raw[c].map(pp)
    for c, label in (
        ("temporal_drop", "temporal drop (pp)"),
        ("budget_gap", "budget gap (pp)"),
        ("position_gap", "position gap (pp)"),
        ("distractor_effect", "distractor effect (pp)"),
    ):
        if c in raw:
            shown[label] = raw[c].map(drop if c != "position_gap" else pp)
    if "desync_slope" in raw:
        shown["desync slope (pp/s)"] = raw["desync_slope"].map(
            lambda x: "–" if not np.isfinite(x) else f"{100 * x:+.2f}"
        )
    shown["ECE (probes)"] = raw["ece"].map(lambda x: "–" if not np.isfinite(x) else f"{x:.3f}")
    return shown, raw


def _counted(reading: str, determinable: bool = True) -> dict[str, str]:
    """The viewer filters of the trials T_m counts (G.9): valid answers to an applicable mismatch
    probe whose donor answer maps onto an option (the viewer's ``donor_answer``; with
    ``determinable`` false, those where it does not). That column is the donor's gold: under the
    ``donor_clean_answer`` reading only the valid trials are selected (a superset)."""
    valid = {"verdict": "=correct|=wrong"}
    return {**valid, "donor_answer": "!" if determinable else "="} if reading == "donor_gold" else valid


def _mismatch_cells(info: dict, modality: str, tier: str = "all") -> list[str]:
    """The mismatch probe cells replacing ``modality`` with a donor of ``tier`` ("all": any tier)."""
    return [
        cid
        for cid, c in info.items()
        if c.probe is not None
        and c.probe[0] == "mismatch"
        and c.probe[1] == f"mismatch_{modality}"
        and tier in ("all", c.probe[2])
    ]


def summary_links(table: pd.DataFrame, ece: pd.DataFrame, info: dict, reading: str) -> list[dict]:
    """Per model of :func:`summary_table`: the trials behind each number, the probe cells the
    model ran of that family (with clean for a drop from clean)."""
    links = []
    for model, ran in table.groupby("model", sort=True):
        table17 = ran[~ran["option"].astype(bool)]  # a family's number is over Table 17's conditions
        cells = table17.groupby("family")["condition_id"].agg(list).to_dict()
        ece_cells = ece.loc[(ece["model"] == model) & (ece["family"] != "clean"), "condition_id"] if len(ece) else []
        links.append(
            {
                **{
                    f"T_{m[0]} %": trials_in(_mismatch_cells(info, m), model, **_counted(reading))
                    for m in ("text", "vision", "audio")
                },
                **{
                    column: trials_in([*clean, *cells.get(family, [])], model)
                    for column, family, clean in (
                        ("temporal drop (pp)", "temporal", ["clean"]),
                        ("budget gap (pp)", "frame_budget", []),
                        ("position gap (pp)", "key_frame", []),
                        ("distractor effect (pp)", "distractor", ["clean"]),
                        ("desync slope (pp/s)", "desync", ["clean"]),
                    )
                },
                "ECE (probes)": trials_in(ece_cells, model),
            }
        )
    return links


def trust_table(trust: pd.DataFrame, info: dict) -> tuple[pd.DataFrame, TrialLinks]:
    """The trust-bias rows as printed, each number linked to the trials it counts."""
    links = []
    for r in trust.to_dict("records"):
        cells, model, reading = _mismatch_cells(info, r["modality"], r["tier"]), r["model"], r["reading"]
        counted = trials_in(cells, model, **_counted(reading))
        links.append(
            {
                **dict.fromkeys(("T_m % [95% CI]", "follows item %", "neither %"), counted),
                "determinable": counted if r["determinable"] and reading == "donor_gold" else None,
                "undetermined": trials_in(cells, model, **_counted(reading, determinable=False))
                if r["undetermined"] and reading == "donor_gold"
                else None,
            }
        )
    shown = pd.DataFrame(
        {
            "model": trust["model"],
            "replaced": trust["modality"],
            "donor tier": trust["tier"],
            "T_m % [95% CI]": [
                f"{pp(r['trust_bias'])} [{pp(r['ci_low'])}, {pp(r['ci_high'])}]" for _, r in trust.iterrows()
            ],
            "follows item %": trust["follows_item"].map(pp),
            "neither %": trust["follows_neither"].map(pp),
            "determinable": trust["determinable"],
            "undetermined": trust["undetermined"],
        }
    )
    return shown, trial_links(shown, links)


def calibration_table(ece: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": ece["model"],
            "condition": ece["condition_id"],
            "family": ece["family"],
            "ECE": ece["ece"].map(lambda x: f"{x:.3f}" if np.isfinite(x) else "–"),
            "ρ_oc": ece["rho_oc"].map(lambda x: f"{x:.2f}" if np.isfinite(x) else "–"),
            "rated": ece["rated"],
            "conf. right": ece["confidence_right"].map(lambda x: f"{x:.2f}" if np.isfinite(x) else "–"),
            "conf. wrong": ece["confidence_wrong"].map(lambda x: f"{x:.2f}" if np.isfinite(x) else "–"),
        }
    )


# --- figures ------------------------------------------------------------------------------------


def _legend_below(ax, fig) -> None:
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3, fontsize=7, frameon=False)


def desync_figure(table: pd.DataFrame, metrics: pd.DataFrame, stem: Path) -> list[Path]:
    """Accuracy (%) against the audio shift, one line per model (clean at 0 s, 95 % CI bars), the
    |shift| slope in the legend."""
    plt = pyplot()
    curve = desync_curve(table)
    slopes = metrics.set_index("model")["desync_slope"] if "desync_slope" in metrics else {}
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for k, (model, c) in enumerate(curve.groupby("model", sort=True)):
        y = 100 * c["accuracy"].to_numpy(float)
        err = np.vstack([y - 100 * c["ci_low"].to_numpy(float), 100 * c["ci_high"].to_numpy(float) - y])
        slope = slopes.get(model, np.nan)
        ax.errorbar(
            c["shift_s"],
            y,
            yerr=np.nan_to_num(err),
            marker="os^D"[k % 4],
            markersize=4,
            capsize=2,
            linewidth=1.3,
            label=f"{model} (slope {100 * slope:+.2f} pp/s over |shift|)",
        )
    ax.axvline(0, color="0.6", linewidth=0.8, linestyle=":")
    ax.set_xlabel("audio shift (s; + = audio later, 0 = clean)")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 102)
    ax.grid(alpha=0.3)
    ax.set_title("A/V desync curve", fontsize=10)
    _legend_below(ax, fig)
    return save(fig, stem)


def _categorical(
    table: pd.DataFrame, family: str, order: list, stem: Path, title: str, xlabel: str, reference: str
) -> list[Path]:
    """Grouped bars of accuracy (%) per parameter with 95 % CIs, one colour per model, and a
    dashed line per model at the reference accuracy (``reference``: "clean" or a parameter)."""
    plt = pyplot()
    t = table[table["family"] == family]
    params = [p for p in order if p in set(t["parameter"])] + sorted(set(t["parameter"]) - set(order), key=str)
    models = sorted(set(t["model"]))
    width = 0.8 / max(1, len(models))
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(params), 3.4))
    cmap = plt.get_cmap("tab10")
    for k, model in enumerate(models):
        m = t[t["model"] == model].set_index("parameter")
        x = np.arange(len(params)) + (k - (len(models) - 1) / 2) * width
        acc = np.array([m["accuracy"].get(p, np.nan) for p in params], float) * 100
        low = np.array([m["ci_low"].get(p, np.nan) for p in params], float) * 100
        high = np.array([m["ci_high"].get(p, np.nan) for p in params], float) * 100
        ax.bar(
            x,
            acc,
            width * 0.9,
            color=cmap(k % 10),
            label=model,
            yerr=np.nan_to_num(np.vstack([acc - low, high - acc])),
            capsize=2,
            error_kw={"linewidth": 0.8},
        )
        ref = m["clean_accuracy"].iloc[0] if reference == "clean" else m["accuracy"].get(reference, np.nan)
        if np.isfinite(ref):
            ax.axhline(
                100 * ref,
                color=cmap(k % 10),
                linestyle="--",
                linewidth=0.9,
                label=f"{model}: {reference if reference == 'clean' else f'{reference} frames'}",
            )
    ax.set_xticks(np.arange(len(params)), [str(p) for p in params])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    ax.grid(alpha=0.3, axis="y")
    ax.set_title(title, fontsize=10)
    _legend_below(ax, fig)
    return save(fig, stem)


def budget_figure(table: pd.DataFrame, stem: Path) -> list[Path]:
    return _categorical(
        table, "frame_budget", [1, 4, 8, 16, "default"], stem, "Frame budget", "frames shown", HEADLINE_BUDGET
    )


def position_figure(table: pd.DataFrame, stem: Path) -> list[Path]:
    return _categorical(
        table,
        "key_frame",
        ["first", "middle", "last"],
        stem,
        "Key-frame position",
        "position of the key frame",
        "clean",
    )


# --- assembly -----------------------------------------------------------------------------------


def _family_tables(table: pd.DataFrame, holm_families: str) -> list[Table]:
    """One table per probe family in the logs."""
    found = []
    for family in PROBE_FAMILIES:
        rows = table[table["family"] == family]
        if len(rows):
            caption = (
                f"{FAMILY_TITLES[family]}. Accuracy with 95% bootstrap CI and drop from clean on the items "
                "the probe applied to, invalid answers left out; McNemar vs clean (invalid answers wrong), "
                f"Holm-adjusted within the family (a named option's within its family's options), "
                f"{holm_scope(holm_families)} (* p<.05, ** p<.01)"
            )
            shown, links = family_table(rows)
            found.append(Table(f"probes_{family}", caption, shown, rows, links))
    return found


def _figures(table: pd.DataFrame, metrics: pd.DataFrame, drawn: bool) -> tuple[list[Figure], list[str]]:
    """The desync, frame-budget and key-frame figures the logs allow (unless not ``drawn``), and
    a note for each other one."""
    found: list[Figure] = []
    notes = []
    for name, draw, family, caption in (
        (
            "probe_desync",
            functools.partial(desync_figure, table, metrics),
            "desync",
            "Accuracy (%) against the audio shift (s; + = audio later, 0 = clean), one line per model with "
            "95% bootstrap intervals; the legend gives each model's slope on |shift| (pp per second, signed).",
        ),
        (
            "probe_frame_budget",
            functools.partial(budget_figure, table),
            "frame_budget",
            "Accuracy (%) per frame budget, one bar per model with 95% bootstrap intervals; dashed: the "
            f"model's accuracy at the headline budget ({HEADLINE_BUDGET} frames).",
        ),
        (
            "probe_key_frame",
            functools.partial(position_figure, table),
            "key_frame",
            "Accuracy (%) with the key frame first, middle or last, one bar per model with 95% bootstrap "
            "intervals; dashed: the model's clean accuracy.",
        ),
    ):
        if not table["family"].eq(family).any():
            notes.append(f"figure {name} not drawn: no condition of its probe family in the logs")
        elif not drawn:
            notes.append(f"figure {name} not drawn: figures turned off (--no-figures)")
        else:
            found.append(Figure(name, draw, caption))
    return found, notes


def probes_section(
    numbers: Numbers,
    trials: pd.DataFrame,
    info: dict,
    *,
    b: int,
    seed: int,
    trust_reading: str = "donor_gold",
    confidence_values=CONFIDENCE_VALUES,
    figures: bool = True,
) -> Section:
    """Every probe table and figure the logs allow, and report.json's ``probes``; an empty
    section when the logs hold no probe condition."""
    table = probe_conditions(numbers.summary, numbers.comparisons, numbers.not_applicable, info, trials)
    if table.empty:
        return Section()
    tables = _family_tables(table, numbers.holm_families)
    notes: list[str] = []
    metrics = family_metrics(table)
    trust = trust_bias(trials, info, reading=trust_reading, b=b, seed=seed)
    ece = probe_calibration(trials, info, values=confidence_values)
    shown, raw = summary_table(metrics, trust, ece)
    tables.append(
        Table(
            "probes_summary",
            "Mechanism probes (Table 17): trust bias T_m over all donor tiers, temporal drop, desync "
            "slope of accuracy on |shift|, budget gap (largest loss vs 8 frames), position gap "
            "(max − min), mean ECE over the probe conditions, distractor effect (mean)",
            shown,
            raw,
            trial_links(shown, summary_links(table, ece, info, trust_reading)),
        )
    )
    if len(trust):
        shown, links = trust_table(trust, info)
        tables.append(
            Table(
                "probes_trust_bias",
                f"Trust bias T_m (G.9; reading {trust_reading}): share of determinable mismatch "
                "trials whose answer follows the replaced modality, 95% bootstrap CI over items",
                shown,
                trust,
                links,
            )
        )
    elif (table["family"] == "mismatch").any():
        notes.append(
            "probes: no mismatch trial is determinable (no donor answer among the options), so T_m is not computed"
        )
    if len(ece):
        tables.append(
            Table(
                "probes_calibration",
                "Calibration under each probe (G.11): ECE over the stated confidence levels, "
                "over-confident error rate ρ_oc, mean confidence of right and wrong answers",
                calibration_table(ece),
                ece,
            )
        )
    else:
        notes.append("probes: no stated confidence in the logs, so the calibration table is not written")
    drawings, more = _figures(table, metrics, figures)
    return Section(
        title="Mechanism probes",
        tables=tables,
        figures=drawings,
        notes=notes + more,
        numbers={
            "probes": {
                "conditions": json_records(table),
                "families": json_records(metrics),
                "trust_bias": json_records(trust),
                "calibration": json_records(ece),
                "trust_reading": trust_reading,
            }
        },
    )
