"""Where a workload's pretrained weights are, or a clear word on which are missing.

Looked for, in order: `$GPUBENCH_WEIGHTS_DIR/<org>/<name>/` (a plain folder, e.g. a volume mounted
into a Runcrate job), then the Hugging Face cache (`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
`~/.cache/huggingface/hub`), which an image build can fill (its WEIGHTS build arg). Nothing is ever
downloaded here: a benchmark that fetches weights mid-run measures the network, not the GPU.
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


def _from_cache(repo_id: str) -> Path | None:
    """The snapshot folder `refs/main` points at, when it holds files (the cache's documented layout)."""
    repo_dir = hub_cache() / f"models--{repo_id.replace('/', '--')}"
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
