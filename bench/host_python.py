"""What the host-Python link of the chain costs: finding the host's builds, the cache key, a cold copy into an
image, and a hit.

    python bench/host_python.py [X.Y ...] [--n 5] [--cold]

Per minor found on the host (default: every one no Debian suite ships): the finder's and the key's median
milliseconds over N runs (a listing of pyenv, uv and /usr/local; a stat of every copied file), the number of
files and bytes copied, and the chain's ``provide`` on a hit (the image there: the key and two image lookups).
``--cold`` first removes that minor's image (tag of this codebox and these files), so ``provide`` builds it
again: the seconds of the copy and the check, the base (debootstrapped once per machine) excluded unless it
is missing too. Printed with `uptime` beside.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from collections.abc import Callable

from agent.containers import image
from agent.containers.engine_api import NotFound, connect_engine
from agent.containers.host_python_image import base_image, image_tag
from agent.containers.host_pythons import find_host_pythons
from agent.containers.pythons import SUITES, PythonImages


def ms(fn: Callable[[], object], n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("minors", nargs="*")
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--cold", action="store_true")
    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    found = find_host_pythons()
    print(f"finder: {ms(find_host_pythons, args.n):.1f} ms median of {args.n} "
          f"({', '.join(f'{m}: {p.describe()}' for m, p in found.items()) or 'none found'})")
    client = connect_engine()
    for minor in args.minors or [m for m in found if m not in SUITES]:
        host = found.get(minor)
        if host is None:
            print(f"{minor}: no host build")
            continue
        files = list(host.files())
        size = sum(path.stat().st_size for _, path in files if path.is_file() and not path.is_symlink())
        print(f"{minor}: {host.describe()}: {len(files)} files, {size / 1e6:.1f} MB; "
              f"key {ms(host.stamp, args.n):.1f} ms median")
        if args.cold:
            tag = image_tag(host, str(client.inspect_image(base_image(print))["Id"]))
            try:
                client.remove_image(tag)
                print(f"  removed {tag}")
            except NotFound:
                pass
        start = time.perf_counter()
        provided = PythonImages(host=True, suites={}).provide(minor)
        first = time.perf_counter() - start
        hit = ms(lambda: PythonImages(host=True, suites={}).provide(minor), args.n)  # noqa: B023
        print(f"  provide: {first:.2f} s the first time ({'built' if args.cold else 'as found'}), "
              f"{hit:.0f} ms median on a hit; {provided.image}, {image.image_size(provided.image) / 1e6:.0f} MB")
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
