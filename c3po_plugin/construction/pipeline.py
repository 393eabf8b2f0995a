"""The whole build in order, and the table of what each stage did per template.

:func:`run_all` calls the stage functions one after another — ``select`` → ``generate`` →
``classify`` → ``synthesize`` → ``audit`` → ``sample`` → ``export`` — each resumable, so running
it again continues a killed build and re-pays nothing finished. :func:`summary` reads the
ledgers and the usage files back into a per-template count table and a per-stage cost table.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from c3po_plugin.construction import settings as build_settings
from c3po_plugin.construction.assemble import SAMPLE_STAGES, sample_fates, template_id_of
from c3po_plugin.construction.ledger import Ledger, failing_stages, format_reports, stage_report
from c3po_plugin.construction.select import POOL
from c3po_plugin.construction.specs import resolve
from faultline_eval.core.preflight import PreflightError, check_path

if TYPE_CHECKING:  # loaded by name (stage_function), declared here so that lint-imports checks them
    from c3po_plugin.construction import audit, classify, export, generate, sample, select, synthesize  # noqa: F401

LLM_STAGES = ("generate", "classify", "audit")


#: The module of each stage, imported when the stage first runs (generate, classify and audit load the
#: model clients); the imports under TYPE_CHECKING above declare them to lint-imports.
STAGE_MODULES = {
    "select": "c3po_plugin.construction.select",
    "generate": "c3po_plugin.construction.generate",
    "classify": "c3po_plugin.construction.classify",
    "synthesize": "c3po_plugin.construction.synthesize",
    "audit": "c3po_plugin.construction.audit",
    "sample": "c3po_plugin.construction.sample",
    "export": "c3po_plugin.construction.export",
}
STAGES = tuple(STAGE_MODULES)


def stage_function(stage: str):
    """``run_<stage>`` of the stage's module (:data:`STAGE_MODULES`), imported when first needed."""
    name = STAGE_MODULES[stage]
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        raise RuntimeError(f"c3po build: the {stage} stage ({name}) is not installed") from exc
    return getattr(module, f"run_{stage}")


def _given(**options: Any) -> dict:
    return {k: v for k, v in options.items() if v is not None}


def run_all(
    build_dir: str | Path,
    *,
    pool: str | Path | None = None,
    templates: list[str] | None = None,
    generator: str | None = None,
    classifier: str | None = None,
    auditor: str | None = None,
    fit_threshold: int | None = None,
    concurrency: int | None = None,
    per_template: tuple[int, int] | None = None,
    seed: int | None = None,
    speech: str | None = None,
    sfx: str | None = None,
    image: str | None = None,
    per_bucket: int | None = None,
    annotators: int | None = None,
    out: str | Path | None = None,
    push_to_hub: str | None = None,
    model_instance: Any = None,
) -> dict[str, dict]:
    """Every stage on ``build_dir``; returns ``{stage: counts}``. Without ``pool`` (a resumed
    build), ``select`` runs again with the pool, ``per_template`` and ``seed`` that
    ``settings.json`` kept, so its failed items are retried like every other stage's; ``pool`` is
    needed when the build has neither. ``model_instance`` (an lmms-eval model object) serves every
    LLM stage, for tests and notebooks."""
    build_dir = Path(build_dir)
    stored = build_settings.load(build_dir)
    pool_name = None
    if pool is None and stored.get("pool"):
        pool, pool_name = stored.get("pool_path") or stored["pool"], stored["pool"]
        try:
            check_path(pool, f"--pool (kept in {build_settings.path(build_dir)})", POOL)
        except PreflightError as exc:
            raise PreflightError(f"{exc}; pass --pool with where the pool is now") from None
        per_template = per_template or _pair(stored.get("per_template"))
        seed = stored.get("seed") if seed is None else seed
    elif pool is None and not (build_dir / "ledger" / "select.jsonl").is_file():
        raise PreflightError(f"--pool: {build_dir} has no select ledger yet; pass the base media pool with --pool")
    # what the build was started with, for the record and for stages run later on their own
    build_settings.resolve(
        build_dir,
        **_given(
            templates=templates,
            classifier=classifier,
            auditor=auditor,
            speech=speech,
            sfx=sfx,
            image=image,
            per_bucket=per_bucket,
            annotators=annotators,
        ),
    )
    results: dict[str, dict] = {}
    if pool is not None:
        results["select"] = stage_function("select")(
            build_dir,
            pool=pool,
            templates=templates,
            **_given(per_template=per_template, seed=seed, pool_name=pool_name),
        )
    results["generate"] = stage_function("generate")(
        build_dir,
        templates=templates,
        model_instance=model_instance,
        **_given(generator=generator, fit_threshold=fit_threshold, concurrency=concurrency),
    )
    results["classify"] = stage_function("classify")(
        build_dir,
        templates=templates,
        model_instance=model_instance,
        **_given(classifier=classifier, concurrency=concurrency),
    )
    results["synthesize"] = stage_function("synthesize")(
        build_dir, templates=templates, **_given(speech=speech, sfx=sfx, image=image)
    )
    results["audit"] = stage_function("audit")(
        build_dir,
        templates=templates,
        model_instance=model_instance,
        **_given(auditor=auditor, concurrency=concurrency),
    )
    results["sample"] = stage_function("sample")(
        build_dir, **_given(per_bucket=per_bucket, annotators=annotators, seed=seed)
    )
    results["export"] = stage_function("export")(build_dir, **_given(out=out, push_to_hub=push_to_hub))
    print(summary(build_dir, templates))
    return results


