"""Page-cache control without root: eviction takes effect (mincore says so), raw reads are timed, mounts named."""

import os

from gpubench.workloads.cold_start import pagecache


def _written(tmp_path, name="blob", size=32 << 20):
    path = tmp_path / name
    with open(path, "wb") as file:
        file.write(os.urandom(size))  # dirty pages, as a checkpoint just written
    return path


def test_eviction_drops_even_a_just_written_file_from_the_page_cache(tmp_path):
    paths = [_written(tmp_path, "a"), _written(tmp_path, "b", 5 << 20)]
    assert pagecache.resident_fraction(paths) > 0.99
    pagecache.evict(paths)
    assert pagecache.resident_fraction(paths) < 0.02


def test_a_sequential_read_reads_every_byte_and_brings_the_files_back(tmp_path):
    paths = [_written(tmp_path, "a"), _written(tmp_path, "b", 5 << 20), tmp_path / "empty"]
    paths[2].write_bytes(b"")
    pagecache.evict(paths)
    done, seconds = pagecache.sequential_read(paths)
    assert done == (32 << 20) + (5 << 20) and seconds > 0
    assert pagecache.resident_fraction(paths) > 0.99


def test_the_filesystem_of_a_path_is_its_longest_mount():
    assert pagecache.filesystem("/proc/self/status")["type"] == "proc"
    assert pagecache.filesystem("/")["mount"] == "/"
