"""gpubench: reproducible GPU benchmarks."""
__version__ = "0.1.0"
