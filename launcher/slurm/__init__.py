"""Runs on a Slurm cluster: the cluster table and batch script, the Slurm commands, one batch job's run, and a
sweep's cells as batch jobs."""
