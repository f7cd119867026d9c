"""Test-only: installs a stand-in for `dragon_dsl.engine` in every process that has this folder
on PYTHONPATH (the server and its spawned workers), so the suggestion pipeline can be driven
end to end without a measurement engine. The real engine is exercised by test_measure.py."""

import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import stub_engine

sys.modules["dragon_dsl.engine"] = stub_engine
