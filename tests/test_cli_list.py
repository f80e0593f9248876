import json

from clirun import gpubench

from gpubench.catalog import WORKLOADS


def test_list_shows_every_study_and_says_which_are_not_written(tmp_path):
    result = gpubench("list", "--json", cwd=tmp_path)
    assert result.code == 0
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["name"] for r in rows] == WORKLOADS.names()  # the catalog's, in its order
    by_name = {r["name"]: r for r in rows}
    assert by_name["train-compile"]["implemented"] is True
    assert by_name["train-compile"]["setups"] == ["eager-sdpa", "compile-sdpa", "eager-eager", "compile-eager"]
    human = gpubench("list", cwd=tmp_path).stdout
    unwritten = [r["name"] for r in rows if not r["implemented"]]
    assert human.count("NOT WRITTEN YET") == len(unwritten)


def test_list_does_not_import_torch_or_workload_code(tmp_path):
    import subprocess
    import sys
    code = ("import sys; from gpubench.cli.main import main\n"
            "try: main(['list'])\nexcept SystemExit: pass\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'boto3')"
            " or m.startswith('gpubench.workloads.')]\n"
            "print('IMPORTED', bad, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert "IMPORTED []" in out.stderr


def test_schema_prints_the_json_schema(tmp_path):
    result = gpubench("schema", cwd=tmp_path)
    schema = json.loads(result.stdout)
    assert "run_started" in json.dumps(schema) and schema["title"].startswith("gpubench record v1")
