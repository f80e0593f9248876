"""A load generator for OpenAI-compatible servers, and a GSM8K check of the answers they give.

spec.py (LoadSpec: what to send) -> run.py (`run_load(spec) -> LoadRun`: warm-up, closed loop of
users or Poisson arrivals) -> client.py (one streamed request -> RequestRecord, parsed after the
load) over http_client.py (keep-alive HTTP/1.1 that times every read as it arrives) -> metrics.py
(`LOAD_METRICS`, `summarize`). prompts.py builds exact-length prompts; gsm8k.py scores answers;
The `gpubench loadgen` command is gpubench/cli/loadgen.py. No third-party library is needed (asyncio only).
"""
