"""Running a measurement: the runner, its worker process, the environment and utilisation it records, --docker."""
