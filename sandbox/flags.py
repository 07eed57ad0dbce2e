"""Command-line flags for the in-container programs (init and server), without argparse.

Stdlib only, python3 >= 3.9. argparse is the largest part of a sandbox's boot: it pulls in
gettext, locale and, through its help formatter, shutil with bz2 and lzma; together about
2 MB of an idle container's memory and a few milliseconds of every start. The init and the
server take a handful of ``--name value`` / ``--name=value`` options and switches, which this
reads in a few lines, with the same one-line errors (exit 2) argparse would give.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

    # flag -> (the value's type, or None for a switch; the default)
    Spec = Mapping[str, Tuple[Optional[Callable[[str], object]], object]]


class FlagError(Exception):
    """A bad command line: the message is one line for stderr (exit 2)."""


class HelpWanted(Exception):
    """-h / --help: print the usage and exit 0."""


def parse(argv: List[str], spec: Spec, stop_at_dashes: bool = False) -> Tuple[Dict[str, Any], List[str]]:
    """The options by name (``--output-limit`` -> ``output_limit``) and what follows ``--``.

    Without ``stop_at_dashes`` a ``--`` or a positional argument is an error.
    """
    values: Dict[str, Any] = {_name(flag): default for flag, (_, default) in spec.items()}
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--" and stop_at_dashes:
            return values, rest
        if arg in ("-h", "--help"):
            raise HelpWanted()
        flag, eq, value = arg.partition("=")
        if flag not in spec:
            what = "unknown option" if arg.startswith("-") else "unexpected argument"
            raise FlagError(f"{what} {arg!r}")
        kind, _ = spec[flag]
        if kind is None:
            if eq:
                raise FlagError(f"{flag} takes no value")
            values[_name(flag)] = True
            continue
        if not eq:
            if not rest:
                raise FlagError(f"{flag} needs a value")
            value = rest.pop(0)
        try:
            values[_name(flag)] = kind(value)
        except ValueError:
            raise FlagError(f"{flag}: not a valid value: {value!r}") from None
    return values, rest


def _name(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")
