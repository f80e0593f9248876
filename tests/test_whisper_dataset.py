"""The study's data set as the image or a volume holds it: the TED set's parquet files (audio bytes +
text), found through $GPUBENCH_WEIGHTS_DIR/datasets/<org>/<name>, decoded and scored end to end."""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from clirun import gpubench

from gpubench.workloads.whisper import audio as whisper_audio


def write_split(folder: Path, split: str, names: list[str]) -> None:
    """One parquet file laid out as distil-whisper/tedlium-long-form's: audio {bytes, path}, text."""
    source = whisper_audio.audioeval_folder()
    rows = [{"audio": {"bytes": (source / f"{n}.wav").read_bytes(), "path": f"{n}.wav"},
             "text": (source / f"{n}.txt").read_text().strip(), "speaker_id": n} for n in names]
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / f"{split}-00000-of-00001-0123456789abcdef.parquet")


def test_the_ted_set_is_read_from_the_weights_dir_and_scored(tmp_path):
    data = tmp_path / "weights" / "datasets" / "distil-whisper" / "tedlium-long-form" / "data"
    write_split(data, "test", ["quick_brown_fox", "hello_world"])
    write_split(data, "validation", ["counting"])
    result = gpubench("run", "whisper", "--cpu", "--setups", "fw-large-v3-int8-b16", "--set", "size=tiny",
                      "--set", "cpu_threads=1", "--set", "warmup_audio_s=1", cwd=tmp_path,
                      env={"GPUBENCH_WEIGHTS_DIR": str(tmp_path / "weights")})
    assert result.code == 0, result.stderr[-2000:]
    row = next(r for r in result.records() if r["kind"] == "result")
    assert row["status"] == "ok", row["error"]
    m = {k: v["value"] for k, v in row["metrics"].items()}
    assert row["info"]["audio"] == "datasets/distil-whisper/tedlium-long-form (test)"
    assert row["info"]["clips"] == 2  # the test split only
    assert m["reference_words"] == 11 and m["wer_pct"] <= 10
    assert abs(m["audio_s"] - (2.888625 + 1.143375)) < 0.01
    assert row["info"]["transcript_start"].strip().startswith("The quick brown fox")


def test_without_the_data_set_nothing_runs_and_the_message_names_it(tmp_path):
    result = gpubench("run", "whisper", "--cpu", "--setups", "fw-large-v3-int8-b16", "--set", "size=tiny",
                      cwd=tmp_path, env={"GPUBENCH_WEIGHTS_DIR": str(tmp_path), "HF_HUB_CACHE": str(tmp_path)})
    assert result.code == 2 and "datasets/distil-whisper/tedlium-long-form" in result.stderr
    assert not result.stdout.strip()
