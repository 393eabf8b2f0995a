"""Runs of wrapped lmms-eval tasks (``<base>__<condition>__var<k>``, issue 27) for the viewer: the
report's trial table (:func:`sceval_plugin.report.wrapped_reader.read_wrapped_runs`), each trial's
per-sample line, and what the model was sent, rebuilt by the wrapped task itself.

A cell is one condition of one base task over its variants, named as the tag a user runs
(``worldsense__single_noise_v70``, :func:`~sceval_plugin.report.wrapped_reader.condition_cell`);
a sample is one doc of a base task, ``<base>/<doc key>`` (with ``(doc N)`` where two docs share
the adapter's key: MME's two questions of an image).

Media are not logged by lmms-eval (only ``input``, the text sent). They are regenerated as SCEval's
are: the wrapped task is built by lmms-eval from the run's own task config (``configs`` in its
results JSON: the dataset it read) and the doc of the trial's row is handed to the task's
``doc_to_visual``, i.e. the wrapper's corruption (:mod:`faultline_eval.tasks.wrapped_media`) with
its seeds. Files a video or image task hands over come from, or go to, the wrapped media cache
(``$SCEVAL_CACHE/wrapped_media``); a video is shown as its frames on SCEval's grid with its audio
track. The doc must still be the run's (its key is checked), and the task utils must see the
run's ``HF_HOME`` where they read their media from it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from loguru import logger
from PIL import Image

from faultline_app.viewer.logs import registry_order, verdict_of, without_paths
from faultline_app.viewer.media import Shown
from faultline_app.viewer.site import Section, SiteWriter, slug
from faultline_eval.core import media
from faultline_eval.core.run_logs import results_for, sample_lines
from faultline_eval.tasks import wrap_configs, wrapped_task
from faultline_eval.tasks.wrapped_media import decoded_video
from sceval_plugin.conditions import catalogue
from sceval_plugin.metrics.modality_audit import CONTROLS
from sceval_plugin.report.wrapped_reader import TRIAL_KEY, condition_cell, read_wrapped_runs, split_wrapped_name

__all__ = ["NAME", "AUDIT_PAGE", "Logs", "Renderer", "details", "section", "audit_items", "write_audit_page"]

#: The site's folder and section of wrapped tasks.
NAME = "wrapped"
#: The page of the audit's items (``audit_per_item.csv``), each answer linked to its trial.
AUDIT_PAGE = "audit.html"
AUDIT_ITEMS = "audit_per_item.csv"
#: Fields of a metric's per-doc item holding the task's parsed answer, and its gold, first found wins.
PARSED_FIELDS = ("pred_answer", "parsed_pred", "pred")
GOLD_FIELDS = ("gt_answer", "gt", "answer")


def _field(items: list[Any], names: tuple[str, ...]) -> Any:
    for item in items:
        if isinstance(item, dict):
            for name in names:
                if item.get(name) not in (None, ""):
                    return item[name]
    return None


def _sample_ids(trials: pd.DataFrame) -> list[str]:
    """``<base>/<key>`` per trial; ``(doc N)`` added in a base task where two docs share a key."""
    shared = trials.groupby(["base_task", "sample_id"])["doc_id"].transform("nunique") > 1
    return [
        f"{base}/{key} (doc {doc})" if twice else f"{base}/{key}"
        for base, key, doc, twice in zip(trials["base_task"], trials["sample_id"], trials["doc_id"], shared)
    ]


class Logs:
    """The wrapped runs under some folders, read once: the viewer's rows and each trial's line."""

    def __init__(self, run_dirs):
        self.runs = read_wrapped_runs(run_dirs)
        t = self.runs.trials
        self.keys = list(
            zip(
                t["model"].astype(str),
                [condition_cell(b, c) for b, c in zip(t["base_task"], t["condition_id"])],
                _sample_ids(t),
                t["variant"].astype(int),
            )
        )
        # (model, wrapped task, doc id) -> the viewer's trial key
        self.by_line = dict(zip(zip(t["model"], t["task"], t["doc_id"]), self.keys))
        self.samples = {(b, int(d)): k[2] for b, d, k in zip(t["base_task"], t["doc_id"], self.keys)}

    def rows(self) -> tuple[pd.DataFrame, list[str]]:
        """The viewer's columns (model, cell, sample_id, variant, verdict) and ``score``, the
        task's own per-doc score (the adapter's; none for a corpus metric such as WER)."""
        t = self.runs.trials
        rows = pd.DataFrame(self.keys, columns=["model", "cell", "sample_id", "variant"])
        rows["verdict"] = [verdict_of(c, i, u) for c, i, u in zip(t["correct"], t["invalid"], t["not_applicable"])]
        rows["score"] = t["score"].astype(object).where(t["score"].notna(), None).tolist()
        return rows, list(self.runs.notes)

    def records(self, wanted: set[tuple]) -> tuple[dict, dict]:
        """Per trial key: the table extras of every trial (parsed answer and gold from the
        metric's item, the reply, its log) and, for the ``wanted`` ones, the per-sample line with
        the wrapped task's name and the config it ran with (``configs`` of its results JSON)."""
        extras, records = {}, {}
        for (model, task), path in self.runs.logs.items():
            config = _task_config(path, task)
            dataset = json.dumps([config.get("dataset_path"), config.get("dataset_kwargs")], sort_keys=True)
            for _, line in sample_lines(path):
                entry = line.get(TRIAL_KEY) or {}
                key = self.by_line.get((model, task, entry.get("doc_id")))
                if key is None:
                    continue
                answer, gold = _answer_and_gold(line, config)
                extras[key] = {
                    "answer": answer,
                    "gold": gold,
                    "reply": _reply(line),
                    "run_file": path,
                    "seed_scheme": entry.get("seed_scheme"),
                }
                if key in wanted:  # raw_response: the reply as the answer cards read it (SCEval's field)
                    records[key] = {
                        **line,
                        "task": task,
                        "config": config,
                        "dataset": dataset,
                        "raw_response": _reply(line),
                    }
        return extras, records


def _items(line: dict) -> dict[str, dict]:
    """The per-sample line's metric items that are dicts (the task's ``process_results``)."""
    return {k: v for k, v in line.items() if isinstance(v, dict) and k not in (TRIAL_KEY, "config")}


def _answer_and_gold(line: dict, config: dict) -> tuple[Any, Any]:
    """The task's parsed answer (from its metric item) and the gold: the logged target, unless it
    is the config's ``doc_to_target`` left unrendered (worldsense names a function without
    ``!function``), then the item's."""
    items = list(_items(line).values())
    target = line.get("target")
    if target == config.get("doc_to_target") and isinstance(target, str) and " " not in target and "." in target:
        target = None
    return _field(items, PARSED_FIELDS), _field(items, GOLD_FIELDS) if target is None else target


def _reply(line: dict) -> str:
    reply = line.get("filtered_resps", line.get("resps"))
    while isinstance(reply, list) and reply:
        reply = reply[0]
    return "" if reply is None or reply == [] else str(reply)


def _task_config(samples_file: Path, task: str) -> dict:
    """The wrapped task's config as the run's results JSON logged it (its dataset)."""
    results = results_for(samples_file)
    return dict(_configs(results).get(task) or {}) if results is not None else {}


@functools.cache
def _configs(results: Path) -> dict:
    """``configs`` of a results JSON (read once: every wrapped task of a run shares it)."""
    return json.loads(results.read_text(encoding="utf-8")).get("configs") or {}


def details(record: dict) -> list[tuple[str, object]]:
    """A wrapped trial's answer card: the parsed answer, gold, the task's own score and metric
    items, why it was not scored or applied."""
    trial = record.get(TRIAL_KEY) or {}
    answer, gold = _answer_and_gold(record, record.get("config") or {})
    return [
        ("parsed answer", answer),
        ("gold", gold),
        ("score (the task's per-doc score)", trial.get("score")),
        *((name, "; ".join(f"{k}: {v}" for k, v in item.items())) for name, item in _items(record).items()),
        *((name, value) for name, value in record.items() if _is_metric_value(name, value)),
        ("invalid", trial.get("invalid")),
        ("not applicable", trial.get("not_applicable")),
        ("task", record.get("task")),
        ("doc", record.get("doc_id")),
    ]


#: Per-sample line fields lmms-eval itself writes (not a metric's item).
_LOGGED = frozenset(
    {"doc_id", "target", "filtered_resps", "resps", "token_counts", "doc_hash", "input", "input_media", "arguments"}
)


def _is_metric_value(name: str, value: Any) -> bool:
    """A metric whose per-doc item is a number (lmms-eval's own metrics: clotho_aqa's exact_match)."""
    return name not in _LOGGED and isinstance(value, (int, float)) and not isinstance(value, bool)


class Renderer:
    """What a wrapped trial sent, rebuilt by the wrapped task (see the module docstring); one per
    site: each (task, dataset) is built once."""

    def __init__(self, notes: list[str] | None = None):
        self.notes = [] if notes is None else notes
        self.built: dict[tuple[str, str], Any] = {}
        self._folder: tempfile.TemporaryDirectory | None = None

    def _task(self, name: str, config: dict):
        """lmms-eval's task ``name`` built on the dataset of ``config`` (the run's), and its docs."""
        data = {"dataset_path": config.get("dataset_path"), "dataset_kwargs": config.get("dataset_kwargs") or {}}
        key = (name, json.dumps(data, sort_keys=True))
        if key not in self.built:
            self.built[key] = self._build(name, data)
        found = self.built[key]
        if isinstance(found, Exception):
            raise found
        return found

    def _build(self, name: str, data: dict):
        # heavy: lmms-eval's task machinery and the base task's utils, only for trials shown with media
        from lmms_eval.tasks import TaskManager, get_task_dict

        parsed = split_wrapped_name(name)
        condition = wrap_configs.condition_named(parsed[1]) if parsed else None
        if parsed is None or condition is None:
            return LookupError(f"{name}: not a wrapped task of an installed condition")
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="faultline-view-")
        folder = Path(self._folder.name) / name
        folder.mkdir(exist_ok=True)
        data = data if data["dataset_path"] else None
        (folder / f"{name}.yaml").write_text(wrap_configs.task_yaml(parsed[0], condition, parsed[2], data), "utf-8")
        quiet = ("lmms_eval", "faultline_eval.tasks")  # their build logs (DEBUG, INFO) are the run's, not the site's
        for module in quiet:
            logger.disable(module)
        try:
            manager = TaskManager("WARNING", include_path=[str(folder)], include_defaults=False)
            task = get_task_dict([name], manager)[name]
            docs = task.test_docs() if task.has_test_docs() else task.validation_docs()
        except (Exception, SystemExit) as exc:  # a base's utils may sys.exit on a missing file (videomme)
            return LookupError(f"{name}: the task could not be built on the run's dataset: {without_paths(exc)}")
        finally:
            for module in quiet:
                logger.enable(module)
        return task, docs

    def _doc(self, name: str, record: dict):
        task, docs = self._task(name, record.get("config") or {})
        trial = record.get(TRIAL_KEY) or {}
        doc_id = int(trial.get("doc_id", record.get("doc_id", -1)))
        if not 0 <= doc_id < len(docs):
            raise LookupError(
                f"{name}: doc {doc_id} is not in the dataset ({len(docs)} docs): it changed since the run"
            )
        doc = docs[doc_id]
        key = wrapped_task.doc_key(wrapped_task.wrapped(name), doc)
        if key != str(trial.get("sample_id")):
            raise LookupError(
                f"{name}: doc {doc_id} of the dataset is {key!r}, the run's trial {trial.get('sample_id')!r}: the "
                "dataset changed since the run"
            )
        return task, doc

    def _shown(self, name: str, record: dict, text: str | None) -> Shown:
        task, doc = self._doc(name, record)
        try:
            visuals = list(task.doc_to_visual(doc) or [])
            sent = text if isinstance(text, str) else str(task.doc_to_text(doc))
        except SystemExit as exc:
            raise LookupError(
                f"{name}: the task's doc_to_visual exited ({exc.code}): a media file is missing"
            ) from None
        shown = Shown(text=sent)
        for visual in visuals:
            _add(shown, visual)
        if not visuals:
            shown.notes.append("no media sent")
        return shown

    def trial(self, record: dict) -> Shown:
        shown = self._shown(record["task"], record, record.get("input"))
        trial = record.get(TRIAL_KEY) or {}
        if trial.get("not_applicable"):
            shown.notes.append(f"not applicable: {trial['not_applicable']}")
        return shown

    def clean(self, record: dict) -> Shown:
        base = split_wrapped_name(record["task"])[0]
        return self._shown(f"{base}__clean__var0", record, None)

    def describe(self, cell: str) -> str:
        try:
            return catalogue().get(cell.rsplit("__", 1)[1]).description
        except (LookupError, IndexError):
            return ""

    def order(self, cells: list[str]) -> list[str]:
        """By base task, then each base's conditions in the catalogue's order."""
        names = catalogue().names()
        by_base: dict[str, list[str]] = {}
        for cell in cells:
            by_base.setdefault(cell.rsplit("__", 1)[0], []).append(cell)
        ordered = []
        for base in sorted(by_base):
            ranked = registry_order([c.rsplit("__", 1)[1] for c in by_base[base]], names)
            ordered += [condition_cell(base, c) for c in ranked]
        return ordered

    def name(self, cell: str) -> str:
        return cell

    def close(self) -> None:
        if self._folder is not None:
            with contextlib.suppress(OSError):
                self._folder.cleanup()


