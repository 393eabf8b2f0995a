"""Publishing a built benchmark folder to the Hugging Face Hub (both construction pipelines)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["push"]


def push(out: Path, repo_id: str) -> str:
    """Upload the export folder as a Hub dataset repo (token from the environment)."""
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
    api.upload_folder(folder_path=str(out), repo_id=repo_id, repo_type="dataset")
    return f"https://huggingface.co/datasets/{repo_id}"
