"""Optional dependencies: which pip extra provides what, checked before anything runs or is written.

A missing one is one line naming the extra to install (exit 2), never a traceback or a half-made run folder.
"""

from __future__ import annotations

import importlib.util

# The import names each extra of pyproject.toml provides (torch is installed for the platform first, see README).
PROVIDES: dict[str, tuple[str, ...]] = {
    "train": ("torch", "transformers"),
    "finetune": ("torch", "transformers", "peft", "accelerate", "gguf"),
    "sdxl": ("torch", "diffusers", "transformers", "accelerate"),
    "embed": ("torch", "sentence_transformers"),
    "whisper": ("torch", "faster_whisper", "transformers", "jiwer"),
    "cold-start": ("torch", "transformers", "accelerate", "huggingface_hub"),
    "serve": ("aiohttp",),
    "report": ("matplotlib",),
    "launch": ("runcrate", "asyncssh"),
    "docker": ("docker",),
}
TORCH_HINT = "install torch for your platform first (https://pytorch.org/get-started/locally/), then "


class MissingExtra(Exception):
    """str() is the one line to show."""


def missing(extra: str, modules: tuple[str, ...] | None = None) -> list[str]:
    """The import names of `extra` (or just `modules` of it) that are not installed."""
    names = modules if modules is not None else PROVIDES.get(extra, ())
    return [name for name in names if _absent(name)]


def require(extra: str, needed_by: str, modules: tuple[str, ...] | None = None) -> None:
    """Raise MissingExtra naming the extra to install when any of its modules is absent."""
    absent = missing(extra, modules)
    if not absent:
        return
    hint = TORCH_HINT if "torch" in absent else ""
    raise MissingExtra(f"{needed_by} needs {', '.join(absent)}, which {'is' if len(absent) == 1 else 'are'} not"
                       f" installed: {hint}pip install 'gpubench[{extra}]'")


def _absent(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True
