"""What a record line holds exactly: UTC timestamps in one format, every field even when null, a reader
that takes any minor version of its major, and a JSON schema that names its version."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime

from gpubench.schema import SCHEMA_VERSION, Progress, SetupResult, json_schema, parse_record, to_line, utc_now


def test_timestamps_are_utc_to_the_microsecond_whatever_the_local_zone(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        stamp = utc_now()
    finally:
        monkeypatch.undo()
        time.tzset()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", stamp), stamp
    parsed = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert abs((datetime.now(UTC) - parsed).total_seconds()) < 60


def test_a_line_carries_every_field_even_null_ones():
    line = to_line(SetupResult(run_id="r", setup="a", repeat=1, status="error", error="boom"))
    data = json.loads(line)
    assert data["device"] is None and data["duration_s"] is None and data["metrics"] == {}
    assert line.startswith('{"schema_version":')  # ingest.RECORD_START: how readers find a record in mixed text


def test_any_minor_version_of_the_same_major_is_read():
    major = SCHEMA_VERSION.split(".")[0]
    for version in (f"{major}.0", f"{major}.9", major):
        line = json.dumps({"kind": "progress", "schema_version": version, "run_id": "r", "phase": "x", "ts": "t"})
        assert isinstance(parse_record(line), Progress), version


def test_the_json_schema_says_its_version():
    schema = json_schema()
    assert schema["title"] == f"gpubench record v{SCHEMA_VERSION}"
    assert "result" in json.dumps(schema)
