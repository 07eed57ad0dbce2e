"""Token and cost budgets: what a task or a batch may spend, and whether the next request fits.

A task's budget (``max_total_tokens``, ``max_cost``) is checked before each model request:
the run stops with reason ``budget`` when the request, as estimated, would take the total
past the limit. The estimate of the next request:

- input: the last request's input tokens, plus what the history grew by since, at
  ``CHARS_PER_TOKEN`` characters a token (the reply and the tool results it brought);
- output: the client's ``max_tokens`` when one is set, else the largest reply seen so far.

The first request is always sent (nothing is known yet). A batch's budget is spent by every
reply of every task as it comes in; once spent, no further task starts, and the tasks already
running go on to their own end or their own budget.
"""

from __future__ import annotations

import threading

from pydantic import BaseModel, ConfigDict, Field

from agent.protocol import Usage

CHARS_PER_TOKEN = 4  # rough and on the generous side for code and English: it over-counts a little


class Prices(BaseModel):
    """Prices per million tokens, in the user's currency (USD by convention)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_million: float = Field(default=0.0, ge=0)
    """Price of a million input (prompt) tokens."""
    output_per_million: float = Field(default=0.0, ge=0)
    """Price of a million output (completion) tokens."""

    def cost(self, usage: Usage | None) -> float:
        if usage is None:
            return 0.0
        return (usage.input_tokens * self.input_per_million + usage.output_tokens * self.output_per_million) / 1e6

    @property
    def known(self) -> bool:
        return self.input_per_million > 0 or self.output_per_million > 0


def round_cost(value: float) -> float:
    return round(value, 6)


class TaskBudget:
    """One run's token and cost limits; the loop asks ``check`` before each request.

    It counts what the server reports; for a reply without usage it counts an estimate
    (``CHARS_PER_TOKEN``), so a budget holds with servers that report nothing.
    """

    def __init__(
        self,
        max_total_tokens: int | None = None,
        max_cost: float | None = None,
        prices: Prices | None = None,
        max_output_tokens: int | None = None,
    ) -> None:
        self.max_total_tokens = max_total_tokens
        self.max_cost = max_cost
        self.prices = prices or Prices()
        self.max_output_tokens = max_output_tokens
        self.spent = Usage()
        self.replies = 0
        self._last_input = 0
        self._history_at_last = 0
        self._largest_output = 0

    @property
    def active(self) -> bool:
        return self.max_total_tokens is not None or self.max_cost is not None

    def record(self, usage: Usage | None, history_chars: int, reply_chars: int) -> Usage:
        """Count one reply (``history_chars``: the history's size when it was asked for); returns what was counted."""
        if usage is None:
            inp, out = history_chars // CHARS_PER_TOKEN, reply_chars // CHARS_PER_TOKEN
            usage = Usage(input_tokens=inp, output_tokens=out, total_tokens=inp + out)
        self.spent = self.spent + usage
        self.replies += 1
        self._last_input = usage.input_tokens
        self._history_at_last = history_chars
        self._largest_output = max(self._largest_output, usage.output_tokens)
        return usage

    def next_request(self, history_chars: int) -> Usage:
        """The estimate of the next request (see the module's docstring)."""
        inp = self._last_input + max(0, history_chars - self._history_at_last) // CHARS_PER_TOKEN
        out = self.max_output_tokens or self._largest_output
        return Usage(input_tokens=inp, output_tokens=out, total_tokens=inp + out)

    def check(self, history_chars: int) -> str | None:
        """Why the next request does not fit, or None when it does (the first one always does)."""
        if not self.active or self.replies == 0:
            return None
        need = self.next_request(history_chars)
        if self.max_total_tokens is not None and self.spent.total_tokens + need.total_tokens > self.max_total_tokens:
            return (
                f"the token budget ({self.max_total_tokens}) is spent: {self.spent.total_tokens} used, "
                f"the next request would take about {need.total_tokens} more"
            )
        if self.max_cost is not None:
            spent, total = self.prices.cost(self.spent), self.prices.cost(self.spent) + self.prices.cost(need)
            if total > self.max_cost:
                return (
                    f"the cost budget ({self.max_cost:g}) is spent: {spent:.4f} used, "
                    f"the next request would bring it to about {total:.4f}"
                )
        return None


class BatchBudget:
    """What a whole batch may spend; every task's replies spend it as they come (thread-safe).

    ``spend`` is the hook the loop calls with each reply's usage; ``should_start`` is asked
    before a task starts.
    """

    def __init__(self, max_tokens: int | None = None, max_cost: float | None = None,
                 prices: Prices | None = None) -> None:
        self.max_tokens = max_tokens
        self.max_cost = max_cost
        self.prices = prices or Prices()
        self._spent = Usage()
        self._lock = threading.Lock()

    def spend(self, usage: Usage) -> None:
        with self._lock:
            self._spent = self._spent + usage

    @property
    def spent(self) -> Usage:
        with self._lock:
            return self._spent.model_copy()

    @property
    def cost(self) -> float:
        return round_cost(self.prices.cost(self.spent))

    def exhausted(self) -> bool:
        spent = self.spent
        if self.max_tokens is not None and spent.total_tokens >= self.max_tokens:
            return True
        return self.max_cost is not None and self.prices.cost(spent) >= self.max_cost

    def should_start(self) -> bool:
        return not self.exhausted()

    def describe(self) -> str:
        """One line for the end of a batch."""
        spent = self.spent
        parts = [f"{spent.total_tokens} tokens" + (f" of {self.max_tokens}" if self.max_tokens is not None else "")]
        if self.prices.known or self.max_cost is not None:
            parts.append(f"cost {self.cost:.4f}" + (f" of {self.max_cost:g}" if self.max_cost is not None else ""))
        return "budget: " + ", ".join(parts) + (" (spent: no new task was started)" if self.exhausted() else "")
