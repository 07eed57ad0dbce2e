"""``python -m sandbox.patch --root DIR``: apply the patch on standard input (see :mod:`sandbox.patch.cli`)."""

import sys

from sandbox.patch.cli import main

if __name__ == "__main__":
    sys.exit(main())
