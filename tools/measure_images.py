"""Measure built images for docs/images.md: size, compressed size, layers, what each adds over its stack, smoke.

    python tools/measure_images.py base train-compile ...            # one JSON line per image on stdout
    python tools/measure_images.py --smoke-only train-compile ...    # `run NAME --smoke --cpu` inside each

Images are <REGISTRY>/<name>:<version>, as tools/build_images.sh tags them. The compressed size is the sum of the
image's layers each compressed with gzip -1 (what a pull downloads, near enough); a layer's size is cached by its id
under /var/tmp, so layers the images share are compressed once. "Lock adds" is the installed size (the files their
RECORDs list) of the packages a workload's lock pins that its stack's lock does not.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpubench import __version__  # noqa: E402
from gpubench.catalog import WORKLOADS  # noqa: E402
from gpubench.images import STACKS, locked_versions, stack_for  # noqa: E402
from gpubench.schema import RunFinished, SetupResult, parse_record  # noqa: E402

DOCKER = os.environ.get("DOCKER", "docker")
CACHE = Path("/var/tmp/gpubench-image-stand-ins/layer-gzip-sizes.json")
STACK = {s.name: s for s in STACKS}

INSTALLED_SIZE = """
import importlib.metadata as m, json, sys
names = set(json.loads(sys.argv[1]))
total = 0
for dist in m.distributions():
    if dist.metadata["Name"] and dist.metadata["Name"].lower().replace("_", "-").replace(".", "-") in names:
        total += sum(f.size or 0 for f in dist.files or [])
print(total)
"""


def tag(name: str) -> str:
    return f"{os.environ.get('REGISTRY', 'ghcr.io/gpubench')}/{name}:{os.environ.get('VERSION', __version__)}"


def docker(*args: str) -> str:
    return subprocess.run([DOCKER, *args], check=True, capture_output=True, text=True).stdout


def compressed_size(image: str) -> int:
    """Sum of the image's layers' gzip -1 sizes, from `docker save` (each layer compressed once, then cached)."""
    sizes = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    save = subprocess.Popen([DOCKER, "save", image], stdout=subprocess.PIPE)
    with tarfile.open(fileobj=save.stdout, mode="r|") as archive:
        manifest = None
        for member in archive:
            if member.name.endswith("/layer.tar") and member.name not in sizes:
                packer, total = zlib.compressobj(1, zlib.DEFLATED, 31), 0
                data = archive.extractfile(member)
                while chunk := data.read(1 << 20):
                    total += len(packer.compress(chunk))
                sizes[member.name] = total + len(packer.flush())
            elif member.name == "manifest.json":
                manifest = json.loads(archive.extractfile(member).read())
    save.wait()
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.write_text(json.dumps(sizes))
    return sum(sizes[layer] for layer in manifest[0]["Layers"])


def lock_adds(name: str, image: str) -> tuple[list[str], int]:
    """The packages the workload's lock adds over its stack's lock, and their installed size inside the image."""
    stack = stack_for(WORKLOADS.get(name))
    pins = locked_versions(ROOT / "images" / name / "requirements.lock")
    under = locked_versions(ROOT / stack.lock)
    added = sorted(set(pins) - set(under))
    python = "python" if stack.name == "base" else "python3"
    size = int(docker("run", "--rm", "--entrypoint", python, image, "-c", INSTALLED_SIZE, json.dumps(added)))
    return added, size


def smoke(name: str, image: str) -> dict:
    """`docker run --rm IMAGE run NAME --smoke --cpu`: every line schema-checked, each setup's status and why."""
    done = subprocess.run([DOCKER, "run", "--rm", image, "run", name, "--smoke", "--cpu"], capture_output=True,
                          text=True)
    setups, finished, invalid = [], None, 0
    for line in done.stdout.splitlines():
        try:
            record = parse_record(line)
        except ValueError:
            invalid += 1
            continue
        if isinstance(record, SetupResult):
            reason = record.error or record.info.get("reason") or record.info.get("skip_reason")
            setups.append({"setup": record.setup, "status": record.status, **({"why": reason} if reason else {})})
        elif isinstance(record, RunFinished):
            finished = record.status
    return {"exit": done.returncode, "invalid_lines": invalid, "run": finished, "setups": setups,
            "stderr_tail": done.stderr.strip().splitlines()[-3:]}


def measure(name: str) -> dict:
    image = tag(name)
    info = json.loads(docker("image", "inspect", image))[0]
    row = {"name": name, "image": image, "size": info["Size"], "layers": len(info["RootFS"]["Layers"]),
           "compressed": compressed_size(image)}
    if name not in STACK:
        stack = stack_for(WORKLOADS.get(name)).name
        stack_size = json.loads(docker("image", "inspect", tag(stack)))[0]["Size"]
        added, size = lock_adds(name, image)
        row.update(stack=stack, over_stack=row["size"] - stack_size, lock_adds=added, lock_adds_size=size,
                   ratio=round(row["size"] / (stack_size + size), 3))
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+")
    parser.add_argument("--smoke-only", action="store_true", help="run each workload's smoke inside its image")
    args = parser.parse_args()
    for name in args.names:
        row = {"name": name, "smoke": smoke(name, tag(name))} if args.smoke_only else measure(name)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
