"""The workload toolkit: counted FLOPs, achieved bandwidth, GPU memory, compile caches."""
