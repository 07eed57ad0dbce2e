"""A layer a box wrote is read as a plain tar only, within a size cap, and a cancel stops the host's reading of it."""

from __future__ import annotations

import bz2
import io
import tarfile
import time
from pathlib import Path

import pytest

from agent.env.cancel import EnvCancelled
from agent.env.errors import EnvError
from agent.env.install.layer import _sha256, check_layer

INSIDE = "opt/codebox-project"


def bz2_bomb(path: Path, gigabytes: int) -> Path:
    """A bz2 stream of a tar whose one member is ``gigabytes`` GiB of zeros (a few KB on disk)."""
    header = tarfile.TarInfo(f"{INSIDE}/zeros")
    header.size = gigabytes * 1024**3
    chunk = bz2.compress(bytes(256 * 1024**2), 1)  # 256 MiB of zeros: ~1.6 KB
    with path.open("wb") as out:
        out.write(bz2.compress(header.tobuf(format=tarfile.GNU_FORMAT), 1))
        for _ in range(gigabytes * 4):
            out.write(chunk)  # bz2 streams one after another are one stream to a reader
    return path


def plain_tar(path: Path, members: int) -> Path:
    with tarfile.open(path, "w") as tar:
        for n in range(members):
            info = tarfile.TarInfo(f"{INSIDE}/f{n}")
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    return path


def test_a_compressed_layer_is_refused_at_once(tmp_path: Path) -> None:
    """The layer check once auto-detected compression: a few KB of bz2 made it decompress GBs of zeros
    (minutes of host CPU). The host's CPU time is the measure here."""
    bomb = bz2_bomb(tmp_path / "layer.tar", 3)
    assert bomb.stat().st_size < 100_000
    started = time.process_time()
    with pytest.raises(EnvError, match="not a readable tar"):
        check_layer(bomb, INSIDE)
    assert time.process_time() - started < 0.5


def test_a_layer_over_its_cap_is_refused_unread(tmp_path: Path) -> None:
    layer = plain_tar(tmp_path / "layer.tar", 10)
    assert check_layer(layer, INSIDE) == 10
    with pytest.raises(EnvError, match="over the cap of 1000"):
        check_layer(layer, INSIDE, max_bytes=1000)


class CancelAfter:
    """A cancel that comes after ``checks`` looks at it: where the reading stops says how often it looks."""

    def __init__(self, checks: int) -> None:
        self.checks, self.seen = checks, 0

    @property
    def cancelled(self) -> bool:
        self.seen += 1
        return self.seen > self.checks


def test_a_cancel_stops_the_layer_check_between_members_and_the_hash_between_blocks(tmp_path: Path) -> None:
    """Ctrl-C or SIGTERM during the check of a layer (or its hash before the load) is seen at the next member or
    MiB: within a second, where the layer check once spun for seconds with the signal pending."""
    layer = plain_tar(tmp_path / "layer.tar", 2_000)
    cancel = CancelAfter(100)
    with pytest.raises(EnvCancelled):
        check_layer(layer, INSIDE, cancel)
    assert cancel.seen == 101  # stopped at the member after the cancel, not at the end of 2,000
    big = tmp_path / "big"
    big.write_bytes(bytes(64 * 1024**2))
    cancel = CancelAfter(10)
    with pytest.raises(EnvCancelled):
        _sha256(big, cancel)
    assert cancel.seen == 11  # the next MiB block, not the 64th
