"""`codebox view`: runs and batches as one self-contained HTML page (load, render, serve)."""

from agent.view.load import ViewError, load
from agent.view.render import render

__all__ = ["ViewError", "load", "render"]
