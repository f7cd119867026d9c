"""Command-line front ends. They do I/O and rendering; the language core stays pure."""
