"""A negative energy, power, price or peak memory is damage, refused at the record boundary as NaN is: the line is
skipped and named by every reader, so a negative figure is never shown and never wins "least energy". A difference
in the same unit as an amount (peak_mem_over_lora_gib, GiB) may be negative and is kept."""

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from gpubench.cli.main import cli
from gpubench.schema import Metric, SetupResult, parse_record, to_line, unreadable

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from synthetic_runs import write_run  # noqa: E402

DAY0 = datetime(2026, 11, 1, tzinfo=UTC)


def result_line(metrics: dict[str, dict]) -> str:
    line = json.loads(to_line(SetupResult(run_id="r", setup="b1", repeat=1, status="ok")))
    return json.dumps({**line, "metrics": metrics})


@pytest.mark.parametrize(("name", "unit"), [("energy_j", "J"), ("j_per_image", "J/image"), ("avg_power_w", "W"),
                                            ("usd_per_1k_images", "USD/1k images"),
                                            ("1k_images_per_usd", "1k images/USD")])
def test_a_negative_amount_is_no_record(name, unit):
    line = result_line({name: {"value": -3.5, "unit": unit}})
    assert parse_record(line) is None
    assert unreadable(line) == f"metrics.{name}: -3.5 {unit}: an energy, power or price cannot be negative"
    with pytest.raises(ValidationError):
        Metric(value=-3.5, unit=unit)
    assert parse_record(result_line({name: {"value": 0.0, "unit": unit}})) is not None


def test_a_negative_peak_memory_is_no_record_but_a_negative_difference_in_gib_is_one():
    line = result_line({"peak_mem_gib": {"value": -1.0, "unit": "GiB"}})
    assert parse_record(line) is None
    assert unreadable(line) == "peak_mem_gib -1 GiB: a peak memory cannot be negative"
    kept = parse_record(result_line({"peak_mem_over_lora_gib": {"value": -1.0, "unit": "GiB"},
                                     "saved_s_per_image": {"value": -0.2, "unit": "s"}}))
    assert kept.metrics["peak_mem_over_lora_gib"].value == -1.0 and kept.metrics["saved_s_per_image"].value == -0.2


def test_a_negative_energy_cannot_win_least_energy(tmp_path):
    root = tmp_path / "store"
    values = [{"images_per_s": 7.0, "j_per_image": 400.0}, {"images_per_s": 7.1, "j_per_image": 401.0}]
    write_run(root / "h200", "sdxl", "NVIDIA H200", 3.5, DAY0, {"compile-b4": values}, progress=1)
    records = write_run(root / "h100", "sdxl", "NVIDIA H100 80GB HBM3", 2.5, DAY0, {"compile-b4": [
        {"images_per_s": 4.9, "j_per_image": 299.0}, {"images_per_s": 5.0, "j_per_image": 300.0}]},
        progress=1) / "results.jsonl"
    text = records.read_text()
    written = '"j_per_image":{"value":299.0,"unit":"J/image"'
    assert written in text
    records.write_text(text.replace(written, '"j_per_image":{"value":-50.0,"unit":"J/image"'))
    result = CliRunner().invoke(cli, ["recommend", "sdxl", str(root)])
    assert result.exit_code == 0, result.output
    assert "least energy: NVIDIA H200 (compile-b4)" in result.stdout
    assert "-50" not in result.stdout
    [line] = [n for n, text in enumerate(records.read_text().splitlines(), 1) if '"value":-50.0' in text]
    assert (f"gpubench:   {records}:{line}: metrics.j_per_image: -50 J/image: an energy, power or price cannot be"
            " negative") in result.stderr.splitlines()
