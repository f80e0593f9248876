"""gpubench-launch: run catalog workloads on Runcrate GPUs."""
