"""ingest in process: whole lines from fragments (counted), records to results.jsonl exactly as printed
and to the callback, everything else to run.log untouched, another major version kept as text, and a
cut record mended only within MEND_WITHIN_LINES lines."""

from __future__ import annotations

import io

from gpubench.run.ingest import MEND_WITHIN_LINES, LineAssembler, RecordStream
from gpubench.schema import SCHEMA_VERSION, Environment, RunFinished, RunStarted, SetupResult, to_line
from gpubench.stores import RunDir


def started():
    return RunStarted(run_id="r", workload="w", study="s", setups=["a"], repeats=1, smoke=True, config={},
                      environment=Environment(python="3", platform="p"))


def result(**info):
    return SetupResult(run_id="r", setup="a", repeat=1, status="ok", info=info)


def stream_in(tmp_path):
    seen = []
    run_dir = RunDir.create(tmp_path, f"r{len(list(tmp_path.iterdir()))}", echo=io.StringIO())
    return RecordStream(run_dir, on_record=seen.append), seen


def files(stream):
    stream.run_dir.close()
    path = stream.run_dir.path
    return (path / "results.jsonl").read_text().splitlines(), (path / "run.log").read_text().splitlines()


def test_fragments_become_counted_lines():
    lines = []
    assembler = LineAssembler(lines.append)
    for fragment in ("ab", "c\nd", "", "e\n\nf"):
        assembler.feed(fragment)
    assert (lines, assembler.lines) == (["abc", "de", ""], 3)
    assembler.flush()
    assembler.flush()  # nothing left: no empty line
    assert (lines, assembler.lines) == (["abc", "de", "", "f"], 4)


def test_records_go_to_the_file_and_the_callback_text_to_the_log_untouched(tmp_path):
    stream, seen = stream_in(tmp_path)
    first, last = started(), RunFinished(run_id="r", status="ok", duration_s=1.0, summary=[])
    ok = result(note={"schema_version": "nested, not a record start"})
    texts = ["  indented text with trailing spaces  ", "ends with X", "ends with a tab\t"]
    assert stream.feed(to_line(first) + "\r\n") == first
    for text in texts:
        assert stream.feed(text) is None
    assert stream.feed("\r" + to_line(ok)) == ok  # a carriage return before: the record still comes whole
    assert stream.feed(to_line(last)) == last
    assert (stream.started, stream.results, stream.finished, stream.outcome) == (first, [ok], last, "ok")
    assert seen == [first, ok, last] and stream.lines == 6
    records, log = files(stream)
    assert records == [to_line(first), to_line(ok), to_line(last)]
    assert log == [*texts, ""]  # the "\r" before the record, on a line of its own


def test_text_right_before_a_record_goes_to_the_log(tmp_path):
    stream, _ = stream_in(tmp_path)
    line = to_line(result())
    assert stream.feed("x" + line) is not None
    records, log = files(stream)
    assert records == [line]
    assert log == ["x"]


def test_a_run_without_its_last_record_is_incomplete(tmp_path):
    stream, _ = stream_in(tmp_path)
    assert (stream.started, stream.finished, stream.results, stream.lines) == (None, None, [], 0)
    stream.feed(to_line(started()))
    assert stream.outcome == "incomplete" and stream.finished is None


def test_another_major_version_is_kept_as_text(tmp_path):
    stream, seen = stream_in(tmp_path)
    line = to_line(result()).replace(f'"schema_version":"{SCHEMA_VERSION}"', '"schema_version":"2.0"')
    assert stream.feed(line) is None and seen == []
    records, log = files(stream)
    said = f"[gpubench] unsupported schema_version '2.0' (this reader: {SCHEMA_VERSION}): {line}"
    assert records == [] and log == [said]


def cut_record(tmp_path, noise_lines):
    record = to_line(result(text="x" * 300))
    cut = record.index(',"device"')  # between two fields (other output inside a string would stay there)
    stream, seen = stream_in(tmp_path)
    stream.feed(record[:cut] + "noise 0")
    for i in range(1, noise_lines):
        stream.feed(f"noise {i}")
    stream.feed(record[cut:])
    records, log = files(stream)
    return record, records, log


def test_a_cut_record_is_mended_within_the_window(tmp_path):
    record, records, log = cut_record(tmp_path, MEND_WITHIN_LINES)  # the head's line and 19 more lines
    assert records == [record]
    assert f"noise {MEND_WITHIN_LINES - 1}" in log


def test_a_cut_record_is_not_mended_beyond_the_window(tmp_path):
    record, records, log = cut_record(tmp_path, MEND_WITHIN_LINES + 1)
    assert records == [] and record[record.index(',"device"'):] in log
