"""The prompt-robustness subset chosen per model (SCEval G.6), as generated lmms-eval tasks.

G.6's diagnostic subset is "the clean condition, the worst single-modality text/vision/audio
cells, the strongest text–vision condition, and the strongest trimodal condition". The catalogue's
fixed list (:data:`sceval_plugin.conditions.PROMPT_BASES`, the paper's cells) stays the default;
``sceval prompt-subset RUN_DIR --model M`` reads a finished run instead
(:mod:`sceval_plugin.report.prompt_subset_choice`) and picks, from M's own standard-prompt
results (:func:`choose_bases`):

* ``clean``;
* per modality, the single-modality cell with the lowest accuracy (eq. 3) -- the worst cell;
* the text–vision cell (block ``tv``) and the trimodal cell (``tva``) with the lowest accuracy --
  the strongest fault line, measured against the same clean accuracy.

Ties go to the higher total severity, then the condition id, so the choice is a pure function
of the results. A modality or block the run has no cell of is left out, and said so.

The choice is written to ``$SCEVAL_CACHE/prompt_subsets/<model>.json``. This module registers,
through ``sceval_register_conditions`` like a third party, the prompt variants
``prompt_<cot|open>_<base>`` of every chosen base the catalogue lacks; being generated at run
time, their task files go to the cache (:data:`sceval_plugin.plugins.GENERATED_PLUGINS`), with one
lmms-eval group per subset file, ``sceval_prompt_subset_<model>``, that lists the standard-prompt
bases and all their variants, so ``lmms-eval --tasks sceval_prompt_subset_<model>`` runs it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from faultline_eval.core.paths import cache_dir
from faultline_eval.core.store import write_atomic
from sceval_plugin.conditions import ConditionRegistry, catalogue, prompt_variant
from sceval_plugin.hookspecs import hookimpl

#: The role of each chosen cell, in the order G.6 lists them.
ROLES = ("clean", "worst_text", "worst_vision", "worst_audio", "strongest_tv", "strongest_tva")


class SubsetError(ValueError):
    """A subset cannot be chosen, or a subset file cannot be used; the message says which and why."""


def subset_dir() -> Path:
    return cache_dir() / "prompt_subsets"


def group_name(model: str) -> str:
    """The lmms-eval group of ``model``'s subset: ``sceval_prompt_subset_<model, lower case, _>``."""
    return "sceval_prompt_subset_" + (re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_") or "model")


def choose_bases(accuracy: Mapping[str, float], info: Mapping) -> tuple[dict[str, str], list[str]]:
    """``({role: condition id}, notes)`` from one model's accuracy per condition (standard
    prompt) and the catalogue info (``ConditionInfo`` by id); see the module docstring."""

    def pick(members: Iterable[str]) -> str | None:
        ranked = sorted(
            (accuracy[cid], -sum(c[2] for c in info[cid].corruptions), cid)
            for cid in members
            if cid in accuracy and accuracy[cid] == accuracy[cid]
        )  # NaN: no valid output to rank
        return ranked[0][2] if ranked else None

    candidates = {
        "clean": ["clean"],
        **{
            f"worst_{m}": [cid for cid, c in info.items() if c.block == "single" and c.corruptions[0][0] == m]
            for m in ("text", "vision", "audio")
        },
        "strongest_tv": [cid for cid, c in info.items() if c.block == "tv"],
        "strongest_tva": [cid for cid, c in info.items() if c.block == "tva"],
    }
    chosen, notes = {}, []
    for role in ROLES:
        found = pick(candidates[role])
        if found is None:
            notes.append(f"{role}: the run has no scored cell of this kind; left out")
        else:
            chosen[role] = found
    return chosen, notes


def write_subset(
    model: str, chosen: Mapping[str, str], prompts: Sequence[str], runs: Sequence[str], accuracy: Mapping[str, float]
) -> Path:
    path = subset_dir() / f"{group_name(model)}.json"
    write_atomic(
        path,
        json.dumps(
            {
                "model": model,
                "group": group_name(model),
                "cells": dict(chosen),
                "accuracy": {cid: accuracy[cid] for cid in chosen.values()},
                "prompts": list(prompts),
                "runs": [str(r) for r in runs],
            },
            indent=1,
        )
        + "\n",
    )
    return path


def read_subsets() -> list[dict]:
    """Every subset file, in name order; a malformed one is an error naming the file."""
    subsets = []
    for path in sorted(subset_dir().glob("*.json")) if subset_dir().is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            cells, prompts, group = dict(data["cells"]), list(data["prompts"]), str(data["group"])
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise SubsetError(
                f"{path}: not a prompt-subset file ({type(exc).__name__}: {exc}); delete it or "
                "write it again with `sceval prompt-subset`"
            ) from exc
        subsets.append({"path": path, "group": group, "cells": cells, "prompts": prompts})
    return subsets


def task_names(subset: Mapping, registry) -> list[str]:
    """The tasks of a subset: each chosen base, then its prompt variants."""
    names = []
    for base in dict.fromkeys(subset["cells"].values()):
        names.append(registry.get(base).task_name)
        names += [registry.get(f"prompt_{p}_{base}").task_name for p in subset["prompts"]]
    return names


@hookimpl
def sceval_register_conditions(registry: ConditionRegistry) -> None:
    for subset in read_subsets():
        for base in dict.fromkeys(subset["cells"].values()):
            if base not in registry:
                raise SubsetError(
                    f"{subset['path']}: chosen cell {base!r} is not in the catalogue "
                    "(is the plugin that defines it installed?)"
                )
            for prompt in subset["prompts"]:
                if f"prompt_{prompt}_{base}" not in registry:
                    registry.add(prompt_variant(registry.get(base), prompt))


def group_files() -> dict[str, str]:
    """File name -> YAML of one lmms-eval group per subset file."""
    files = {}
    for subset in read_subsets():
        lines = [
            "# Generated by `sceval prompt-subset` (sceval_plugin.prompt_subset); do not edit.",
            f"group: {subset['group']}",
            "task:",
        ]
        lines += [f"  - {name}" for name in task_names(subset, catalogue())]
        files[f"{subset['group']}.yaml"] = "\n".join(lines) + "\n"
    return files
