"""``sceval build publish``: the built benchmark as a ``datasets`` folder (paper App. D, Table 1).

``BUILD/published/`` (or ``--out``) holds::

    items.parquet   the kept items in the unified schema (options and hidden as JSON text, visual
                    as a list of paths), written by ``datasets``
    media/          their media, copied byte for byte from the pool
    README.md       the dataset card: a YAML header (licence, each source's licence, the parquet
                    file as the ``test`` split) and the funnel, per source, with every item left out
    manifest.json   BUILD/manifest.json, copied when the annotation rounds wrote one
    funnel.json     the pool's funnel plus this stage's exclusions

With a manifest (``sceval build manifest``) only the items it marks valid and answerable are
kept; the others are listed with the manifest's failure reason (an item of the pool the manifest
does not mention is ``not_annotated``). Without one the whole pool is published and the card
says that it is unverified. The folder loads both ways::

    SCEVAL_SOURCE=BUILD/published [SCEVAL_MANIFEST=BUILD/published/manifest.json] lmms-eval ...
    datasets.load_dataset("BUILD/published", split="test")

``--push-to-hub USER/NAME`` uploads it (a token from the environment); with ``HF_HUB_OFFLINE=1``
set it stops with an error instead of trying.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from faultline_eval.core.hub import push
from faultline_eval.core.intake import collect, read_rows
from faultline_eval.core.preflight import FOLDER_TO_WRITE, PathRule, path_rules
from sceval_plugin.construction.annotation_files import BUILT_BY
from sceval_plugin.construction.convert import BuildError, read_jsonl, registry
from sceval_plugin.data.manifest import parse_manifest
from sceval_plugin.data.records import item_from_row
from sceval_plugin.data.sources import media_paths
from sceval_plugin.plugins import env_flag

CARD = """---
license: other
license_name: source-licences
license_details: "Items derived from {sources}; each source keeps its own terms (see source_licenses)."
source_licenses:
{licences}
tags:
- sceval
- faultline-eval
- omni-modal
configs:
- config_name: default
  data_files:
  - split: test
    path: items.parquet
---
# SCEval items built with faultline-eval

