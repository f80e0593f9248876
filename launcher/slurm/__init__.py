"""The Slurm provider: runs on an owned cluster. The cluster table, one submission on disk (a job of its own or a
sweep's array), the Slurm commands, one job's or array task's run, a sweep's cells as job arrays, and the runs
looked up by id."""
