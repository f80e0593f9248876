"""The registry of providers (launcher/providers.py): the one place that names them; a lookup by an unknown name is
one line listing the valid names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gpubench.launcher import providers
from gpubench.launcher.errors import LaunchError


def test_an_unknown_provider_lists_the_valid_names():
    with pytest.raises(LaunchError) as caught:
        providers.get("kubernetes")
    assert str(caught.value) == "unknown provider 'kubernetes'; valid: runcrate, slurm, docker"


def test_the_default_is_the_first_line_and_tables_name_the_others():
    assert providers.DEFAULT == "runcrate"
    assert providers.tables() == ["slurm", "docker"]


LAUNCHER = Path(__file__).resolve().parents[1] / "launcher"
FOLDERS = {e.folder for e in providers.PROVIDERS}
ABOVE_PROVIDERS = {"launch", "cli", "providers", "manage", "sweep"}  # what calls providers; none of them is called back


def test_each_line_names_a_provider_in_its_own_folder():
    from gpubench.launcher.provider import Provider

    for entry in providers.PROVIDERS:
        cls = providers.get(entry.name)
        assert issubclass(cls, Provider) and cls.name == entry.name
        assert cls.__module__ == f"gpubench.launcher.{entry.folder}.provider"
        if entry.options:  # the options it adds to the CLI are the ones it reads
            module = entry.options_module()
            assert len(module.LAUNCH) == len(module.LAUNCH_NAMES) and len(module.SWEEP) == len(module.SWEEP_NAMES)
            assert entry.option is None or entry.option in module.LAUNCH_NAMES


def _modules() -> dict[str, Path]:
    return {".".join(p.relative_to(LAUNCHER).with_suffix("").parts).removesuffix(".__init__") or "__init__": p
            for p in LAUNCHER.rglob("*.py")}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The launcher modules one module imports, anywhere in it (relative imports resolved)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - (node.level - 1)]
            stem = [*base, *(node.module.split(".") if node.module else [])]
            for alias in node.names:
                target = ".".join([*stem, alias.name])
                found.add(target if target in modules else ".".join(stem))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            found |= {n.removeprefix("gpubench.launcher.") for n in names if n and n.startswith("gpubench.launcher.")}
    return {m for m in found if m in modules and m != name}


def test_the_launchers_imports_have_no_cycle_and_go_one_way():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    done, path = set(), []

    def visit(name: str) -> None:
        assert name not in path, f"import cycle: {' -> '.join([*path[path.index(name):], name])}"
        if name in done:
            return
        path.append(name)
        for target in graph[name]:
            visit(target)
        path.pop()
        done.add(name)

    for name in graph:
        visit(name)
    for name, targets in graph.items():
        room = name.split(".")[0] if "." in name else None
        for target in targets:
            other = target.split(".")[0]
            if room in FOLDERS:  # a provider uses the core below it, never another provider or what calls it
                assert other == room or (other not in FOLDERS and other not in ABOVE_PROVIDERS), f"{name} -> {target}"
            elif other in FOLDERS:  # only the registry names the providers (and it imports them by name)
                raise AssertionError(f"{name} imports the provider {target}: go through providers.py")


def test_no_provider_name_is_compared_outside_the_registry():
    names = set(providers.names())
    found = []
    for path in LAUNCHER.rglob("*.py"):
        if path.name == "providers.py" and path.parent == LAUNCHER:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                for operand in [node.left, *node.comparators]:
                    values = operand.elts if isinstance(operand, ast.Tuple | ast.List | ast.Set) else [operand]
                    if any(isinstance(v, ast.Constant) and v.value in names for v in values):
                        found.append(f"{path.relative_to(LAUNCHER)}:{node.lineno}")
    assert found == []


def test_a_second_ctrl_c_names_each_providers_own_stop_command():
    """What a launcher that quits at once tells a person to run is the provider's: Runcrate's cleanup, scancel with
    every job a Slurm call followed (one the first Ctrl-C stopped included), docker rm -f per Docker host."""
    from gpubench.launcher.docker_hosts.container import live_entry

    assert providers.get("runcrate")().stop_command({"r": "job j-1"}) == "gpubench-launch cleanup"
    slurm = providers.get("slurm")(None)
    slurm.followed = {"a": "12_0", "b": "12_1", "c": "13"}
    assert slurm.stop_command({"a": "slurm job 12_0"}) == "scancel 12_0 12_1 13"
    assert providers.get("slurm")(None).stop_command({}) == "gpubench-launch cleanup"  # none followed yet
    live = {"a": live_entry("0a1b", "ssh://bench@box"), "b": live_entry("2c3d", "ssh://bench@box"),
            "c": live_entry("4e5f", "unix:///var/run/docker.sock")}
    assert providers.get("docker")(None).stop_command(live) == (
        "docker -H ssh://bench@box rm -f 0a1b 2c3d; docker -H unix:///var/run/docker.sock rm -f 4e5f")
