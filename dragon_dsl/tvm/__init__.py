"""The TVM layer: the only part of dragon_dsl that imports TVM.

It loads workloads (printed TVMScript), converts TVM's trace objects to plain
JSON and replays scripts on fresh schedules. Importing this package is cheap;
TVM itself is imported on first use.
"""
