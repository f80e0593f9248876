"""`gpubench`: list, run and store benchmarks on this machine.

stdout carries only machine-readable output (JSON Lines records for `run`); people read stderr.
Bad input is one line on stderr and exit code 2, before anything runs or is written.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from gpubench import exit_codes, extras, run_args
from gpubench.catalog import WORKLOADS
from gpubench.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SETUP_FAILED,
    EXIT_UPLOAD_FAILED,
    CliError,
    check_output_file,
    default_results_dir,
    deliver,
    price_from_launcher,
    run_id_for,
    safe_argv,
    say_skipped,
)
from gpubench.cli.loadgen import loadgen
from gpubench.params import NOISE, folder_name
from gpubench.registry import UnknownName, pick
from gpubench.run_args import RunArgs, split_setups


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=exit_codes.epilog())
@click.version_option(package_name="gpubench")
def cli() -> None:
    """Reproducible GPU benchmarks: the Runcrate studies as pinned, self-describing runs."""


@cli.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per workload.")
def list_cmd(as_json: bool) -> None:
    """The catalog: every study, its setups, the GPUs it needs and its image."""
    rows = [{
        "name": s.name, "implemented": s.implemented, "study": s.study, "setups": list(s.setups),
        "gpus": s.gpus, "gpu_count": s.gpu_count, "image": s.image, "expected_minutes": s.expected_minutes,
        "via": s.via,
    } for s in WORKLOADS]
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        state = "ready" if r["implemented"] else "NOT WRITTEN YET"
        click.echo(f"{r['name']:<{width}}  {state:<15}  {r['image']}")
        click.echo(f"{'':<{width}}  study:  {r['study']}")
        click.echo(f"{'':<{width}}  setups: {', '.join(r['setups'])}")
        click.echo(f"{'':<{width}}  gpus:   {r['gpus']}; about {r['expected_minutes']:g} min" + (
            f"; runs via {r['via']}" if r["via"] != "job" else ""))


@cli.command()
@click.argument("workload")
def show(workload: str) -> None:
    """One study: its setups, config fields and defaults, metrics, GPUs and image."""
    import dataclasses

    from gpubench import config_fields
    from gpubench.run import utilisation
    from gpubench.schema import PEAK_MEMORY
    from gpubench.workload import load

    spec = WORKLOADS.get(workload)
    definition = load(spec)
    notes = definition.setup_notes
    lines = [f"{spec.name}: {spec.title}", f"study:  {spec.study}",
             f"gpus:   {spec.gpus}; at least {spec.min_gpu_memory_gb:g} GB; about {spec.expected_minutes:g} min",
             f"image:  {spec.image}", "", "setups:"]
    lines += [f"  {setup:<24} {notes.get(setup, '')}".rstrip() for setup in spec.setups]
    lines += ["", "config (--set NAME=VALUE; --smoke sets the values in brackets):"]
    for field in dataclasses.fields(definition.config):
        smoke = f"  [{definition.smoke[field.name]!r}]" if field.name in definition.smoke else ""
        declared = config_fields.declaration(field)
        lines.append(f"  {field.name:<24} {field.default!r}{smoke}")
        allowed = config_fields.allowed(definition.config, field.name)
        lines.append(f"      {declared.meaning if declared else ''}. Allowed: {allowed}")
    lines += ["", "metrics:"]
    for name, metric in definition.metrics.items():
        better = f", {metric.better} is better" if metric.better else ""
        lines.append(f"  {name:<24} {metric.unit}{better}" + (f": {metric.help}" if metric.help else ""))
    if spec.cost:
        from gpubench.pricing import cost_metric_names

        lines.append(f"  + {cost_metric_names(spec.cost)[0]} from {spec.cost.metric} and --price")
    basis = spec.energy_basis
    if basis:
        lines.append(f"  + j_per_{basis.unit.replace(' ', '_')} from {basis.metric} and the GPU's energy")
    lines.append(f"  + on every result: peak memory ({PEAK_MEMORY}, GiB), utilisation and energy "
                 f"({', '.join(utilisation.METRICS)}), and the typed device, dtype, utilisation and verdict")
    if spec.weights:
        lines += ["", "weights and data (--weights random builds the models from their configs):"]
        lines += [f"  {repo}" for repo in spec.weights]
    click.echo("\n".join(lines))


@cli.command()
def schema() -> None:
    """The JSON Schema of the records `gpubench run` prints."""
    from gpubench.schema import json_schema

    click.echo(json.dumps(json_schema(), indent=2))


JSON_OPTION = click.option("--json", "as_json", is_flag=True,
                           help="JSON for machines (the default when stdout is not a terminal).")


@cli.command()
@JSON_OPTION
def env(as_json: bool) -> None:
    """The environment block a run on this machine would record."""
    from gpubench.run import environment, live
    from gpubench.servers import engines

    block = environment.collect(engines=engines.versions(engines.VERSIONS))
    if live.wants_records(as_json):
        click.echo(block.model_dump_json(indent=2))
        return
    gpus = ", ".join(f"{g.name} ({g.memory_gb:g} GB)" if g.memory_gb else g.name for g in block.gpus) or "none found"
    rows = [("gpus", gpus), ("driver / CUDA", f"{block.driver_version or '-'} / {block.cuda_version or '-'}"),
            ("cpu", f"{block.cpu_model or '?'}, {block.cpu_cores or '?'} cores"
                    + (f", {block.cpus_usable} for this process" if block.cpus_usable not in (None, block.cpu_cores)
                       else "")),
            ("ram", f"{block.ram_gb:g} GB" if block.ram_gb else "?"), ("python", block.python),
            ("platform", block.platform), ("git commit", block.git_commit or "-"), ("image", block.image or "-")]
    rows += [(name, version or "not installed") for name, version in block.libraries.items()]
    width = max(len(name) for name, _ in rows)
    click.echo("\n".join(f"{name:<{width}}  {value}" for name, value in rows))


@cli.command()
@JSON_OPTION
def images(as_json: bool) -> None:
    """Each workload's image reference (the launcher's default --image)."""
    from gpubench.images import image_rows
    from gpubench.run import live

    rows = image_rows()
    if live.wants_records(as_json):
        for row in rows:
            click.echo(json.dumps(row))
        return
    width = max(len(row["name"]) for row in rows)
    for row in rows:
        pins = ", ".join(f"{dep} {version or '?'}" for dep, version in row["locked"].items())
        click.echo(f"{row['name']:<{width}}  {row['image']}\n{'':<{width}}  {row['folder']}: {pins}")


@cli.command(epilog=exit_codes.epilog())
@click.argument("workload")
@run_args.option("setups")
@run_args.option("smoke")
@run_args.option("repeats")
@run_args.option("price")
@run_args.option("store")
@run_args.option("results_dir")
@run_args.option("overrides")
@run_args.option("weights")
@run_args.option("run_id")
@click.option("--docker", is_flag=True, help="Run the workload's image on this machine through Docker.")
@click.option("--image", default=None, help="With --docker: the image to run (default: the catalog's).")
@click.option("--cache-volume", default="gpubench-cache", show_default=True,
              help="With --docker: the weights cache volume.")
@click.option("--gpus", default=None, metavar="all|none|N|IDS",
              help="With --docker: the GPUs the container gets, as docker run --gpus reads them: all (default), none"
                   " (the CPU), a count, device ids (0,2 or device=GPU-<uuid>), with capabilities=compute,utility.")
@run_args.option("on_cpu")
@run_args.option("as_json")
@click.option("--check", "check_only", is_flag=True,
              help="Only check the arguments and the config (--set) against the workload's declarations: exit 0 or 2,"
                   " nothing runs or is written (gpubench-launch runs this before any API request).")
@click.option("--verbose", "-v", is_flag=True,
              help="Also show the workers' own output (library warnings, server logs, tracebacks), which run.log"
                   " always keeps.")
def run(workload, setups, smoke, repeats, price, store, results_dir, overrides, weights, run_id, docker, image,
        cache_volume, gpus, on_cpu, as_json, check_only, verbose) -> None:
    """Run WORKLOAD: each setup in a fresh process; a run folder on disk, and on stdout a live view on a
    terminal or JSON Lines records for a pipe or file (--json forces records)."""
    import contextlib

    from gpubench import stores
    from gpubench import weights as weight_store
    from gpubench.run import live
    from gpubench.run.runner import Runner, RunRequest
    from gpubench.run.stop_signal import terminate_as_interrupt
    from gpubench.servers import engines
    from gpubench.workload import build_config, load, parse_overrides

    spec = WORKLOADS.get(workload)
    if check_only:
        pass  # the machine that runs it brings the extras (the image)
    elif docker:
        extras.require("docker", "gpubench run --docker", ("docker",))
    elif spec.extra:
        extras.require(spec.extra, f"gpubench run {workload}", spec.extra_modules, torch="torch" in spec.dependencies)
    repeats, weights = repeats or 1, weights or "auto"
    setups = pick(f"setup of {workload}", list(split_setups(setups)), spec.setups) if setups else list(spec.setups)
    if not setups:
        raise CliError(f"--setups names no setup; valid: {', '.join(spec.setups)}")
    if image and not docker:
        raise CliError("--image applies only with --docker (the image to run); add --docker or drop --image")
    if gpus is not None and not docker:
        raise CliError("--gpus applies only with --docker (the container's GPUs); add --docker or drop --gpus")
    if price is None and not check_only:
        price = price_from_launcher()
    target = stores.parse_store(store)
    run_id = run_id_for(run_id, workload)
    definition = load(spec)
    config = build_config(definition, smoke, parse_overrides(list(overrides)))  # --docker too: the image's is the same
    if check_only:
        click.echo(f"gpubench: {workload}: arguments and config are valid", err=True)
        return
    results_dir = results_dir or default_results_dir()
    stores.check_local_dir(results_dir)
    weights_note = None
    if not docker:
        needed = definition.weights(setups, config)
        if smoke and weights == "auto" and any(weight_store.locate(repo) is None for repo in needed):
            # A smoke run tests the code path: without the study's weights it builds the models at smoke size.
            missing = [repo for repo in needed if weight_store.locate(repo) is None]
            weights = "random"
            weights_note = f"--smoke: random weights at smoke size (not on this machine: {', '.join(missing)})"
        weight_paths = weight_store.resolve(workload, needed, weights)
        if not smoke and not on_cpu:
            _refuse_full_size_without_gpu(spec)
    else:
        from gpubench.run.docker_run import parse_gpus

        try:
            gpus = parse_gpus(gpus or "all")
        except ValueError as exc:
            raise CliError(str(exc)) from None
    if target:
        target.check_writable(run_id)
    if docker:  # the engine and the image (pulled now if missing), before any folder is made
        image = _docker_image(spec, image)

    terminate_as_interrupt()
    root = Path(results_dir).absolute()  # the folders made for this run go again if its container never starts
    new_root = next((folder for folder in reversed([root, *root.parents]) if not folder.exists()), None)
    view = None if live.wants_records(as_json) else live.LiveView()
    run_dir = stores.RunDir.create(results_dir, run_id, echo=view)
    with view or contextlib.nullcontext():
        if weights_note:
            run_dir.log(weights_note)
            if view:
                view.print(weights_note)
            else:
                click.echo(weights_note, err=True)
        if docker:
            args = RunArgs(workload=workload, setups=tuple(setups), smoke=smoke, repeats=repeats,
                           overrides=tuple(overrides), weights=weights, price=price, run_id=run_id, on_cpu=on_cpu)
            outcome = _run_docker(spec, run_dir, image, cache_volume, args, gpus, new_root)
        else:
            request = RunRequest(spec=spec, setups=setups, repeats=repeats, smoke=smoke, run_id=run_id,
                                 config=config, price_usd_per_hour=price, weights=weights,
                                 weight_paths={k: str(v) if v else None for k, v in weight_paths.items()},
                                 engine_versions=engines.versions(spec.engines))
            runner = Runner(request, run_dir, echo=view.print if view else None, verbose=verbose)
            outcome = runner.run(argv=safe_argv(), store_url=target.url if target else None).status
    sys.exit(deliver(run_dir, target, outcome))


def _refuse_full_size_without_gpu(spec) -> None:
    """The study's full size on a CPU runs for hours: ask for an explicit choice before starting it."""
    from gpubench.run import environment

    if spec.gpu_count and not environment.gpu_names():
        raise CliError(f"no GPU found (nvidia-smi): the full-size {spec.name} study would run for hours on the CPU;"
                       " use --smoke to test the code path, or --cpu to run it on the CPU anyway")


