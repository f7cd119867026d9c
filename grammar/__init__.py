"""The Dragon grammar, shipped as package data (importable as `dragon_grammar`)."""