def _add(shown: Shown, visual: Any) -> None:
    """One of what ``doc_to_visual`` returned (the wrapper's types) into ``shown``: pictures as
    images, a frame list and a video's frames (on SCEval's grid) as frames, audio at 16 kHz."""
    n = len(shown.images)
    if isinstance(visual, Image.Image):
        shown.images.append((f"image {n + 1}", np.asarray(visual.convert("RGB"))))
    elif isinstance(visual, (list, tuple)):
        shown.images += [(f"frame {i + 1}", np.asarray(f.convert("RGB"))) for i, f in enumerate(visual)]
    elif isinstance(visual, dict) and "array" in visual:  # the wrapper's audio: mono, 16 kHz
        wave = np.asarray(visual["array"], dtype=np.float32)
        _audio(shown, media.resample_audio(wave, int(visual["sampling_rate"])))
    elif isinstance(visual, str):
        suffix = Path(visual).suffix.lower()
        if suffix in media.IMAGE_SUFFIXES:
            shown.images.append((f"image {n + 1}", media.read_image(visual)[0]))
        elif suffix in media.AUDIO_SUFFIXES:
            _audio(shown, media.read_audio(visual)[0])
        else:
            frames, track = decoded_video(visual)
            shown.images += [(f"video frame {i + 1}", frame) for i, frame in enumerate(frames)]
            if track is not None:
                _audio(shown, track)
            shown.notes.append(f"video file shown as {len(frames)} frame(s) on SCEval's grid")
    else:
        raise ValueError(f"a media item of type {type(visual).__name__} the viewer cannot show")