def _docker_image(spec, image: str | None) -> str:
    """The image to run (--image, else the catalog's), there on the engine: pulled when missing. No engine, or a
    failed pull, is one line before anything is written."""
    from gpubench.images import image_ref
    from gpubench.run.docker_run import DockerUnavailable, connect, ensure_image

    image = image or image_ref(spec)
    try:
        client = connect()
        try:
            ensure_image(client, image, lambda line: click.echo(line, err=True))
        finally:
            client.close()
    except DockerUnavailable as exc:
        raise CliError(str(exc)) from None
    return image


def _run_docker(spec, run_dir, image, cache_volume, args, gpus, new_root: Path | None) -> str:
    """The image's own `gpubench run`, its stdout fed through the same record handling as a local run."""
    from gpubench.run.docker_run import DockerUnavailable, run_in_docker
    from gpubench.run.ingest import RecordStream

    run_dir.write_config({"workload": spec.name, "via": "docker", "image": image, "cache_volume": cache_volume,
                          "gpus": gpus or "none", "command": ["gpubench", *args.to_argv()]})
    stream = RecordStream(run_dir)
    passthrough = {"GPUBENCH_LAUNCHER": "docker", "GPUBENCH_IMAGE_DIGEST": os.environ.get("GPUBENCH_IMAGE_DIGEST", "")}
    try:
        exit_code = run_in_docker(spec, args, image=image, cache_volume=cache_volume,
                                  env={k: v for k, v in passthrough.items() if v}, gpus=gpus,
                                  on_stdout_line=stream.feed, on_stderr_line=lambda line: _show_and_log(run_dir, line),
                                  run_folder=run_dir.path)
    except DockerUnavailable as exc:  # the engine went away, or the image cannot be pulled
        run_dir.close()
        if not stream.lines:
            _remove_unstarted_run_dir(run_dir.path, new_root)
        raise CliError(str(exc)) from None
    except KeyboardInterrupt:
        return "interrupted"
    if stream.finished is None:
        run_dir.log(f"[gpubench] container exited with {exit_code} before its run finished")
        return "failed"
    return stream.outcome


