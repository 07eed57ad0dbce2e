"""Where a task's tools run: the sandbox backend seam (its Protocol, a registry by name) and the one
tool-result type every backend returns."""
