# Sourced (bash) at the start of every device call that serves with vLLM: `source benchmarks/gpu_vllm_env.sh`.
#
# tools/vllm_h200_pieces.py cuts vLLM and its missing dependencies into pieces, one folder per call
# (.vllm-h200/c1, c2, ...: docs/gpu-serving.md). A call keeps only the ignored paths it carries, while /tmp
# survives as long as the machine stays warm, so each call copies what it carries to /tmp/vllm-pieces. The call
# that completes the set verifies every piece against the manifest, unpacks them to /tmp/site (with python3:
# the device has no zstd) and byte-compiles the tree. Every call gets the environment vLLM needs here and the
# working tree's gpubench in the device's python3, reinstalled when the working tree's code changed.
# It prints one line. VLLM_READY=1 afterwards when /tmp/site holds the complete, verified tree.
# GPU_VLLM_PIECES_DIR, GPU_VLLM_PIECES_TMP and GPU_VLLM_SITE move those three places (for the tests; not
# VLLM_*, which vLLM warns about as unknown settings).
_vllm_from=${GPU_VLLM_PIECES_DIR:-.vllm-h200} _vllm_tmp=${GPU_VLLM_PIECES_TMP:-/tmp/vllm-pieces}
_vllm_site=${GPU_VLLM_SITE:-/tmp/site}
export PYTHONPATH=$_vllm_site PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
# no flashinfer in the pieces: vLLM 0.26.0's top-k/top-p sampler check imports it unguarded at model load
export VLLM_USE_FLASHINFER_SAMPLER=0
mkdir -p "$_vllm_tmp"
for _f in "$_vllm_from"/c*/piece* "$_vllm_from"/c*/manifest.json; do
  [ -f "$_f" ] && cp "$_f" "$_vllm_tmp"/
done
_vllm_state=$(python3 - "$_vllm_tmp" "$_vllm_site" <<'PY'
import hashlib, io, json, lzma, shutil, subprocess, sys, tarfile, time
from pathlib import Path

pieces, site = Path(sys.argv[1]), Path(sys.argv[2])
if not (pieces / "manifest.json").is_file():
    print("no vLLM pieces here yet (carry a .vllm-h200/c<N> folder)")
    sys.exit(1)
manifest = json.loads((pieces / "manifest.json").read_text())
name = f"vllm {manifest['vllm']}"
done = site / f".unpacked-{manifest['stream']['sha256']}"
if done.exists():
    print(f"{name} ready in {site}")
    sys.exit(0)
paths = [pieces / Path(p["name"]).name for p in manifest["pieces"]]
here = [p for p, piece in zip(paths, manifest["pieces"]) if p.is_file() and p.stat().st_size == piece["bytes"]]
if len(here) < len(paths):
    print(f"{name}: pieces {len(here)}/{len(paths)} here ({', '.join(p.name for p in here) or 'none'})")
    sys.exit(1)
t = time.monotonic()
whole = hashlib.sha256()
for path, piece in zip(paths, manifest["pieces"]):
    digest = hashlib.sha256(data := path.read_bytes())
    whole.update(data)
    if digest.hexdigest() != piece["sha256"]:
        path.unlink()  # the next call that carries it brings a good copy
        print(f"{name}: {path.name} does not match its sha256 in the manifest: removed")
        sys.exit(3)
if whole.hexdigest() != manifest["stream"]["sha256"]:
    print(f"{name}: the joined pieces do not match the stream's sha256 in the manifest")
    sys.exit(3)


class Joined(io.RawIOBase):
    """The pieces read back to back as one stream."""

    def __init__(self, files):
        self.files, self.current = iter(files), None

    def readable(self):
        return True

    def readinto(self, buffer):
        while True:
            if self.current is None:
                path = next(self.files, None)
                if path is None:
                    return 0
                self.current = open(path, "rb")
            if count := self.current.readinto(buffer):
                return count
            self.current.close()
            self.current = None


shutil.rmtree(site, ignore_errors=True)
site.mkdir(parents=True)
try:
    with lzma.open(io.BufferedReader(Joined(paths), 1 << 20)) as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
        tar.extractall(site, filter="data")
except (OSError, EOFError, lzma.LZMAError, tarfile.TarError) as error:
    print(f"{name}: UNPACK FAILED: {error}")
    sys.exit(3)
unpacked = time.monotonic() - t
subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "16", str(site)],
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
done.touch()
size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
print(f"{name}: {len(paths)}/{len(paths)} pieces verified, unpacked in {unpacked:.0f} s, "
      f"compiled in {time.monotonic() - t - unpacked:.0f} s; {site} {size / 1e6:.0f} MB")
PY
)
# shellcheck disable=SC2181
if [ $? -eq 0 ]; then VLLM_READY=1; else VLLM_READY=0; fi
# the working tree's gpubench (and any carried wheels), installed again only when its code changed
source "$(dirname "${BASH_SOURCE[0]}")/gpu_python_env.sh" >"$_vllm_tmp"/python-env.txt 2>&1
_gpubench_state=$(tail -n 1 "$_vllm_tmp"/python-env.txt)
echo "gpu_vllm_env: $_vllm_state; ${_gpubench_state#gpu_python_env: }"
unset _f _vllm_from _vllm_tmp _vllm_site _vllm_state _gpubench_code _gpubench_state
