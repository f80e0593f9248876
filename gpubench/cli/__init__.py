"""The `gpubench` command line."""
