"""Imports go downwards (docs/architecture.md). Every import statement is read, those inside functions too, so a lazy
import that goes upwards fails as a top-level one would. The rules:

- the root (the contract) imports only the root; `measure/` (the workload toolkit) only the root;
- `run/` (runner, worker, sampler, ingest, --docker) the root, `measure/` and `results/` (the end-of-run summary and
  verdicts): never the CLI, the launcher, loadgen, the servers or a workload (those it loads through workload.load);
- `servers/` (engines as processes) the root and `measure/`, and of loadgen only the word list its stand-in
  tokenizer shares with the prompts (`loadgen/prompts.py`);
- `loadgen/` neither the launcher, the CLI, the runner, results, the servers nor a workload: it drives any endpoint;
- `results/` neither the launcher, the CLI, the runner, the servers nor a workload;
- `cli/` may import every layer but a workload's module; nothing imports `cli/` but `gpubench/__main__.py`.

Each rule is checked by breaking it once (test_each_rule_refuses_what_it_forbids). The launcher's folders have rules of
their own in tests/test_launch_imports.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gpubench"
# gpubench.launcher and gpubench.workloads are installed from the repository's launcher/ and workloads/
LAYERS = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()} | {"launcher", "workloads"}
MAY_IMPORT = {  # layer -> the layers it may import
    "root": {"root"},
    "measure": {"root", "measure"},
    "run": {"root", "measure", "results", "run"},
    "servers": {"root", "measure", "servers"},
}
ALSO_MAY_IMPORT = {  # layer -> modules of another layer it may import, each with its reason
    "servers": {"gpubench.loadgen.prompts": "the word list the stand-in tokenizer shares with loadgen's prompts"},
}
MAY_NOT_IMPORT = {  # layer -> the layers it may not import (any other it may)
    "loadgen": {"launcher", "cli", "run", "results", "servers", "workloads"},
    "results": {"launcher", "cli", "run", "servers", "workloads"},
    "cli": {"workloads"},
}
CLI_IMPORTED_BY = {"gpubench/__main__.py"}  # `python -m gpubench`; the console script names cli.main itself


def layer(module: str) -> str:
    """gpubench.measure.flops -> measure; gpubench.schema.Metric (a root module's name) -> root."""
    part = module.split(".")[1]
    return part if part in LAYERS else "root"


def package_of(path: Path) -> list[str]:
    """The installed package a file is in: launcher/runcrate/jobs.py -> gpubench.launcher.runcrate."""
    parts = list(path.resolve().relative_to(ROOT).parent.parts)
    return parts if parts[:1] == ["gpubench"] else ["gpubench", *parts]


def imports(path: Path) -> set[str]:
    """The gpubench names a file imports anywhere in it, `from gpubench import x` as gpubench.x; a relative import
    (the launcher's) resolved against the file's installed package."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = package_of(path)[: len(package_of(path)) - node.level + 1]
                base = ".".join([*package, *([node.module] if node.module else [])])
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in names if name.startswith("gpubench.")}


def files_of(name: str) -> list[Path]:
    if name == "root":
        return [p for p in PACKAGE.glob("*.py") if p.name != "__main__.py"]  # __main__ is `python -m gpubench`: the CLI
    return sorted((PACKAGE / name).rglob("*.py"))


def refused(name: str, module: str) -> bool:
    """Whether layer `name` may not import `module`."""
    if any(module == allowed or module.startswith(allowed + ".") for allowed in ALSO_MAY_IMPORT.get(name, {})):
        return False
    target = layer(module)
    return target not in MAY_IMPORT[name] if name in MAY_IMPORT else target in MAY_NOT_IMPORT[name]


def upward(name: str, files: list[Path] | None = None) -> list[str]:
    found = []
    for path in files if files is not None else files_of(name):
        found += [f"{path.relative_to(path.anchor)} imports {module}" for module in sorted(imports(path))
                  if refused(name, module)]
    return found


def cli_importers(files: list[Path]) -> list[str]:
    """`file imports module` for each import of gpubench.cli outside cli/ and the files allowed to."""
    found = []
    for path in files:
        relative = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
        if relative.startswith("gpubench/cli/") or relative in CLI_IMPORTED_BY:
            continue
        found += [f"{relative} imports {m}" for m in sorted(imports(path))
                  if m == "gpubench.cli" or m.startswith("gpubench.cli.")]
    return found


@pytest.mark.parametrize("name", [*MAY_IMPORT, *MAY_NOT_IMPORT])
def test_imports_go_downwards(name):
    assert files_of(name)
    assert upward(name) == []


def test_nothing_imports_the_cli_but_main():
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "launcher").rglob("*.py"), *(ROOT / "workloads").rglob("*.py")]
    assert len(files) > 100
    assert cli_importers(files) == []
    assert "gpubench.cli.main.main" in imports(PACKAGE / "__main__.py")  # the one that may, does


BROKEN = [  # (layer, an import that breaks one of its rules)
    ("root", "gpubench.measure.flops"),
    ("measure", "gpubench.run.utilisation"),
    ("run", "gpubench.cli.common"),
    ("run", "gpubench.launcher.launch"),
    ("run", "gpubench.servers.vllm"),
    ("run", "gpubench.loadgen.client"),
    ("run", "gpubench.workloads.embed"),
    ("servers", "gpubench.loadgen.client"),  # loadgen beyond its word list
    ("servers", "gpubench.results.report"),
    ("servers", "gpubench.run.worker"),
    ("loadgen", "gpubench.results.summary"),
    ("loadgen", "gpubench.servers.vllm"),
    ("loadgen", "gpubench.run.runner"),
    ("results", "gpubench.run.runner"),
    ("results", "gpubench.servers.process"),
    ("results", "gpubench.cli.main"),
    ("cli", "gpubench.workloads.whisper"),
]


@pytest.mark.parametrize(("name", "module"), BROKEN)
def test_each_rule_refuses_what_it_forbids(tmp_path, name, module):
    path = tmp_path / "broken.py"
    path.write_text(f"def late():\n    import {module}\n")
    assert upward(name, [path]) == [f"{path.relative_to(path.anchor)} imports {module}"]


def test_the_rules_allow_what_the_layers_are_for():
    allowed = [("run", "gpubench.results.summary"), ("run", "gpubench.measure.energy"), ("servers", "gpubench.ports"),
               ("servers", "gpubench.loadgen.prompts.WORDS"), ("loadgen", "gpubench.workload.MetricDef"),
               ("results", "gpubench.loadgen.slo"), ("cli", "gpubench.launcher.launch"), ("cli", "gpubench.run.runner")]
    assert [pair for pair in allowed if refused(*pair)] == []


def test_an_import_of_the_cli_from_anywhere_else_is_found(tmp_path):
    planted = tmp_path / "helper.py"
    planted.write_text("from gpubench.cli import common\n")
    main = PACKAGE / "__main__.py"
    assert cli_importers([planted, main]) == ["helper.py imports gpubench.cli.common"]


def test_a_lazy_upward_import_is_found(tmp_path):
    module = tmp_path / "late.py"
    module.write_text("def f():\n    from gpubench.launcher.launch import instance_types\n"
                      "    from gpubench import results\n")
    assert {layer(m) for m in imports(module)} == {"launcher", "results"}
