"""`gpubench loadgen`: the load generator alone, against any OpenAI-compatible endpoint.

It goes through `gpubench run`'s lifecycle (gpubench/run/runner.py's Runner) with the options `gpubench run` shares
(RunArgs: --repeats, --price, --run-id; --store, --results-dir, --json): the same records (run_started, progress, a
result per repeat of the setup u{users} or r{rate}, run_finished), the same run folder and summary, $ per 1M output
tokens from --price like the serving workloads, and a verdict. The load runs in this process (the Runner's in-process
measure), not in a worker. With --slo the load is judged at a latency target (goodput, whether its p99s met it); with
--search as well, a repeat's result is a whole search, setup search-rate[-u{cap}] or search-users, whose probes are
said as they run and tabled in its info (gpubench/cli/loadgen_search.py). The server is whatever the URL points at,
so the environment block describes this machine (the client's), not necessarily the server's.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from gpubench import run_args
from gpubench.cli import common
from gpubench.params import Number
from gpubench.run_args import RunArgs

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
@click.option("--count-tokens", type=click.Choice(["auto", "token-ids", "usage", "timings", "chunks"]), default="auto",
              show_default=True,
              help="How a streamed chunk's tokens are counted (a busy server merges several in one): auto asks the"
                   " server before the load (vLLM: return_token_ids; llama.cpp: timings_per_token); usage is"
                   " continuous_usage_stats; chunks counts a chunk as one token.")
@click.option("--token-ids", is_flag=True, help="The same as --count-tokens token-ids (vLLM's return_token_ids).")
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
@run_args.option("repeats")
@run_args.option("price", help="Hourly price of the server's GPU, for $ per 1M output tokens"
                               " [env GPUBENCH_PRICE_USD_PER_HOUR].")
@run_args.option("store")
@run_args.option("results_dir")
@run_args.option("run_id")
@run_args.option("as_json")
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
            output_tokens, prefix_tokens, ignore_eos, count_tokens, token_ids, prompt_ids, prompts_file, tokenizer,
            vocab_size, temperature, seed, max_error_rate, timeout, slo_text, search, search_tolerance,
            search_max_probes, **shared) -> None:
    """Load an OpenAI-compatible server: streamed requests, TTFT/TPOT/ITL/E2E percentiles, throughput."""
    import contextlib

    from gpubench import stores
    from gpubench.cli import loadgen_search
    from gpubench.loadgen import study
    from gpubench.loadgen.spec import LoadSpec, LoadSpecError
    from gpubench.run import live
    from gpubench.run.runner import Runner, RunRequest
    from gpubench.run.stop_signal import terminate_as_interrupt

    args = RunArgs.of(study.NAME, **shared)
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
                        prefix_tokens=prefix_tokens, prompts=prompts, ignore_eos=ignore_eos,
                        count_tokens=count_tokens.replace("-", "_"), token_ids=token_ids,
                        prompt_ids=prompt_ids, temperature=temperature,
                        tokenizer=tokenizer, vocab_size=vocab_size, seed=seed, max_error_rate=max_error_rate,
                        timeout_s=timeout)
    except LoadSpecError as exc:
        raise common.CliError(str(exc)) from None
    if endpoint == "chat" and not prompts and tokenizer is None:
        click.echo("gpubench: chat prompts without --tokenizer are random words; their length is approximate"
                   " (the server's prompt_tokens is recorded)", err=True)
    price = args.price if args.price is not None else common.price_from_launcher()
    target = stores.parse_store(shared["store"])
    results_dir = shared["results_dir"] or common.default_results_dir()
    stores.check_local_dir(results_dir)
    run_id = common.run_id_for(args.run_id, study.NAME)
    if target:
        target.check_writable(run_id)
    _check_reachable(spec)

    setup = searched.setup_name(users) if searched else spec.setup_name
    workload = study.spec((setup,), study=f"loadgen {spec.url}")
    request = RunRequest(spec=workload, setups=[setup], repeats=args.repeats or 1, smoke=False, run_id=run_id,
                         config=loadgen_search.config(spec, slo_target, searched, users), price_usd_per_hour=price)

    def measure(setup, repeat, progress, say):
        load = _of_repeat(spec, repeat)
        if searched:
            return loadgen_search.measure(load, searched, users, setup, repeat, run_id, progress, say)
        return _measure(load, setup, repeat, run_id, progress, slo_target)

    terminate_as_interrupt()
    view = None if live.wants_records(shared["as_json"]) else live.LiveView()
    run_dir = stores.RunDir.create(results_dir, run_id, echo=view)
    with view or contextlib.nullcontext():
        runner = Runner(request, run_dir, echo=view.print if view else None, measure=measure,
                        definition=study.definition(workload))
        outcome = runner.run(argv=common.safe_argv(), store_url=target.url if target else None).status
    sys.exit(common.deliver(run_dir, target, outcome))


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


def _of_repeat(spec, repeat: int):
    """The load of one repeat: its own prompts (the seed plus the repeat's number, less one; a search's probes draw
    theirs from it), so a server's prefix cache never answers a later repeat from an earlier one's."""
    import dataclasses

    return dataclasses.replace(spec, seed=spec.seed + repeat - 1)


def _measure(spec, setup, repeat, run_id, progress, slo_target=None):
    """One repeat of the load as a result: ok with its metrics (and, with a latency target, its goodput and verdict),
    or error with the reason (and what was measured)."""
    from gpubench.loadgen import slo
    from gpubench.loadgen.metrics import LOAD_METRICS
    from gpubench.loadgen.run import LoadFailed, run_load
    from gpubench.loadgen.spec import LoadSpecError
    from gpubench.run.worker import one_line
    from gpubench.schema import NOT_FINITE, SetupResult, split_finite

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
        info = {**run.info(), "prompt_seed": spec.seed, **({NOT_FINITE: not_finite} if not_finite else {})}
        try:
            run.check()
        except LoadFailed as exc:
            status, error = "error", str(exc)
    return SetupResult(run_id=run_id, setup=setup, repeat=repeat, status=status, metrics=metrics, error=error,
                       info=info, duration_s=round(time.perf_counter() - started, 3))
