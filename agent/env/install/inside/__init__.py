"""Scripts that run inside the environment build container (stdlib only, python3 >= 3.9), never on the host.

The host copies them into the build's stage folder, mounted read-only; they run as the
unprivileged build user on the project copy (``_codebox_bytecode``: on the dependencies' venv).
Their file names start with ``_codebox_`` so a build backend that imports a module by a common
name never picks one of them up.
"""