def _audio(shown: Shown, wave: np.ndarray) -> None:
    if shown.audio is None:
        shown.audio = np.asarray(wave, dtype=np.float32)
    else:
        shown.notes.append("a further audio item was sent (not shown: one clip per trial)")


def section(logs: Logs, report_dir: Path | None) -> Section:
    """The site's section of the wrapped runs ``logs`` (with the report in ``report_dir``: its
    task-metric tables and audit shares first)."""
    rows, notes = logs.rows()
    return Section(
        NAME,
        "Wrapped lmms-eval tasks",
        "condition",
        "variant",
        rows,
        logs.records,
        Renderer(notes),
        details,
        notes,
        report_dir,
        headline=("task_metrics_", "audit_shares"),
    )


def audit_items(report_dir: Path | None) -> pd.DataFrame | None:
    """The report's ``audit_per_item.csv`` (one row per base task, model and doc: answerable
    under clean and each control), None when the report has none."""
    path = None if report_dir is None else report_dir / AUDIT_ITEMS
    return pd.read_csv(path) if path is not None and path.is_file() else None


def write_audit_page(writer: SiteWriter, s: Section, logs: Logs) -> bool:
    """``<section>/audit.html``: the rows of ``audit_per_item.csv``, each item's answerable mark
    (1 / 0) under clean and each control linked to that trial (its section of the sample page,
    or for a trial shown without media its row of the condition's table). After
    :meth:`SiteWriter.write_section` (which gives each trial its link). False: no audit."""
    items = audit_items(s.report_dir)
    if items is None:
        return False
    rows = writer.rows[s.name]
    link = {
        (m, c, x): v
        for m, c, x, var, v in zip(rows["model"], rows["cell"], rows["sample_id"], rows["variant"], rows["link"])
        if var == 0 and isinstance(v, str)
    }
    pages = {x: v.split("#", 1)[0].replace("../samples/", "samples/", 1) for (_, _, x), v in link.items()}
    conditions = [c for c in ("clean", *CONTROLS) if c in items.columns]
    head = ["base task", "model", "sample", "doc", *conditions, "answerable if", "blank cells"]
    shown = []
    for item in items.to_dict("records"):
        base, model = str(item["base_task"]), str(item["model"])
        sample = logs.samples.get((base, int(item["doc_id"])), f"{base}/{item['sample_id']}")
        marks = []
        for condition in conditions:
            value = item[condition]
            if pd.isna(value):
                marks.append((None, None, None))
                continue
            cell = condition_cell(base, condition)
            target = link.get((model, cell, sample))
            target = (
                target.replace("../samples/", "samples/", 1)
                if target
                else f"cells/{slug(cell)}.html#sample_id={_quoted(sample)}&model={_quoted(model)}"
            )
            marks.append((int(value), target, "answerable" if value == 1 else "not answerable"))
        shown.append(
            {
                "base": base,
                "model": model,
                "sample": sample,
                "sample_href": pages.get(sample),
                "doc": item["doc_id"],
                "marks": marks,
                "rule": f"{item.get('kind', '')}: {item.get('answerable_if', '')}" if item.get("kind") else "",
                "blank": item.get("blank") or "",
            }
        )
    writer.render(
        writer.out / s.name / AUDIT_PAGE,
        "audit.html",
        1,
        title=f"{s.title}: audit items",
        s=s,
        source=AUDIT_ITEMS,
        head=head,
        rows=shown,
    )
    return True


def _quoted(text: str) -> str:
    from urllib.parse import quote

    return quote("=" + str(text), safe="")
