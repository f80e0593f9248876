"""`python -m gpubench ...` is `gpubench ...`: how a job on a cluster's Python environment runs it (--slurm-python)."""

from gpubench.cli.main import main

main()
