"""Dependency environments: read what a repository declares, resolve it on the host with uv,
install it offline into an image derived from the sandbox image (repo code never runs with the network)."""
