"""SCEval logs for the viewer: the report's trial table, the full records, and each trial's
media regenerated from (item, condition, variant) by the task's own renderer.

The media of a trial are those :mod:`faultline_eval.tasks.sceval_task` built when it ran:
``trial_for`` on a document rebuilt from the record (the item from the logged data source,
the probe's donor, the released variant), so third-party operators, conditions and prompt
templates show exactly as they were sent.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd

from faultline_app.viewer.logs import SourceCache, label_for, public_spec, registry_order, verdict_of
from faultline_app.viewer.media import Shown
from faultline_eval.core.model_names import ModelNames
from faultline_eval.tasks import sceval_task
from sceval_plugin.conditions import catalogue
from sceval_plugin.data.sources import current_spec, load_source
from sceval_plugin.operators import registry as operator_registry
from sceval_plugin.render import media_identity
from sceval_plugin.report.reader import read_record, read_runs, sample_files

KEY = ["model", "cell", "sample_id", "variant"]


def read_rows(run_dirs) -> tuple[pd.DataFrame, list[str]]:
    """The report's trial table (:func:`sceval_plugin.report.reader.read_runs`) in the viewer's
    columns: model, cell (the condition), sample_id, variant, verdict, answer, confidence, and what
    report numbers select trials by: the item's ``source`` (Table 11's split) and ``donor_answer``,
    the item option a mismatch probe's donor gold maps to (empty: the trial is undetermined for T_m)."""
    trials, notes = read_runs(run_dirs, progress=False)

    def optional(column: str) -> pd.Series:
        values = trials[column] if column in trials else pd.Series(None, index=trials.index)
        return values.astype(object).where(values.notna(), None)

    rows = pd.DataFrame(
        {
            "model": trials["model"].astype(str),
            "cell": trials["condition_id"].astype(str),
            "sample_id": trials["sample_id"].astype(str),
            "variant": trials["variant"].astype(int),
            "verdict": [
                verdict_of(c, i, u) for c, i, u in zip(trials["correct"], trials["invalid"], trials["not_applicable"])
            ],
            "confidence": optional("confidence"),
            "source": optional("source"),
            "donor_answer": optional("follows_donor"),
        }
    )
    return rows, notes


def read_records(run_dirs, wanted: set[tuple]) -> tuple[dict[tuple, dict], dict[tuple, dict]]:
    """Per trial key: the table extras of every trial (latency, shown answer, gold; the reply,
    per-sample log and seed scheme, for the search index and run panels) and the full record of
    the ``wanted`` ones. Models are labelled as the report labels them."""
    extras, records = {}, {}
    texts: set[tuple[str, bool]] = set()  # (sample, clean) whose text (the prompt lmms-eval logged) is kept
    names = ModelNames.under(run_dirs)
    for path in sample_files(run_dirs):
        label, name = None, path.name
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            record = read_record(line, f"{name}:{number}")
            label = label or label_for(names, path, record.get("model"))
            key = (label, record["condition_id"], str(record["sample_id"]), int(record["variant"]))
            extras[key] = {
                "answer": record.get("parsed_answer"),
                "gold": record.get("gold_key"),
                "latency_s": record.get("latency_s"),
                "reply": record.get("raw_response"),
                "run_file": path,
                "seed_scheme": record.get("seed_scheme"),
            }
            # every sample's text for the site's search, pages or not: the clean trial's (a text
            # corruption drops words), else the first trial's
            if (key[2], key[1] == "clean") not in texts:
                texts.update({(key[2], False), (key[2], key[1] == "clean")})
                extras[key]["text"] = json.loads(line).get("input")
            if key in wanted:
                records[key] = record
    return extras, records


