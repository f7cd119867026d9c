"""Tests of the verified measurement engine (dragon_dsl.engine)."""
