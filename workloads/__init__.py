"""Workload implementations; each module is imported only when its workload runs."""