def _remove_unstarted_run_dir(path: Path, new_root: Path | None) -> None:
    """The container never printed a line: leave no half-written run folder behind, nor the results folder (up to
    `new_root`, the highest folder this run made) when it is empty."""
    for child in path.iterdir():
        child.unlink()
    path.rmdir()
    folder = path.absolute().parent
    while new_root is not None and folder.is_relative_to(new_root) and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def _show_and_log(run_dir, line: str) -> None:
    """The container's human text: on our stderr as a local run shows it, and in run.log."""
    run_dir.log(line)
    click.echo(line, err=True)


@cli.command()
@click.argument("run_dirs", nargs=-1, type=click.Path(file_okay=False, path_type=Path))
@click.option("--store", default=None, metavar="URL", help="s3://bucket/prefix (default: where the run meant to go).")
@click.option("--results-dir", default=None, help="Where to look for pending runs when none are named.")
def upload(run_dirs, store, results_dir) -> None:
    """Send runs whose upload failed (or any run folder) to S3; idempotent, verified by checksum."""
    from gpubench import stores

    explicit = stores.parse_store(store)
    if not run_dirs:
        root = Path(results_dir or default_results_dir())
        pending = (p for p in root.glob("*/") if (stores.upload_state(p) or {}).get("status") == "pending")
        run_dirs = tuple(sorted(pending))
        if not run_dirs:
            click.echo(f"nothing pending under {root}", err=True)
            return
    plan = []
    for run_dir in run_dirs:
        if not (run_dir / stores.RECORDS_FILE).is_file():
            raise CliError(f"{run_dir} is not a gpubench run folder (no {stores.RECORDS_FILE})")
        target = explicit or stores.parse_store((stores.upload_state(run_dir) or {}).get("store"))
        if target is None:
            raise CliError(f"{run_dir}: no store recorded for this run; pass --store s3://bucket/prefix")
        plan.append((run_dir, target))
    failed = 0
    for run_dir, target in plan:
        ok, message = stores.deliver(run_dir, target)
        click.echo(message, err=True)
        failed += not ok
    if failed:
        sys.exit(EXIT_UPLOAD_FAILED)


