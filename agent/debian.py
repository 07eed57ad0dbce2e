"""The host's Debian: its release's codename and its main-archive mirror (a leaf every layer may import).

Any Debian mirror serves every suite: codebox builds a bullseye base, or fetches bullseye's packages
for an environment on it, from the mirror the host already uses for its own release.
"""

from __future__ import annotations

import re
from pathlib import Path

_URI = re.compile(r"^\s*(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s+)?)(\S+)", re.IGNORECASE | re.MULTILINE)


def host_mirror(apt: Path = Path("/etc/apt")) -> str | None:
    """The host's first Debian main-archive mirror (not the security archive), from its apt sources."""
    for path in [*sorted(apt.glob("sources.list.d/*.sources")), apt / "sources.list",
                 *sorted(apt.glob("sources.list.d/*.list"))]:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for uri in _URI.findall(text):
            if "security" not in uri and uri.startswith(("http://", "https://")):
                return uri
    return None


def codename(os_release: Path = Path("/etc/os-release")) -> str:
    """The release's codename (``bookworm``); "" when it says none."""
    try:
        text = os_release.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    match = re.search(r"^VERSION_CODENAME=\"?([a-z]+)\"?\s*$", text, re.MULTILINE)
    return match.group(1) if match else ""
