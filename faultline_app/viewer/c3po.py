"""C3PO logs for the viewer: the report's trial table (re-graded with a verdicts file when
given), the full records, and each item's media as the task sent them (C3PO does not corrupt:
a trial shows the item's own frames, picture and audio)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from c3po_plugin import eval_prompt as prompts
from c3po_plugin.data.sources import current_spec, load_source
from c3po_plugin.report.reader import RECORD_KEY, read_runs, sample_files
from c3po_plugin.report.verdicts import apply_verdicts, read_verdicts
from c3po_plugin.templates import registry
from faultline_app.viewer.logs import SourceCache, label_for, public_spec, registry_order, verdict_of
from faultline_app.viewer.media import Shown
from faultline_eval.core.model_names import ModelNames
from faultline_eval.core.run_logs import record_from_line


def read_rows(run_dirs, verdicts: str | Path | None = None) -> tuple[pd.DataFrame, list[str]]:
    """The report's trial table in the viewer's columns (cell = template id, variant = run).

    ``c3po report`` counts each folder's runs of a model as repeated runs of it (its trial key is
    model, folder, sample, run), so two folders' run 0 are two trials: the viewer's run numbers a
    model's (folder, run) pairs 0, 1, ... in folder order, and keeps ``folder`` and ``run`` (not
    shown) to find each trial's record."""
    trials, notes = read_runs(run_dirs)
    if verdicts is not None:
        trials, more = apply_verdicts(trials, read_verdicts(verdicts), source=Path(verdicts).name)
        notes += more
    verdict = [
        ("ungradable: judge error" if e and (c != c) and i is None else verdict_of(c, i))
        for c, i, e in zip(
            trials["correct"], trials["invalid"].where(trials["invalid"].notna(), None), trials["judge_error"]
        )
    ]
    runs = trials[["model", "folder", "run"]].drop_duplicates().sort_values(["model", "folder", "run"])
    number = dict(zip(map(tuple, runs.to_numpy().tolist()), runs.groupby("model").cumcount()))
    rows = pd.DataFrame(
        {
            "model": trials["model"].astype(str),
            "cell": trials["template_id"].astype(str),
            "sample_id": trials["sample_id"].astype(str),
            "variant": [int(number[k]) for k in zip(trials["model"], trials["folder"], trials["run"])],
            "verdict": verdict,
            "answer": trials["prediction"].where(trials["prediction"].notna(), None),
            "gold": trials["gold"],
            "judge": trials["judge_id"].where(trials["judge_id"].notna(), None),
            # a wrong answer without a mode is "other", as the report counts it (its failure links filter on it)
            "failure_mode": [
                m if isinstance(m, str) else "other" if v == "wrong" else None
                for m, v in zip(trials["failure_mode"], verdict)
            ],
            # how the grade was reached, as the report counts judge decisions
            "decided_by": [
                "exact match" if x else "judge" if j else None for x, j in zip(trials["exact"], trials["judged"])
            ],
            "folder": trials["folder"],
            "run": trials["run"].astype(int),
        }
    )
    return rows, notes


def _verdict_lines(verdicts: str | Path | None) -> dict[tuple, list[dict]]:
    """The verdict file's lines by (model, sample, run); a line naming a ``folder`` applies there only."""
    lines: dict[tuple, list[dict]] = {}
    if verdicts is not None:
        for text in Path(verdicts).read_text(encoding="utf-8").splitlines():
            if text.strip():
                v = json.loads(text)
                lines.setdefault((str(v.get("model")), str(v.get("sample_id")), int(v.get("run", 0))), []).append(v)
    return lines


def read_records(run_dirs, rows: pd.DataFrame, wanted: set[tuple], verdicts: str | Path | None = None):
    """Per trial key (model, template, sample, the viewer's run of :func:`read_rows` ``rows``):
    latency, reply and per-sample log of every trial, and the full record of the ``wanted`` ones, with the verdict file's
    line for that trial (``regrade``) when one is given."""
    number = dict(zip(zip(rows["model"], rows["folder"], rows["run"]), rows["variant"]))
    lines = _verdict_lines(verdicts)
    extras, records = {}, {}
    texts: set[str] = set()
    names = ModelNames.under(run_dirs)
    for path in sample_files(run_dirs):
        label, folder = None, str(path.parent)
        for line_number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not text.strip():
                continue
            record = record_from_line(text, RECORD_KEY, f"{path.name}:{line_number}")
            label = label or label_for(names, path, record.get("model"))
            run = int(record["run"])
            variant = number.get((label, folder, run))
            if variant is None:  # not in the report's trial table (never expected: the same logs)
                continue
            key = (label, record["template_id"], str(record["sample_id"]), int(variant))
            extras[key] = {"latency_s": record.get("latency_s"), "reply": record.get("raw_response"), "run_file": path}
            if key[2] not in texts:  # every sample's text for the site's search, pages or not
                texts.add(key[2])
                extras[key]["text"] = json.loads(text).get("input")
            if key in wanted:
                candidates = lines.get((label, key[2], run)) or lines.get((str(record.get("model")), key[2], run)) or []
                regrade = next(
                    (
                        v
                        for v in reversed(candidates)
                        if not v.get("folder") or Path(v["folder"]).resolve() == Path(folder).resolve()
                    ),
                    None,
                )
                records[key] = {**record, "regrade": regrade}
    return extras, records


class Renderer:
    """The media a C3PO trial was sent, from the logged data source."""

    def __init__(self, source: str | None = None, notes: list[str] | None = None):
        self.prompts = prompts
        self.sources = SourceCache(load_source, source, current_spec, notes)

    def trial(self, record: dict) -> Shown:
        source = self.sources.get(record["dataset"])
        item = next((it for it in source.items if it.sample_id == str(record["sample_id"])), None)
        if item is None:
            raise LookupError(
                f"sample {record['sample_id']!r} is not in the data source {public_spec(record['dataset'])}"
            )
        images = []
        if item.video:
            times = item.frame_times() or ()
            images += [
                (f"video frame {i + 1}" + (f" at {times[i]:.2f} s" if i < len(times) else ""), f)
                for i, f in enumerate(item.frames())
            ]
        if item.image:
            images.append(("image", item.picture()))
        audio = np.asarray(item.waveform(), dtype=np.float32) if item.audio else None
        prompt = self.prompts.build(item.question, item.context)
        return Shown(images, audio, prompt.user, system=prompt.system)

    clean = None  # C3PO trials are not corrupted: what was sent is the clean item

    def describe(self, cell: str) -> str:
        try:
            t = registry().get(cell)
            return f"{t.name} ({t.category}, tier {t.tier})"
        except LookupError:
            return ""

    def order(self, cells: list[str]) -> list[str]:
        """``cells`` (template ids) in the paper's order (IC01..IC11, then CC01..CC14); unknown ones last."""
        return registry_order(cells, registry().names())

    def name(self, cell: str) -> str:
        """A template's id and name (``IC01 AttributeComposition``); an unknown id as it is."""
        template = registry().find(cell)
        return f"{cell} {template.name}" if template is not None else cell
