"""Retry delays for a flaky network client."""


def delays(attempts, base=0.5, cap=8.0):
    """Return the wait before each retry: base, 2*base, 4*base, ... never above cap."""
    out = []
    for n in range(1, attempts):
        out.append(min(cap, base * 2**n))
    return out


def total_wait(attempts, base=0.5, cap=8.0):
    """How long a client waits in all before it gives up."""
    return sum(delays(attempts, base, cap))
