"""The language seam: one module per ecosystem says how a repository of its kind is tested (registry.py finds it)."""
