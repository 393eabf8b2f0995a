"""``faultline export RUN``: a finished SCEval run in the forms model cards and leaderboards read
(issue 40). Writes, under ``RUN/export/`` (or ``-o``):

- ``.eval_results/sceval.yaml``: Hugging Face's model-repository results format, one entry per
  (model, condition) with ``dataset`` (``id``, ``task_id``), ``value`` (accuracy, %), ``date``,
  ``source`` and ``notes``, read from the run's report (``RUN/report/conditions.csv``);
- ``dataset/``: the typed per-trial table as Parquet with a dataset card (``README.md``: the seed
  scheme, faultline-eval's version, the models), which ``datasets.load_dataset(dataset/)`` reads
  back and ``push_to_hub`` uploads.

``--push REPO`` uploads the dataset folder to a Hub dataset repository; it needs a token (``HF_TOKEN``
or ``huggingface-cli login``) and refuses without one."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

import pandas as pd
import yaml

import faultline_eval
from faultline_eval.core.preflight import FOLDER_TO_WRITE, path_rules
from sceval_plugin.report.reader import read_runs

RESULTS_FILE = Path(".eval_results") / "sceval.yaml"
DATASET_DIR = "dataset"


def eval_results(conditions: pd.DataFrame, *, date: str, source: str) -> list[dict]:
    """The ``.eval_results`` entries of a report's ``conditions.csv`` (accuracy as a fraction)."""
    return [
        {
            "dataset": {"id": "sceval", "task_id": str(r.condition_id)},
            "value": round(100 * float(r.accuracy), 2),
            "date": date,
            "source": {"name": source},
            "notes": f"model {r.model}; {int(r.n_samples)} items; 95% CI [{100 * r.ci_low:.1f}, {100 * r.ci_high:.1f}]",
        }
        for r in conditions.itertuples(index=False)
        if pd.notna(r.accuracy)
    ]


def trial_frame(run: Path) -> pd.DataFrame:
    """The run's typed trial table with plain columns (categories as strings, missing as None)."""
    trials, _ = read_runs([run], progress=False)
    out = trials.copy()
    for column in out.columns:
        if isinstance(out[column].dtype, pd.CategoricalDtype):
            out[column] = (
                out[column].astype(object).where(out[column].notna(), None).map(lambda v: None if v is None else str(v))
            )
    return out.reset_index(drop=True)


def _card(trials: pd.DataFrame) -> str:
    seeds = ", ".join(sorted(set(trials["seed_scheme"].dropna()))) or "unknown"
    models = ", ".join(sorted(set(trials["model"].dropna())))
    front = {
        "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": "data/trials.parquet"}]}],
        "tags": ["faultline-eval", "sceval", "evaluation-results"],
    }
    return (
        f"---\n{yaml.safe_dump(front, sort_keys=False)}---\n\n# SCEval per-trial results\n\n"
        f"One row per trial (model, condition, item, variant) of an SCEval run, written by "
        f"faultline-eval {faultline_eval.__version__} (`faultline export`).\n\n"
        f"- Models: {models}\n- Operators' seed scheme: {seeds}\n- Trials: {len(trials)}\n"
        f"- `correct` is 1/0, missing for an invalid output (`invalid` says why).\n"
    )


def export_run(run: Path, out: Path) -> list[Path]:
    conditions_csv = run / "report" / "conditions.csv"
    if not conditions_csv.is_file():
        raise FileNotFoundError(
            f"export: {conditions_csv} not found; write the run's report first: sceval report {run} --output {run / 'report'}"
        )
    date = dt.date.today().isoformat()
    entries = eval_results(
        pd.read_csv(conditions_csv), date=date, source=f"faultline-eval {faultline_eval.__version__}"
    )
    results = out / RESULTS_FILE
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(yaml.safe_dump(entries, sort_keys=False), encoding="utf-8")
    trials = trial_frame(run)
    data = out / DATASET_DIR / "data"
    data.mkdir(parents=True, exist_ok=True)
    trials.to_parquet(data / "trials.parquet", index=False)
    card = out / DATASET_DIR / "README.md"
    card.write_text(_card(trials), encoding="utf-8")
    return [results, data / "trials.parquet", card]


def push(folder: Path, repo: str) -> None:
    from huggingface_hub import HfApi, get_token

    if not get_token():
        raise PermissionError(f"export --push {repo}: no Hugging Face token; set HF_TOKEN or run `hf auth login`")
    api = HfApi()
    api.create_repo(repo, repo_type="dataset", exist_ok=True)
    api.upload_folder(folder_path=str(folder), repo_id=repo, repo_type="dataset")


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "export",
        help="write a run's results as a Hugging Face .eval_results file and a per-trial dataset",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # RUN is checked by the command itself: a run without RUN/report/ is refused naming `sceval report`
    parser.add_argument(
        "run", type=Path, metavar="RUN", help="a finished SCEval run folder with its report in RUN/report/"
    )
    path_rules(
        parser.add_argument("-o", "--out", type=Path, default=None, help="where to write (default RUN/export/)"),
        FOLDER_TO_WRITE,
    )
    parser.add_argument(
        "--push",
        metavar="REPO",
        default=None,
        help="upload the dataset folder to this Hub dataset repository (needs a token)",
    )

    def run(args: argparse.Namespace) -> int:
        out = args.out or args.run / "export"
        for path in export_run(args.run, out):
            print(f"wrote {path}")
        if args.push:
            push(out / DATASET_DIR, args.push)
            print(f"pushed {out / DATASET_DIR} to the dataset repository {args.push}")
        return 0

    parser.set_defaults(func=run)
