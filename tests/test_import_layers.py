"""Imports go downwards (docs/architecture.md): the root (the contract) imports only the root, `measure/` only the
root, `loadgen/` and `results/` neither the launcher, the CLI nor the runner (and `loadgen/` no results code). Every
import statement is read, those inside functions too, so a lazy import that goes upwards fails as a top-level one
would."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gpubench"
# gpubench.launcher and gpubench.workloads are installed from the repository's launcher/ and workloads/
LAYERS = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()} | {"launcher", "workloads"}
MAY_IMPORT = {  # layer -> the layers it may import, or (for the others) the ones it may not
    "root": {"root"},
    "measure": {"root", "measure"},
}
MAY_NOT_IMPORT = {
    "loadgen": {"launcher", "cli", "run", "results"},
    "results": {"launcher", "cli", "run"},
}


def layer(module: str) -> str:
    """gpubench.measure.flops -> measure; gpubench.schema.Metric (a root module's name) -> root."""
    part = module.split(".")[1]
    return part if part in LAYERS else "root"


def imports(path: Path) -> set[str]:
    """The gpubench names a file imports anywhere in it, `from gpubench import x` as gpubench.x."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: a relative import"
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in names if name.startswith("gpubench.")}


def files_of(name: str) -> list[Path]:
    if name == "root":
        return [p for p in PACKAGE.glob("*.py") if p.name != "__main__.py"]  # __main__ is `python -m gpubench`: the CLI
    return sorted((PACKAGE / name).rglob("*.py"))


def upward(name: str) -> list[str]:
    found = []
    for path in files_of(name):
        for module in sorted(imports(path)):
            target = layer(module)
            refused = target not in MAY_IMPORT[name] if name in MAY_IMPORT else target in MAY_NOT_IMPORT[name]
            if refused:
                found.append(f"{path.relative_to(PACKAGE.parent)} imports {module}")
    return found


@pytest.mark.parametrize("name", [*MAY_IMPORT, *MAY_NOT_IMPORT])
def test_imports_go_downwards(name):
    assert files_of(name)
    assert upward(name) == []


def test_a_lazy_upward_import_is_found(tmp_path):
    module = tmp_path / "late.py"
    module.write_text("def f():\n    from gpubench.launcher.launch import instance_types\n"
                      "    from gpubench import results\n")
    assert {layer(m) for m in imports(module)} == {"launcher", "results"}
