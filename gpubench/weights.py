"""Where a workload's pretrained weights are, or a clear word on which are missing.

Looked for, in order: `$GPUBENCH_WEIGHTS_DIR/<org>/<name>/` (a plain folder, e.g. a volume mounted
into a Runcrate job), then the Hugging Face cache (`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
`~/.cache/huggingface/hub`), which an image build can fill (its WEIGHTS build arg). Nothing is ever
downloaded here: a benchmark that fetches weights mid-run measures the network, not the GPU.

Data sets are entries like weights, written "datasets/<org>/<name>" as the Hub writes them: they are
looked for in `$GPUBENCH_WEIGHTS_DIR/datasets/<org>/<name>/` and in the cache's `datasets--<org>--<name>`.
"""

from __future__ import annotations

import os
from pathlib import Path


class MissingWeights(Exception):
    """str() is one line naming the missing repos and the ways to provide them."""

    def __init__(self, workload: str, missing: list[str]):
        self.missing = missing
        super().__init__(
            f"{workload} needs weights that are not on this machine: {', '.join(missing)}; bake them into the image"
            f" (build arg WEIGHTS=bake), put them in $GPUBENCH_WEIGHTS_DIR/<org>/<name> or the Hugging Face cache,"
            f" or run with --weights random (same compute, random values)"
        )


def hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]) / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


DATASET_PREFIX = "datasets/"


def hub_repo(entry: str) -> tuple[str, str]:
    """(repo_type, repo_id) of a catalog entry: "datasets/org/name" is a data set, anything else a model."""
    if entry.startswith(DATASET_PREFIX):
        return "dataset", entry[len(DATASET_PREFIX):]
    return "model", entry


def cache_folder_name(entry: str) -> str:
    repo_type, repo_id = hub_repo(entry)
    return f"{repo_type}s--{repo_id.replace('/', '--')}"


def revision(path: str | Path | None) -> str | None:
    """The Hub revision of a folder found in the cache (its snapshot's name); None for a plain folder."""
    if path is None:
        return None
    path = Path(path)
    return path.name if path.parent.name == "snapshots" else None


def _from_cache(repo_id: str) -> Path | None:
    """The snapshot folder `refs/main` points at, when it holds files (the cache's documented layout)."""
    repo_dir = hub_cache() / cache_folder_name(repo_id)
    try:
        revision = (repo_dir / "refs" / "main").read_text().strip()
    except OSError:
        return None
    snapshot = repo_dir / "snapshots" / revision
    return snapshot if snapshot.is_dir() and any(snapshot.iterdir()) else None


def locate(repo_id: str) -> Path | None:
    root = os.environ.get("GPUBENCH_WEIGHTS_DIR")
    if root:
        folder = Path(root) / repo_id
        if folder.is_dir() and any(folder.iterdir()):
            return folder
    return _from_cache(repo_id)


def resolve(workload: str, repos: list[str] | tuple[str, ...], mode: str) -> dict[str, Path | None]:
    """{repo: folder} for mode "auto" (all must be present), {repo: None} for mode "random"."""
    if mode == "random":
        return dict.fromkeys(repos)
    found = {repo: locate(repo) for repo in repos}
    missing = [repo for repo, path in found.items() if path is None]
    if missing:
        raise MissingWeights(workload, missing)
    return found
