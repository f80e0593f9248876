"""`gpubench-launch sweep`: the plan file, its store of finished cells, and the run that launches the rest."""
