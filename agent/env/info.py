"""EnvInfo: the environment a run used. Its own module so that an environment cache hit
(``codebox env build``, ``ensure_env``) does not import every model of agent.protocol, which
re-exports it (tests/agent/env/test_hit_imports.py holds the line)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class EnvInfo(BaseModel):
    """The dependency environment a run used: enough to reproduce it."""

    image: str
    base_image: str
    image_id: str = ""  # the exact image (a tag can be moved; the id cannot): what the sandbox runs
    as_of: str = ""  # the date the lock was resolved as of ("now": that day's index)
    built: bool = False  # False: reused from the cache, or none was needed
    lock: str = ""  # the lock as installed: name==version --hash=sha256:... one a line
    installed: list[str] = Field(default_factory=list)
    apt: list[str] = Field(default_factory=list)
    python: str = ""
    pytest_plugins: list[str] | None = None
    """The project's own pytest11 entry points ("name = module"), as its metadata declares them (None: not known)."""
    notes: list[str] = Field(default_factory=list)
    toolchain: str = ""
    """The language toolchain's version as its own tool says it ("cargo 1.95.0 (f2d3ce0bd 2026-03-21)"): what a
    test command that depends on it follows (empty: not asked, as for Python's environments)."""
    duration_s: float = 0.0
    # Which of the repository's candidate environments this is (1-based; 0: not known), of how many offered.
    candidate: int = 0
    candidates: int = 0

    @property
    def run_image(self) -> str:
        return self.image_id or self.image
