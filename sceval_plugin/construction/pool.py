"""``sceval build pool``: the seeded candidate pool, a fixed budget per source (paper App. D).

"From each source we subsample a fixed budget of 100 examples, oversampling examples whose
question is plausibly tri-modal" (App. D, "Source pool and initial candidate construction";
Table 1: 100 per source, 300 candidates). The paper does not give its rule; ours:

- **Eligible**: a converted item (``BUILD/converted/<source>/items.jsonl``) whose three
  channels are all available (``hidden.modalities``); the others are excluded at this stage
  with the missing channel as the reason.
- **Plausibly tri-modal**: the source tags the item as audio-visual (``hidden.source_meta.modality``,
  as Valor32k-AVQA does), or its question names a sound cue and a sight cue (one word of
  :data:`AUDIO_CUES` and one of :data:`VISUAL_CUES`).
- **Draw**: weighted sampling without replacement (Efraimidis and Spirakis, 2006): each eligible
  item gets the key ``log(u) / w``, ``u`` uniform in (0, 1) from ``blake2b(seed, sample id)`` and
  ``w`` = ``tri_modal_weight`` (default 4) for a plausibly tri-modal item, 1 otherwise; the
  ``budget`` items with the largest keys are pooled. An item's chance rises with its weight but
  no group is drawn exclusively; ``tri_modal_weight=1`` is a plain seeded random sample.

The pool is a normal SCEval source (``BUILD/pool/items.jsonl``, media copied under
``BUILD/pool/media/<source>/``); ``BUILD/pool/funnel.json`` holds the per-source counts
(``examples`` -> ``converted`` -> ``eligible`` -> ``pooled``) and every item left out, with the
stage (``convert`` or ``pool``) and the reason. Everything is a pure function of the converted
folders, the seed, the budget and the weight.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from faultline_eval.core.preflight import FOLDER_TO_WRITE, path_rules
from faultline_eval.core.store import write_atomic
from sceval_plugin.construction.annotation_files import BUILT_BY
from sceval_plugin.construction.convert import BuildError, read_jsonl, write_jsonl

DEFAULT_BUDGET = 100
DEFAULT_SEED = 0
DEFAULT_TRI_MODAL_WEIGHT = 4.0
AUDIO_CUES = frozenset(
    """audio hear heard hears hearing listen listening sound sounds sounded noise noises voice
voices say says said saying speak speaks spoke speaking speech talk talks talking tone tones pitch music musical
song songs sing sings singing loud quiet laugh laughs laughing bark barking ring ringing beep beeps""".split()
)
VISUAL_CUES = frozenset(
    """see seen sees saw look looks looked looking watch watching show shows shown showing
