"""Stored runs and what is read from them: summaries, comparisons, verdicts, reports, the site."""