def _pair(value: Any) -> tuple[int, int] | None:
    """``per_template`` as ``settings.json`` keeps it (a JSON list) back as ``(min, max)``."""
    return None if value is None else (int(value[0]), int(value[1]))


def stage_reports(build_dir: str | Path, stages: tuple[str, ...] = STAGES, templates: list[str] | None = None) -> list:
    """A :class:`~c3po_plugin.construction.ledger.StageReport` per stage that has a ledger, over these
    templates' entries; ``waiting`` counts the samples whose fate (:func:`~c3po_plugin.construction.assemble.sample_fates`)
    is open at an earlier stage (keyed by that stage) or that have no entry here yet (keyed by this stage)."""
    build_dir = Path(build_dir)
    wanted = None if templates is None else {s.template_id for s in resolve(templates)[0]}

    def in_scope(entry: dict) -> bool:
        key = entry["key"]
        template = key.split("/", 1)[0] if "/" in key else template_id_of(key, entry.get("data"))
        return wanted is None or template in wanted

    fates = sample_fates(build_dir, templates) if (build_dir / "ledger" / "select.jsonl").is_file() else {}
    reports = []
    for stage in stages:
        if not (build_dir / "ledger" / f"{stage}.jsonl").is_file():
            continue
        waiting: dict[str, int] = {}
        if stage in SAMPLE_STAGES:
            here = SAMPLE_STAGES.index(stage)
            for _, verdict in fates.values():  # open upstream, or not reached here (a failed one is counted failed)
                at = SAMPLE_STAGES.index(verdict.stage) if verdict.waiting else len(SAMPLE_STAGES)
                if at < here or (at == here and verdict.status == "missing"):
                    waiting[verdict.stage] = waiting.get(verdict.stage, 0) + 1
        reports.append(stage_report(build_dir, stage, in_scope, waiting))
    return reports


def finish(build_dir: str | Path, stages: tuple[str, ...], templates: list[str] | None, max_failure_rate: float) -> int:
    """Print the one-screen summary of ``stages`` and return the exit status: 1 when a stage's
    items all failed or its failure rate is above ``max_failure_rate`` (each reason printed)."""
    reports = stage_reports(build_dir, stages, templates)
    print("\n" + format_reports(reports))
    problems = failing_stages(reports, max_failure_rate)
    for why in problems:
        print(f"c3po build: FAILED {why}; rerun the same command to retry the failed items")
    return 1 if problems else 0


def _table(rows: list[tuple]) -> str:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()
        for row in rows
    )


def template_counts(build_dir: str | Path, templates: list[str] | None = None) -> list[dict]:
    """Per template: selected candidates, then ok / rejected / failed of each later stage."""
    build_dir = Path(build_dir)
    specs, _ = resolve(templates)
    ledgers = {
        stage: list(Ledger(build_dir, stage).entries())
        for stage in STAGES[:5]
        if (build_dir / "ledger" / f"{stage}.jsonl").is_file()
    }
    rows = []
    for spec in specs:
        row = {
            "template": spec.template_id,
            "paper_id": spec.paper_id,
            "candidates": sum(
                1
                for e in ledgers.get("select", [])
                if e["status"] == "ok" and (e.get("data") or {}).get("template_id") == spec.template_id
            ),
        }
        for stage in STAGES[1:5]:
            mine = [e for e in ledgers.get(stage, []) if e["key"].rsplit("_", 1)[0] == spec.paper_id]
            for status in ("ok", "rejected", "failed"):
                row[f"{stage}_{status}"] = sum(1 for e in mine if e["status"] == status)
        rows.append(row)
    return rows


def summary(build_dir: str | Path, templates: list[str] | None = None) -> str:
    """The per-template counts (candidates, then ok/rejected/failed per stage), the cost of
    each LLM stage (requests sent and restored, retries, tokens, mean latency) and the warnings
    about its models (:func:`~c3po_plugin.construction.settings.model_warnings`)."""
    import json

    rows = [
        r
        for r in template_counts(build_dir, templates)
        if any(v for k, v in r.items() if k not in ("template", "paper_id"))
    ]
    head = [("template", "paper id", "candidates", *(f"{s} ok/rej/fail" for s in STAGES[1:5]))]
    body = [
        (
            r["template"],
            r["paper_id"],
            r["candidates"],
            *(f"{r[f'{s}_ok']}/{r[f'{s}_rejected']}/{r[f'{s}_failed']}" for s in STAGES[1:5]),
        )
        for r in rows
    ]
    text = [_table(head + body) if body else "no candidates yet"]
    cost = [("stage", "model", "sent", "restored", "retries", "failures", "tokens in", "tokens out", "mean latency s")]
    for stage in LLM_STAGES:
        file = build_settings.usage_path(build_dir, stage)
        if file.is_file():
            u = json.loads(file.read_text(encoding="utf-8"))
            cost.append(
                (
                    stage,
                    u.get("model", ""),
                    u.get("sent", 0),
                    u.get("restored", 0),
                    u.get("retries", 0),
                    sum(u.get("failures", {}).values()),
                    u.get("input_tokens", 0),
                    u.get("output_tokens", 0),
                    "" if u.get("mean_latency_s") is None else f"{u['mean_latency_s']:.3f}",
                )
            )
    if len(cost) > 1:
        text.append(_table(cost))
    return "\n\n".join(text + build_settings.model_warnings(build_dir))