cli.add_command(loadgen)


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--html", "html_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write an HTML page with the plots embedded (opens with no network).")
def report(paths, html_file) -> None:
    """The studies' tables from stored runs: run folders, a results folder or an s3://bucket/prefix."""
    from gpubench.results import report as reports
    from gpubench.results import stored_runs
    from gpubench.stores import StoreError

    def progress(path, done, total):
        if total > 5 and (done == total or done % 10 == 0):
            click.echo(f"gpubench: read {done}/{total} runs under {path}", err=True)

    if html_file:
        extras.require("report", "gpubench report --html", ("matplotlib",))
        check_output_file(html_file, "--html")
    try:
        runs = stored_runs.discover(list(paths), on_progress=progress)
        say_skipped(runs)
        built = reports.build(runs)
    except (stored_runs.StoredRunError, StoreError, ValueError) as exc:
        raise CliError(str(exc)) from None
    for workload in built:
        partial = sorted({row.gpu for row in workload.rows if row.partial})
        if partial:
            click.echo(f"gpubench: {workload.spec.name}: partial runs (no run_finished) on {', '.join(partial)};"
                       " their rows are shown as they are", err=True)
    if html_file:
        from gpubench.results.report_html import render

        page = render(built)
        try:
            html_file.write_text(page)
        except OSError as exc:
            raise CliError(f"--html {html_file}: {exc.strerror or exc}") from None
    click.echo(reports.markdown(built))
    if html_file:
        click.echo(f"gpubench: wrote {html_file}", err=True)


