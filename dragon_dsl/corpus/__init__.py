"""The corpus pipeline (issue 5): workloads, search, verified examples. This package so far
holds the workload generator."""
