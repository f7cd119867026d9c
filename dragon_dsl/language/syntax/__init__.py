"""Syntax layer: the tree, the parser and the printer. Knows no instruction names."""
