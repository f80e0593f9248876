"""Runs on Runcrate: the API client and its request budget, container jobs and instances, following their logs,
stopping them, finding what a launcher left (cleanup), and `status`/`logs`/`cancel`."""