{n} tri-modal items (question, visual evidence, audio) from {sources}, made by `sceval build`
(convert -> pool -> annotation -> manifest -> publish; the SCEval paper's §2.3 and Appendix D).
{verified}

Load it with `SCEVAL_SOURCE=<this folder>`{manifest_hint} or `datasets.load_dataset("<this folder>", split="test")`
(add `download_mode="force_redownload"` after republishing into the same folder: `datasets` caches it).
Media paths are relative to this folder; `hidden` (JSON) holds each item's back-pointer to its
source example (`source_ref`), its modality flags, expected evidence modality and licence, and is
never shown to a model.

## Licences

Source media and questions remain subject to their sources' terms:

{licence_lines}

## Funnel

| source | examples | converted | eligible | pooled | published |
|---|---|---|---|---|---|
{funnel_rows}

{excluded}
"""


def _yaml_text(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid YAML scalar


def _table_row(row: dict) -> dict:
    """A pool row in the parquet layout: one type per column whatever the item."""
    visual = row["visual"]
    return {
        "sample_id": row["sample_id"],
        "source": row["source"],
        "question": row["question"],
        "options": json.dumps(row["options"], sort_keys=True, ensure_ascii=False),
        "gold_key": row["gold_key"],
        "visual": visual if isinstance(visual, list) else [visual],
        "audio": row["audio"],
        "context": row.get("context") or "",
        "category": row.get("category") or "",
        "key_frame_index": row.get("key_frame_index"),
        "hidden": json.dumps(row.get("hidden") or {}, sort_keys=True, ensure_ascii=False),
    }


def _kept(rows: list[dict], manifest_path: Path) -> tuple[list[dict], list[dict]]:
    """(kept rows, exclusions) by the manifest's per-sample validity and answerability."""
    samples = parse_manifest(manifest_path).samples
    kept, excluded = [], []
    for row in rows:
        entry = samples.get(row["sample_id"])
        if entry is None:
            reason = "not_annotated"
        elif entry.get("valid") is True and entry.get("answerable") is True:
            kept.append(row)
            continue
        else:
            reason = entry.get("failure_reason") or ("invalid" if entry.get("valid") is not True else "unanswerable")
        excluded.append(
            {
                "sample_id": row["sample_id"],
                "source": row["source"],
                "stage": "annotation",
                "reason": reason,
                "adjudication_note": (entry or {}).get("adjudication_note"),
            }
        )
    return kept, excluded


def offline_guard() -> None:
    """Refuse to reach the Hub when the offline setting is on (clear error, nothing attempted)."""
    if env_flag("HF_HUB_OFFLINE"):
        raise BuildError(
            "--push-to-hub needs the network, but HF_HUB_OFFLINE=1 is set: unset it (and log in, "
            "`hf auth login` or HF_TOKEN) to upload"
        )


def publish(build_dir: str | Path, *, out: str | Path | None = None, push_to_hub: str | None = None) -> dict:
    """Write the published folder; returns ``{"out", "published", "excluded", "manifest", "hub"}``."""
    import datasets

    build_dir = Path(build_dir)
    pool = build_dir / "pool"
    if not (pool / "items.jsonl").is_file():
        raise BuildError(f"{pool}: no pool (run `sceval build pool {build_dir}` first)")
    if push_to_hub:
        offline_guard()
    out = Path(out) if out is not None else build_dir / "published"
    # written whole in a sibling folder, checked, then renamed into place: a kill leaves the old
    # folder or none, never a half-written parquet (the next run clears the partial folder)
    partial = out.with_name(f".{out.name}.partial")
    if partial.exists():
        shutil.rmtree(partial)
    (partial / "media").mkdir(parents=True)
    rows = read_jsonl(pool / "items.jsonl")
    funnel = _pool_funnel(pool, rows)
    manifest = build_dir / "manifest.json"
    kept, excluded = _kept(rows, manifest) if manifest.is_file() else (rows, [])
    if not kept:
        shutil.rmtree(partial)
        raise BuildError(f"{build_dir}: no item left to publish ({len(excluded)} excluded by {manifest})")
    for row in kept:
        for rel in [*(row["visual"] if isinstance(row["visual"], list) else [row["visual"]]), row["audio"]]:
            (partial / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pool / rel, partial / rel)
    datasets.Dataset.from_list([_table_row(r) for r in kept]).to_parquet(str(partial / "items.parquet"))
    if manifest.is_file():
        shutil.copyfile(manifest, partial / "manifest.json")
    funnel["excluded"] = [*funnel["excluded"], *excluded]
    published = {}
    for row in kept:
        published[row["source"]] = published.get(row["source"], 0) + 1
    for name, counts in funnel["sources"].items():
        counts["published"] = published.get(name, 0)
    (partial / "funnel.json").write_text(json.dumps(funnel, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (partial / "README.md").write_text(_card(funnel, kept, manifest.is_file()), encoding="utf-8")
    # read back as the tasks will read it (SCEVAL_SOURCE=<out>): every row valid, every file probed
    items, problems = collect(
        read_rows(partial / "items.parquet"), lambda row: item_from_row(row, partial), media_paths
    )
    if problems or len(items) != len(kept):
        raise BuildError(f"{out}: the published folder does not load cleanly: {'; '.join(map(str, problems[:5]))}")
    _swap_into_place(partial, out)
    result = {
        "out": str(out),
        "published": len(kept),
        "excluded": len(funnel["excluded"]),
        "manifest": manifest.is_file(),
        "hub": None,
    }
    if push_to_hub:
        result["hub"] = push(out, push_to_hub)
    return result


def _swap_into_place(partial: Path, out: Path) -> None:
    """Put the finished ``partial`` folder at ``out``. The old folder is renamed aside before it is
    deleted (a kill during a delete would leave it half there): a kill at any point leaves ``out``
    whole, the new one, or absent; the next run clears what is left aside."""
    aside = out.with_name(f".{out.name}.old")
    if aside.exists():
        shutil.rmtree(aside)
    if out.exists():
        os.replace(out, aside)
    os.replace(partial, out)
    shutil.rmtree(aside, ignore_errors=True)


def _pool_funnel(pool: Path, rows: list[dict]) -> dict:
    """The pool's funnel from ``sceval build pool`` (``pool/funnel.json``); for a pool put there by
    hand (the README's demo flow copies a folder) one that counts its items, as given, at every
    earlier stage."""
    written = pool / "funnel.json"
    if written.is_file():
        return json.loads(written.read_text(encoding="utf-8"))
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["source"]] = counts.get(row["source"], 0) + 1
    return {
        "seed": None,
        "budget": max(counts.values(), default=0),
        "excluded": [],
        "sources": {
            name: dict.fromkeys(("examples", "converted", "eligible", "pooled"), n) for name, n in counts.items()
        },
    }


def source_licences(funnel: dict, kept: list[dict]) -> dict[str, str]:
    """Source -> the licence(s) of its published rows (each row's ``hidden.license``, set by the
    converter: the source's licence, or the row's own for a unified-schema folder), else its
    converter's licence for a source with no row published."""
    known = {c.name: c.license for c in registry()}
    found: dict[str, set[str]] = {}
    for row in kept:
        licence = (row.get("hidden") or {}).get("license")
        if licence:
            found.setdefault(row["source"], set()).add(str(licence))
    return {
        name: "; ".join(sorted(found[name])) if name in found else known.get(name, "unknown: check the source's terms")
        for name in sorted(funnel["sources"])
    }


def _card(funnel: dict, kept: list[dict], verified: bool) -> str:
    n = len(kept)
    licences = source_licences(funnel, kept)
    names = sorted(licences)
    rows = "\n".join(
        f"| {name} | {c['examples']} | {c['converted']} | {c['eligible']} | {c['pooled']} | {c['published']} |"
        for name, c in sorted(funnel["sources"].items())
    )
    by_stage: dict[str, list[str]] = {}
    not_drawn = sum(e["reason"].startswith("not_drawn") for e in funnel["excluded"])
    for e in funnel["excluded"]:
        if e["reason"].startswith("not_drawn"):  # counted, not listed: a source may have thousands
            continue
        by_stage.setdefault(e["stage"], []).append(
            f"- `{e.get('sample_id') or e.get('source_ref')}` ({e['source']}): {e['reason']}"
        )
    excluded = (
        "\n\n".join(
            f"### Left out at the {stage} stage ({len(lines)})\n\n" + "\n".join(lines)
            for stage, lines in by_stage.items()
        )
        or "No item was rejected."
    )
    if not_drawn:
        excluded += (
            f"\n\n{not_drawn} eligible item(s) were not drawn into the pool (over the budget of "
            f"{funnel['budget']} per source); `funnel.json` lists them."
        )
    return CARD.format(
        sources=", ".join(names),
        n=n,
        funnel_rows=rows,
        excluded=excluded,
        licences="\n".join(f"  {name}: {_yaml_text(text)}" for name, text in licences.items()),
        licence_lines="\n".join(f"- **{name}**: {text}" for name, text in licences.items()),
        verified="The items passed the annotation rounds (`manifest.json`: validity, tri-modal answerability, "
        "per-cell interpretability and gold preservation)."
        if verified
        else "**Unverified**: no annotation manifest was present, so this is the whole candidate pool.",
        manifest_hint=" (with `SCEVAL_MANIFEST=<this folder>/manifest.json`)" if verified else "",
    )


def cmd_publish(args) -> int:
    result = publish(args.build_dir, out=args.out, push_to_hub=args.push_to_hub)
    note = "" if result["manifest"] else " (no manifest: the unverified pool)"
    print(
        f"published {result['published']} item(s){note} -> {result['out']}; "
        f"{result['excluded']} left out, listed in README.md and funnel.json"
    )
    if result["hub"]:
        print(f"uploaded: {result['hub']}")
    return 0


def add_parser(stages) -> None:
    parser = stages.add_parser(
        "publish", help="write the benchmark as a datasets folder with its card", description=__doc__.split("\n\n")[0]
    )
    path_rules(
        parser.add_argument(
            "build_dir",
            type=Path,
            metavar="BUILD_DIR",
            help="the build folder (reads BUILD_DIR/pool and BUILD_DIR/manifest.json when present)",
        ),
        BUILT_BY["pool"],
        FOLDER_TO_WRITE,
    )
    # written beside itself and renamed into place: its folder must be writable
    path_rules(
        parser.add_argument("--out", type=Path, default=None, help="default: BUILD_DIR/published"),
        PathRule("output_to_write"),
    )
    parser.add_argument(
        "--push-to-hub",
        metavar="REPO",
        default=None,
        help="also upload the folder as the Hub dataset REPO (needs the network and a token)",
    )
    parser.set_defaults(func=cmd_publish)
