"""dev.lock (tools/lock_dev.py): what the README's commands and .ci/run install, pinned for Python 3.11 and 3.12."""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("lock_dev", ROOT / "tools" / "lock_dev.py")
lock_dev = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lock_dev)


def extra_requirements(extras: tuple[str, ...]) -> list[Requirement]:
    """The project's dependencies plus those of the extras, gpubench[...] self-references expanded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found, todo, seen = [Requirement(r) for r in project["dependencies"]], list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for line in project["optional-dependencies"][extra]:
            requirement = Requirement(line)
            if requirement.name == "gpubench":
                todo += sorted(requirement.extras)
            else:
                found.append(requirement)
    return found


@pytest.mark.parametrize("python", lock_dev.PYTHONS)
def test_every_requirement_of_the_locked_extras_is_pinned_within_its_range(python):
    pins = {canonicalize_name(name): version
            for name, version in lock_dev.pins_for(lock_dev.parse((ROOT / "dev.lock").read_text()), python).items()}
    for requirement in extra_requirements(lock_dev.EXTRAS):
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not in dev.lock for Python {python}"
        assert requirement.specifier.contains(pins[name], prereleases=True), (requirement, pins[name])
    assert pins["torch"] == "2.13.0"


def test_the_readme_and_ci_install_with_the_lock():
    readme = (ROOT / "README.md").read_text()
    setup = readme[readme.index("## Set up"):readme.index("## Which studies")]
    commands = re.findall(r"```bash\n(.*?)\n```", setup, re.S)
    assert len(commands) == 2  # the main job, the tests
    locked = re.compile(r"\.venv/bin/pip install -c dev\.lock -e '\.\[(train|test)\]' torch==2\.13\.0")
    for command in commands:
        assert locked.search(command), command
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".venv/bin/pip install -q -c dev.lock -e '.[test]' torch==2.13.0" in ci


def test_pins_that_differ_between_pythons_get_a_marker_each():
    text = lock_dev.merge({"3.11": {"numpy": "2.4.6", "rich": "14.0.0", "tomli": "2.0.1"},
                           "3.12": {"numpy": "2.5.5", "rich": "14.0.0"}})
    assert text.splitlines() == ['numpy==2.4.6; python_version == "3.11"', 'numpy==2.5.5; python_version == "3.12"',
                                 "rich==14.0.0", 'tomli==2.0.1; python_version == "3.11"']
    pins = lock_dev.parse(text)
    assert lock_dev.pins_for(pins, "3.11") == {"numpy": "2.4.6", "rich": "14.0.0", "tomli": "2.0.1"}
    assert lock_dev.pins_for(pins, "3.12") == {"numpy": "2.5.5", "rich": "14.0.0"}


def test_the_lock_holds_only_exact_pins():
    for line in ("numpy>=2", "numpy==2.4.6,<3", 'numpy==2.4.6; sys_platform == "linux"',
                 'numpy==2.4.6; python_version == "3.10"', "numpy==2.4.*x"):
        with pytest.raises(ValueError, match="not a pin"):
            lock_dev.parse(line + "\n")
    text = (ROOT / "dev.lock").read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert lines and sum(len(versions) for versions in lock_dev.parse(text).values()) == len(lines)
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in lock_dev.PYTHONS