@cli.command()
@click.argument("sources", nargs=-1, required=True)
@click.option("--out", "out", type=click.Path(file_okay=False), callback=folder_name, required=True,
              help="The site's folder; an existing site there is updated (only what new runs touch).")
def site(sources, out) -> None:
    """A static site from stored runs (folders or s3://bucket/prefix): an index and a page per study."""
    from gpubench.results import site as sites
    from gpubench.results import stored_runs

    extras.require("report", "gpubench site", ("matplotlib",))
    try:
        sites.check_out(out)
        built = sites.build(list(sources), out)
    except (stored_runs.StoredRunError, sites.SiteError) as exc:
        raise CliError(str(exc)) from None
    say_skipped(built.runs)
    click.echo(f"gpubench: site in {out}: read {len(built.read)} runs, wrote {len(built.rendered)} pages"
               f" and {len(built.plots)} plots; open {out / 'index.html'}", err=True)


@cli.command()
@click.argument("study")
@click.argument("sources", nargs=-1, required=True)
@click.option("--metric", default=None, help="Rank on this metric instead of cost per unit of the study's headline.")
@click.option("--slo", default=None, metavar="TARGET",
              help="Serving studies: only load levels that met this latency target count: server (MLPerf 8B,"
                   " p99 TTFT 2000 / TPOT 100 ms), interactive (500 / 30) or ttft=MS,tpot=MS.")
def recommend(study, sources, metric, slo) -> None:
    """Which GPU to rent for STUDY, from stored runs (folders or s3://bucket/prefix): cost per unit, ties, energy."""
    from gpubench.cli.recommend import run

    run(study, list(sources), metric, slo)


@cli.command()
@click.argument("run_a", type=click.Path(path_type=Path))
@click.argument("run_b", type=click.Path(path_type=Path))
@click.option("--fail-on", "fail_on", multiple=True, metavar="METRIC",
              help="Exit 1 when this metric got worse beyond noise in RUN_B (repeatable), e.g. to gate CI.")
@click.option("--noise", type=NOISE, default=0.05, show_default=True,
              help="The smallest relative difference that counts, whatever the runs' own spread.")
