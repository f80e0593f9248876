"""The wheel's packages, found rather than listed: every folder with an __init__.py under the design card's roots
(pyproject.toml's package-dir: gpubench/, workloads/ as gpubench.workloads, launcher/ as gpubench.launcher), so a
new workload package reaches the wheel with no edit here or in pyproject.toml. Everything else is in pyproject.toml."""

import tomllib
from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent
PACKAGE_DIR = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]

setup(packages=sorted({found for name, folder in PACKAGE_DIR.items()
                       for found in (name, *(f"{name}.{sub}" for sub in find_packages(ROOT / folder)))}))
