"""Token and cost budgets: what a task or a batch may spend, and whether the next request fits.

A task's budget (``max_total_tokens``, ``max_cost``) is checked before each model request,
the first included: the run stops with reason ``budget`` when the request, as estimated,
would take the total past the limit. What is spent is what agent.model.usage settled on for
each reply: the server's usage when plausible, else codebox's own count (a server that
reports zero or negative tokens cannot spend nothing). The estimate of the next request:

- input: the last request's input tokens, plus what the request grew by since, at
  ``CHARS_PER_TOKEN`` characters a token (the reply and the tool results it brought); before
  the first reply, the whole request at that rate;
- output: the client's ``max_tokens`` when one is set, else the largest reply seen so far.

A batch's budget is spent by every reply of every task as it comes in; once spent, no further
task starts, and the tasks already running go on to their own end or their own budget.
"""

from __future__ import annotations

import threading

from pydantic import BaseModel, ConfigDict, Field

from agent.model.usage import CHARS_PER_TOKEN
from agent.protocol import Usage


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
    """One run's token and cost limits; the loop asks ``check`` before each request and
    ``record``s each reply's settled usage (agent.model.usage.settle)."""

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
        self._sent_at_last = 0
        self._largest_output = 0

    @property
    def active(self) -> bool:
        return self.max_total_tokens is not None or self.max_cost is not None

    def record(self, usage: Usage, sent_chars: int) -> None:
        """Count one reply (``sent_chars``: the size of the request that asked for it)."""
        self.spent = self.spent + usage
        self.replies += 1
        self._last_input = usage.input_tokens
        self._sent_at_last = sent_chars
        self._largest_output = max(self._largest_output, usage.output_tokens)

    def next_request(self, sent_chars: int) -> Usage:
        """The estimate of the next request (see the module's docstring)."""
        if self.replies == 0:
            inp = -(-sent_chars // CHARS_PER_TOKEN)
        else:
            inp = self._last_input + max(0, sent_chars - self._sent_at_last) // CHARS_PER_TOKEN
        out = self.max_output_tokens or self._largest_output
        return Usage(input_tokens=inp, output_tokens=out, total_tokens=inp + out)

    def check(self, sent_chars: int) -> str | None:
        """Why the next request (``sent_chars`` in all) does not fit, or None when it does."""
        if not self.active:
            return None
        need = self.next_request(sent_chars)
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