@click.option("--all", "show_all", is_flag=True, help="Show metrics within noise too.")
def compare(run_a, run_b, fail_on, noise, show_all) -> None:
    """RUN_B against RUN_A (run folders of one workload): ratio per setup and metric, beyond noise or not."""
    from gpubench.results import stored_runs
    from gpubench.results.compare import compare as compare_runs
    from gpubench.results.compare import regressions, unverified
    from gpubench.results.compare import verdicts as compare_verdicts
    from gpubench.results.summary import SMOKE_BANNER, fmt

    try:
        a, b = stored_runs.load(run_a), stored_runs.load(run_b)
        say_skipped([a, b])
        rows = compare_runs(a, b, floor=noise)
    except (stored_runs.StoredRunError, ValueError) as exc:
        raise CliError(str(exc)) from None
    if a.started.run_id == b.started.run_id:
        raise CliError(f"{run_a} and {run_b} are the same run ({a.started.run_id}): a run compared with itself "
                       "shows no difference")
    known = {row.metric for row in rows}
    unknown = [m for m in fail_on if m not in known]
    if unknown:
        raise CliError(f"--fail-on {unknown[0]}: no such metric in both runs; valid: {', '.join(sorted(known))}")
    for run in (a, b):
        if run.partial:
            click.echo(f"gpubench: {run.path} is a partial run (no run_finished): compared on the rows it has",
                       err=True)
        if run.started.smoke:
            click.echo(f"gpubench: {run.path} is a smoke run ({SMOKE_BANNER})", err=True)
    if any(row.n < 2 for row in rows):
        click.echo("gpubench: n=1 (one repeat) on a side: no spread is known, so any difference gets no verdict"
                   " (never within noise); run --repeats 3 or more to judge it", err=True)
    click.echo(f"| setup | metric | A | B | B/A | verdict (noise ±{noise:.0%} or 2 CV) |\n|---|---|---|---|---|---|")
    for row in rows:
        if show_all or row.verdict != "within noise":
            ratio = f"{row.ratio:.3f}" if row.ratio is not None else ""
            click.echo(f"| {row.setup} | {row.metric} ({row.unit}) | {fmt(row.a)} | {fmt(row.b)} | {ratio} |"
                       f" {row.verdict} |")
    if not any(show_all or row.verdict != "within noise" for row in rows):
        click.echo(f"gpubench: no metric of the {len(rows)} compared differs beyond noise (--all lists them)",
                   err=True)
    for row in unverified(rows, list(fail_on)):
        click.echo(f"gpubench: {row.setup} {row.metric}: {fmt(row.a)} -> {fmt(row.b)} {row.unit} with n=1, no spread"
                   " known: not counted as a regression", err=True)
    judged = compare_verdicts(a, b)
    if judged:
        click.echo("\n| setup | bound by (A) | bound by (B) |\n|---|---|---|")
        for setup, in_a, in_b in judged:
            click.echo(f"| {setup} | {in_a or '-'} | {in_b or '-'} |")
    worse = regressions(rows, list(fail_on))
    for row in worse:
        click.echo(f"gpubench: {row.setup} {row.metric} regressed: {fmt(row.a)} -> {fmt(row.b)} {row.unit}"
                   f" (beyond ±{row.noise:.0%})", err=True)
    if worse:
        sys.exit(EXIT_SETUP_FAILED)


def main(argv: list[str] | None = None) -> None:
    from gpubench.stores import StoreError
    from gpubench.weights import MissingWeights
    from gpubench.workload import ConfigError, NotImplementedWorkload, WorkloadError

    try:
        cli.main(args=argv, prog_name="gpubench", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("gpubench: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        click.echo(f"gpubench: error: {exc.format_message()}".splitlines()[0], err=True)
        sys.exit(EXIT_BAD_INPUT)
    except (UnknownName, StoreError, ConfigError, NotImplementedWorkload, WorkloadError, MissingWeights,
            extras.MissingExtra) as exc:
        click.echo(f"gpubench: error: {exc}".splitlines()[0], err=True)
        sys.exit(EXIT_BAD_INPUT)
    sys.exit(EXIT_OK)