class Renderer:
    """Regenerates what a trial showed from its record; one per site (sources are cached)."""

    def __init__(self, source: str | None = None, notes: list[str] | None = None):
        self.task = sceval_task
        self.sources = SourceCache(load_source, source, current_spec, notes)
        self.by_id: dict[int, dict] = {}  # id(source) -> sample id -> item
        self.item_json: dict[int, str] = {}  # id(item) -> the item as a document holds it (items live in the sources)
        # the frames and clip rendered for the current (data source, sample), by media_identity: a
        # condition whose media another one already rendered (a text condition sends the clean
        # frames; a joint one its single operators' output) renders its text alone
        self.rendered: tuple[tuple, dict] = ((), {})

    def _items(self, record: dict):
        source = self.sources.get(record["dataset"])
        if id(source) not in self.by_id:
            self.by_id[id(source)] = {it.sample_id: it for it in source.items}
        return source, self.by_id[id(source)]

    def _doc(self, record: dict, condition_id: str, variant: int, released: bool) -> dict:
        source, items = self._items(record)
        sample = str(record["sample_id"])
        if released:
            item = next(
                (
                    r.item
                    for r in source.released or ()
                    if r.item.sample_id == sample and r.condition_id == condition_id and r.variant == variant
                ),
                None,
            )
        else:
            item = items.get(sample)
        if item is None:
            raise LookupError(
                f"sample {sample!r} ({condition_id}, variant {variant}) is not in the data source "
                f"{public_spec(record['dataset'])}"
            )
        donor_id = (record.get("probe") or {}).get("donor")
        donor = items.get(donor_id) if donor_id else None
        return {
            "condition_id": condition_id,
            "variant": variant,
            "released": released,
            "item": self._json(item),
            "donor": self._json(donor) if donor else "",
        }

    def _json(self, item) -> str:
        if id(item) not in self.item_json:
            self.item_json[id(item)] = self.task._item_json(item)
        return self.item_json[id(item)]

    def _trial(self, doc: dict, where: tuple):
        """``trial_for(doc)``, its media taken from an earlier render of the same sample (``where``)
        when :func:`media_identity` says they are the same (never for a released variant, whose
        item is the release's own, or a probe)."""
        if self.rendered[0] != where:
            self.rendered = (where, {})
        memo = self.rendered[1]
        condition = catalogue().get(doc["condition_id"])
        same = (
            () if doc["released"] else tuple(media_identity(condition, m, doc["variant"]) for m in ("vision", "audio"))
        )
        if same and None not in same and all(s in memo for s in same):
            condition, trial = self.task.trial_for(doc, with_media=False)
            return condition, replace(trial, frames=memo[same[0]], audio=memo[same[1]])
        condition, trial = self.task.trial_for(doc)
        if same and None not in same:
            for identity, array in zip(same, (trial.frames, trial.audio)):
                if array is not None:
                    array.flags.writeable = False  # shared by the trials that sent it
                memo[identity] = array
        return condition, trial

    def _shown(self, doc: dict, where: tuple) -> Shown:
        condition, trial = self._trial(doc, where)
        system, user = self.task._prompt(condition, trial)
        images = []
        if trial.frames is not None:
            times = trial.frame_times or ()
            for i, frame in enumerate(trial.frames):
                at = f" at {times[i]:.2f} s" if i < len(times) else ""
                images.append((f"{'image' if trial.visual_kind == 'image' else 'frame ' + str(i + 1)}{at}", frame))
        notes = [f"donor item: {trial.donor_id}"] if trial.donor_id else []
        if trial.not_applicable:
            notes.append(f"not applicable: {trial.not_applicable}")
        if trial.frames is None:
            notes.append("no images shown")
        if trial.audio is None:
            notes.append("no audio shown")
        return Shown(images, None if trial.audio is None else np.asarray(trial.audio), user, notes, system)

    def trial(self, record: dict) -> Shown:
        doc = self._doc(record, record["condition_id"], int(record["variant"]), bool(record.get("released_variant")))
        return self._shown(doc, (record["dataset"], str(record["sample_id"])))

    def clean(self, record: dict) -> Shown:
        return self._shown(self._doc(record, "clean", 0, False), (record["dataset"], str(record["sample_id"])))

    def describe(self, cell: str) -> str:
        """What the condition does: its catalogue description, or, for corruptions, each operator's
        own description from its registry with its parameter at this severity."""
        try:
            condition = catalogue().get(cell)
        except LookupError:
            return ""
        parts = [condition.description] if condition.description else []
        for c in getattr(condition, "corruptions", ()):
            try:
                spec = operator_registry().get(c.operator)
            except LookupError:
                parts.append(f"{c.modality} {c.operator} at severity {c.severity}")
                continue
            parts.append(
                f"{c.modality} {c.operator} at severity {c.severity}: {spec.description.rstrip('.')} "
                f"({spec.table.parameter} {spec.parameter(c.severity):g})"
            )
        return "; ".join(parts)

    def order(self, cells: list[str]) -> list[str]:
        """``cells`` in the catalogue's order (clean first, then the paper's blocks); unknown ones last."""
        return registry_order(cells, catalogue().names())

    def name(self, cell: str) -> str:
        return cell
