"""`gpubench loadgen`: the load generator alone, against any OpenAI-compatible endpoint.

It prints the records a `gpubench run` prints (run_started, progress, one result for the setup
u{users} or r{rate}, run_finished) and writes the same run folder, with $ per 1M output tokens from
--price like the serving workloads. The server is whatever the URL points at, so the environment
block describes this machine (the client's), not necessarily the server's.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from gpubench.cli import common
from gpubench.params import PRICE, Number

PositiveFraction = Number("a fraction above 0, at most 1", 0, min_open=True, maximum=1)


@click.command("loadgen")
@click.option("--base-url", required=True, metavar="URL", help="The server's OpenAI base URL, e.g. http://host:8000/v1.")
@click.option("--model", required=True, help="The model name the server expects.")
@click.option("--endpoint", type=click.Choice(["completions", "chat"]), default="completions", show_default=True,
              help="completions sends token-id prompts of exact length; chat sends text.")
@click.option("--users", type=int, default=None, help="Concurrent users [default: 1]; with --rate, the in-flight cap.")
@click.option("--requests", "request_count", type=int, default=None,
              help="Timed requests [default: 16; with --search, 1,000 a probe].")
@click.option("--rate", type=float, default=None, metavar="PER_S",
              help="Open loop: requests arrive at this many per second (Poisson unless --burstiness).")
@click.option("--burstiness", type=float, default=1.0, show_default=True,
              help="With --rate: the gamma shape of the arrival gaps (1 Poisson, <1 burstier, >1 steadier).")
@click.option("--warmup", type=int, default=None, help="Untimed requests sent first [default: 2 x the concurrency].")
@click.option("--processes", type=int, default=None,
              help="Client processes to split the users over [default: one per 16 users, on at most a quarter"
                   " of the cores].")
@click.option("--input-tokens", type=int, default=512, show_default=True, help="Unique prompt tokens per request.")
@click.option("--output-tokens", type=int, default=256, show_default=True, help="max_tokens.")
@click.option("--prefix-tokens", type=int, default=0, show_default=True,
              help="Tokens of one prefix shared by every request, before the unique ones.")
@click.option("--ignore-eos", is_flag=True, help="Ask for exactly --output-tokens (vLLM's ignore_eos).")
@click.option("--token-ids", is_flag=True,
              help="Ask vLLM to name each chunk's tokens (return_token_ids), so a chunk carrying several counts as"
                   " several: the arrived count then matches the server's.")
@click.option("--prompts-file", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Fixed prompts, one per line, cycled (instead of random tokens).")
@click.option("--tokenizer", type=click.Path(exists=True, file_okay=False), default=None, metavar="PATH",
              help="A tokenizer folder: prompts sent as text of exact length (the server tokenizes them, as it does a"
                   " real client's), random tokens from its vocabulary.")
@click.option("--prompt-ids", is_flag=True,
              help="Completions: send token-id lists instead of text, so the server skips tokenizing (always so"
                   " without --tokenizer).")
@click.option("--vocab-size", type=int, default=32000, show_default=True,
              help="Random ids are drawn below this when no tokenizer is given.")
@click.option("--temperature", type=float, default=0.0, show_default=True)
@click.option("--seed", type=int, default=42, show_default=True)
@click.option("--max-error-rate", type=float, default=0.01, show_default=True,
              help="Fail the run when more than this share of requests fail.")
@click.option("--timeout", type=float, default=600.0, show_default=True, help="Seconds per request.")
@click.option("--price", type=PRICE, default=None, metavar="USD_PER_HOUR",
              help="Hourly price of the server's GPU, for $ per 1M output tokens [env GPUBENCH_PRICE_USD_PER_HOUR].")
@click.option("--results-dir", default=None, help="Local results folder [default: ./gpubench-results].")
@click.option("--store", default=None, metavar="URL", help="s3://bucket/prefix to upload to.")
@click.option("--run-id", default=None, hidden=True, help="[env GPUBENCH_RUN_ID] set by a launcher.")
@click.option("--json", "as_json", is_flag=True,
              help="JSON Lines records on stdout even on a terminal (the default for pipes and files).")
@click.option("--slo", "slo_text", default=None, metavar="TARGET",
              help="Judge the load at a latency target: server (MLPerf 8B, p99 TTFT 2000 / TPOT 100 ms), interactive"
                   " (500 / 30) or ttft=MS,tpot=MS: goodput and whether its p99s met it.")
@click.option("--search", type=click.Choice(["rate", "users"]), default=None,
              help="With --slo: find the highest Poisson rate (--users caps those in flight) or concurrency whose p99s"
                   " meet the target, by bisection; every probe is reported.")
@click.option("--search-tolerance", type=PositiveFraction, default=0.05, show_default=True,
              help="Stop when the lowest failing value is within this share above the highest passing one.")
@click.option("--search-max-probes", type=click.IntRange(2, 64), default=12, show_default=True,
              help="Loads the search may run, the first (every request at once) included.")
def loadgen(base_url, model, endpoint, users, request_count, rate, burstiness, warmup, processes, input_tokens,
            output_tokens, prefix_tokens, ignore_eos, token_ids, prompt_ids, prompts_file, tokenizer, vocab_size,
            temperature, seed, max_error_rate, timeout, price, results_dir, store, run_id, as_json, slo_text, search,
            search_tolerance, search_max_probes) -> None:
    """Load an OpenAI-compatible server: streamed requests, TTFT/TPOT/ITL/E2E percentiles, throughput."""
    import contextlib
    import os

    from gpubench import runid, stores
    from gpubench.cli import loadgen_search
    from gpubench.loadgen import study
    from gpubench.loadgen.spec import LoadSpec, LoadSpecError
    from gpubench.run import live
    from gpubench.run.runner import RunRequest

    prompts = ()
    if prompts_file is not None:
        prompts = tuple(line for line in prompts_file.read_text(encoding="utf-8").splitlines() if line.strip())
        if not prompts:
            raise common.CliError(f"--prompts-file {prompts_file}: no prompts in it")
    searched, slo_target = _search(search, slo_text, search_tolerance, search_max_probes, users, rate)
    if request_count is None:
        request_count = loadgen_search.DEFAULT_REQUESTS if searched else 16
    spec_users = users if users is not None or rate is not None else 1
    if searched:  # the search's first load: every request at once, at most --users in flight
        spec_users = users or request_count
    try:
        spec = LoadSpec(base_url=base_url, model=model, endpoint=endpoint, users=spec_users, requests=request_count,
                        rate=rate, burstiness=burstiness, warmup=warmup, processes=processes,
                        input_tokens=input_tokens, output_tokens=output_tokens,
                        prefix_tokens=prefix_tokens, prompts=prompts, ignore_eos=ignore_eos, token_ids=token_ids,
                        prompt_ids=prompt_ids, temperature=temperature,
                        tokenizer=tokenizer, vocab_size=vocab_size, seed=seed, max_error_rate=max_error_rate,
                        timeout_s=timeout)
    except LoadSpecError as exc:
        raise common.CliError(str(exc)) from None
    if endpoint == "chat" and not prompts and tokenizer is None:
        click.echo("gpubench: chat prompts without --tokenizer are random words; their length is approximate"
                   " (the server's prompt_tokens is recorded)", err=True)
    if price is None:
        price = common.price_from_launcher()
    target = stores.parse_store(store)
    results_dir = results_dir or common.default_results_dir()
    stores.check_local_dir(results_dir)
    run_id = run_id or os.environ.get("GPUBENCH_RUN_ID") or runid.new_run_id("loadgen")
    if not runid.is_run_id(run_id):
        raise common.CliError(f"bad run id {run_id!r}")
    if target:
        target.check_writable(run_id)
    _check_reachable(spec)

    setup = searched.setup_name(users) if searched else spec.setup_name
    workload = study.spec((setup,), study=f"loadgen {spec.url}")
    request = RunRequest(spec=workload, setups=[setup], repeats=1, smoke=False, run_id=run_id, config=spec,
                         price_usd_per_hour=price)
    config = loadgen_search.config(spec, slo_target, searched, users)
    view = None if live.wants_records(as_json) else live.LiveView()
    run_dir = stores.RunDir.create(results_dir, run_id, echo=view)
    with view or contextlib.nullcontext():
        result = _run(spec, setup, run_id, run_dir, workload, request, price, target, slo_target, config, searched)
    run_dir.close()
    click.echo(f"results: {run_dir.path}", err=True)
    code = common.EXIT_OK if result.status == "ok" else common.EXIT_SETUP_FAILED
    if target:
        ok, message = stores.deliver(run_dir.path, target)
        click.echo(message, err=True)
        if not ok and code == common.EXIT_OK:
            code = common.EXIT_UPLOAD_FAILED
    sys.exit(code)


def _search(search, slo_text, tolerance, max_probes, users, rate):
    """(the search's settings or None, the latency target or None) from the options, or one line of bad input."""
    from gpubench.loadgen import slo
    from gpubench.loadgen.search import SearchSpec

    try:
        target = slo.parse(slo_text) if slo_text is not None else None
    except slo.TargetError as exc:
        raise common.CliError(str(exc)) from None
    if search is None:
        return None, target
    if target is None:
        raise common.CliError(f"--search {search}: give the latency target it searches under (--slo server,"
                              " interactive or ttft=MS,tpot=MS)")
    if rate is not None:
        raise common.CliError(f"--search {search} sets the load itself: leave --rate out")
    if search == "users" and users is not None:
        raise common.CliError("--search users finds the users itself: leave --users out")
    return SearchSpec(search, target, tolerance, max_probes), target


def _check_reachable(spec) -> None:
    """A server that cannot be connected to is bad input, found before a run folder is written."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(spec.base_url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise common.CliError(f"--base-url {spec.base_url}: bad port") from None
    if not parts.hostname:
        raise common.CliError(f"--base-url {spec.base_url}: no host; use http://host:port[/v1]")
    try:
        socket.create_connection((parts.hostname, port), timeout=min(spec.timeout_s, 10.0)).close()
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise common.CliError(f"--base-url {spec.base_url}: cannot connect to {parts.hostname}:{port}"
                                  f" ({reason}); nothing was run") from None


def _run(spec, setup, run_id, run_dir, workload, request, price, target, slo_target, config, searched):
    """The records of one loadgen run, into run_dir (and its echo); returns the setup's result."""
    from gpubench.run import environment
    from gpubench.run.runner import describe, overall_status, run_config
    from gpubench.schema import RunFinished, RunStarted, summarize_results

    env = environment.collect(())
    run_dir.write_config({**run_config(request, env, common.safe_argv(), target.url if target else None),
                          "config": config})
    run_dir.record(RunStarted(run_id=run_id, workload=workload.name, study=workload.study, setups=[setup], repeats=1,
                              smoke=False, config=config, environment=env, price_usd_per_hour=price))
    started = time.perf_counter()
    click.echo(f"[1/1] loadgen {setup} -> {spec.url}", err=True)
    if searched:
        from gpubench.cli import loadgen_search

        result = loadgen_search.measure(spec, searched, config["users"], setup, run_id, run_dir, workload, price)
    else:
        result = _measure(spec, setup, run_id, run_dir, workload, price, slo_target)
    run_dir.record(result)
    click.echo(describe(result), err=True)
    if result.info.get("errors_by_kind"):
        click.echo(f"  errors: {result.info['errors_by_kind']}", err=True)
    run_dir.record(RunFinished(run_id=run_id, status=overall_status([result]),
                               duration_s=round(time.perf_counter() - started, 3),
                               summary=summarize_results([setup], [result])))
    return result


def _measure(spec, setup, run_id, run_dir, workload, price, slo_target=None):
    """One result record: ok with the load's metrics (and, with a latency target, its goodput and verdict), or error
    with the reason (and what was measured)."""
    from gpubench import pricing
    from gpubench.loadgen import slo
    from gpubench.loadgen.metrics import LOAD_METRICS
    from gpubench.loadgen.run import LoadFailed, run_load
    from gpubench.loadgen.spec import LoadSpecError
    from gpubench.run.worker import one_line
    from gpubench.schema import NOT_FINITE, Progress, SetupResult, split_finite

    def progress(phase, done=None, total=None, message=None):
        run_dir.record(Progress(run_id=run_id, phase=phase, setup=setup, repeat=1, done=done, total=total,
                                message=message))

    started = time.perf_counter()
    status, error, metrics, info = "ok", None, {}, {}
    try:
        run = run_load(spec, progress=progress, check=False)
    except (LoadFailed, LoadSpecError, OSError, ValueError) as exc:
        status, error = "error", str(exc) if isinstance(exc, LoadFailed) else one_line(exc)
    else:
        values = run.metrics()
        if slo_target is not None:
            values.update(slo.level_metrics(run.records, run.duration_s, values, slo_target))
        values, not_finite = split_finite(values)
        metrics = {name: d.metric(values[name])
                   for name, d in {**LOAD_METRICS, **slo.SLO_METRICS}.items() if name in values}
        info = {**run.info(), **({NOT_FINITE: not_finite} if not_finite else {})}
        try:
            run.check()
        except LoadFailed as exc:
            status, error = "error", str(exc)
        if status == "ok" and price:
            metrics.update(pricing.cost_metrics(workload.cost, metrics, price))
    return SetupResult(run_id=run_id, setup=setup, repeat=1, status=status, metrics=metrics, error=error, info=info,
                       duration_s=round(time.perf_counter() - started, 3))