visible screen picture pictures image images frame frames video scene wear wears wearing colour color colors
colours shape face faces smile smiles smiling gesture gestures hold holds holding appear appears standing
sitting""".split()
)
_WORD = re.compile(r"[a-z]+")


def order_key(*parts: Any) -> str:
    """A stable pseudo-random key of ``parts`` (blake2b of their JSON; no ``hash()``, no RNG)."""
    return hashlib.blake2b(json.dumps(parts, sort_keys=True).encode(), digest_size=8).hexdigest()


def tri_modal_cues(row: Mapping[str, Any]) -> list[str]:
    """Why an item is plausibly tri-modal (empty: it is not): the source's tag, or the question's
    first sound cue and first sight cue."""
    meta = (row.get("hidden") or {}).get("source_meta") or {}
    if str(meta.get("modality", "")).lower() in ("audio-visual", "audiovisual", "audio+visual"):
        return [f"source tag {meta['modality']}"]
    words = _WORD.findall(str(row.get("question", "")).lower())
    heard = next((w for w in words if w in AUDIO_CUES), None)
    seen = next((w for w in words if w in VISUAL_CUES), None)
    return [heard, seen] if heard and seen else []


def draw_key(seed: int, sample_id: str, weight: float) -> float:
    """The Efraimidis-Spirakis key ``log(u) / weight``; larger keys are drawn first."""
    u = (int(order_key("pool", seed, sample_id), 16) + 0.5) / 2**64
    return math.log(u) / weight


def _pooled_row(row: dict, converted: Path, pool: Path, source: str) -> dict:
    """The row with its media copied under ``pool/media/<source>/`` (paths relative to the pool)."""

    def move(rel: str) -> str:
        target = (
            Path("media") / source / Path(rel).relative_to("media")
            if rel.startswith("media/")
            else Path("media") / source / rel
        )
        if not (pool / target).is_file():
            (pool / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(converted / rel, pool / target)
        return target.as_posix()

    visual = row["visual"]
    return {
        **row,
        "visual": [move(v) for v in visual] if isinstance(visual, list) else move(visual),
        "audio": move(row["audio"]),
    }


def _source_names(converted_root: Path, sources: Iterable[str] | None) -> list[str]:
    """The sources asked for, or every converted one, sorted; refuses when there is none."""
    names = (
        sorted(sources)
        if sources
        else sorted(p.name for p in converted_root.glob("*") if (p / "items.jsonl").is_file())
    )
    if not names:
        raise BuildError(f"{converted_root}: no converted source (run `sceval build convert` first)")
    return names


def _split_eligible(rows: list[dict], source: str) -> tuple[list[dict], list[dict]]:
    """(rows with every modality present, funnel exclusions of the others)."""
    eligible, excluded = [], []
    for row in rows:
        missing = [m for m, present in row["hidden"]["modalities"].items() if not present]
        if missing:
            excluded.append(
                {
                    "sample_id": row["sample_id"],
                    "source": source,
                    "stage": "pool",
                    "reason": "modality_unavailable: " + ", ".join(missing),
                }
            )
        else:
            eligible.append(row)
    return eligible, excluded


def _ranked(eligible: list[dict], cues: dict[str, list[str]], seed: int, tri_modal_weight: float) -> list[dict]:
    """Eligible rows in draw order: weighted random keys (tri-modal rows weighted up), ties by id."""
    return sorted(
        eligible,
        key=lambda r: (
            -draw_key(seed, r["sample_id"], tri_modal_weight if cues[r["sample_id"]] else 1.0),
            r["sample_id"],
        ),
    )


def _pool_source(
    name: str, build_dir: Path, pool: Path, *, budget: int, seed: int, tri_modal_weight: float
) -> tuple[list[dict], list[dict], dict]:
    """(pooled rows, funnel exclusions, funnel counts) of one converted source; copies its drawn media."""
    folder = build_dir / "converted" / name
    if not (folder / "items.jsonl").is_file():
        raise BuildError(f"{folder}: no items.jsonl (run `sceval build convert {build_dir} {name}=PATH`)")
    rows, problems = read_jsonl(folder / "items.jsonl"), read_jsonl(folder / "problems.jsonl")
    excluded = [
        {
            "source_ref": p["source_ref"],
            "sample_id": p.get("sample_id"),
            "source": name,
            "stage": "convert",
            "reason": p["reason"],
        }
        for p in problems
    ]
    eligible, unavailable = _split_eligible(rows, name)
    excluded += unavailable
    cues = {row["sample_id"]: tri_modal_cues(row) for row in eligible}
    ranked = _ranked(eligible, cues, seed, tri_modal_weight)
    drawn, left = ranked[:budget], ranked[budget:]
    pooled_rows = []
    for row in drawn:
        pooled = _pooled_row(row, folder, pool, name)
        pooled["hidden"] = {**row["hidden"], "pool": {"seed": seed, "tri_modal_cues": cues[row["sample_id"]]}}
        pooled_rows.append(pooled)
    excluded += [
        {
            "sample_id": r["sample_id"],
            "source": name,
            "stage": "pool",
            "reason": f"not_drawn: over the budget of {budget}",
        }
        for r in left
    ]
    counts = {
        "examples": len(rows) + len(problems),
        "converted": len(rows),
        "eligible": len(eligible),
        "pooled": len(drawn),
        "tri_modal_eligible": sum(bool(c) for c in cues.values()),
        "tri_modal_pooled": sum(bool(cues[r["sample_id"]]) for r in drawn),
    }
    return pooled_rows, excluded, counts


def build_pool(
    build_dir: str | Path,
    *,
    budget: int = DEFAULT_BUDGET,
    seed: int = DEFAULT_SEED,
    tri_modal_weight: float = DEFAULT_TRI_MODAL_WEIGHT,
    sources: Iterable[str] | None = None,
) -> dict:
    """Draw the pool from ``BUILD/converted/*``; returns the funnel (also ``BUILD/pool/funnel.json``)."""
    if budget < 1 or not tri_modal_weight > 0:
        raise BuildError(f"the budget must be >= 1 and the tri-modal weight > 0 (got {budget}, {tri_modal_weight})")
    build_dir = Path(build_dir)
    names = _source_names(build_dir / "converted", sources)
    pool = build_dir / "pool"
    if pool.exists():
        shutil.rmtree(pool)
    pool.mkdir(parents=True)
    funnel: dict[str, Any] = {
        "seed": seed,
        "budget": budget,
        "tri_modal_weight": tri_modal_weight,
        "sources": {},
        "excluded": [],
    }
    pooled_rows: list[dict] = []
    for name in names:
        rows, excluded, counts = _pool_source(
            name, build_dir, pool, budget=budget, seed=seed, tri_modal_weight=tri_modal_weight
        )
        pooled_rows += rows
        funnel["excluded"] += excluded
        funnel["sources"][name] = counts
    write_jsonl(pool / "items.jsonl", pooled_rows)
    write_atomic(pool / "funnel.json", json.dumps(funnel, indent=2, sort_keys=True) + "\n")
    return funnel


def cmd_pool(args) -> int:
    funnel = build_pool(
        args.build_dir, budget=args.budget, seed=args.seed, tri_modal_weight=args.tri_modal_weight, sources=args.sources
    )
    for name, counts in funnel["sources"].items():
        print(
            f"{name}: {counts['examples']} example(s) -> {counts['converted']} converted -> {counts['eligible']} "
            f"eligible -> {counts['pooled']} pooled ({counts['tri_modal_pooled']} plausibly tri-modal)"
        )
    print(f"pool: {sum(c['pooled'] for c in funnel['sources'].values())} item(s) -> {Path(args.build_dir) / 'pool'}")
    return 0


def add_parser(stages) -> None:
    parser = stages.add_parser(
        "pool", help="draw the seeded candidate pool (a budget per source)", description=__doc__.split("\n\n")[0]
    )
    path_rules(
        parser.add_argument(
            "build_dir",
            type=Path,
            metavar="BUILD_DIR",
            help="the build folder (reads BUILD_DIR/converted, writes BUILD_DIR/pool)",
        ),
        BUILT_BY["convert"],
        FOLDER_TO_WRITE,
    )
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="items per source (default 100, Table 1)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the draw (default %(default)s)")
    parser.add_argument(
        "--tri-modal-weight",
        type=float,
        default=DEFAULT_TRI_MODAL_WEIGHT,
        help="draw weight of a plausibly tri-modal item (default 4; 1: no oversampling)",
    )
    parser.add_argument(
        "--sources",
        type=lambda s: [x for x in s.split(",") if x],
        default=None,
        help="comma-separated converted sources (default: all under BUILD_DIR/converted)",
    )
    parser.set_defaults(func=cmd_pool)
