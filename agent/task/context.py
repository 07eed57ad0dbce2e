"""The history of a run, kept inside a size budget.

Not a compaction: when the history outgrows the budget, the oldest tool results are
shortened (head kept, the cut marked) until it fits, then the long arguments of old
calls (patches). The goal and the latest turn
(the last assistant message and the results that answer it) are never touched.
"""

from __future__ import annotations

from agent.protocol import AssistantMessage, Message, ToolResultMessage, UserMessage, message_size

KEEP_CHARS = 300  # how much of a shortened tool result stays


class ContextStore:
    def __init__(self, goal: str, budget_chars: int = 200_000) -> None:
        self.budget_chars = budget_chars
        self.messages: list[Message] = [UserMessage(content=goal)]
        self.trimmed_results = 0
        self._size = len(goal)  # kept up to date: summing a long history every step is O(n^2)

    def append(self, msg: Message) -> None:
        self.messages.append(msg)
        self._size += message_size(msg)

    def size(self) -> int:
        return self._size

    def _latest_turn_start(self) -> int:
        for i in range(len(self.messages) - 1, -1, -1):
            if isinstance(self.messages[i], AssistantMessage):
                return i
        return len(self.messages)

    def fit(self) -> int:
        """Shorten old messages until the history fits; returns how many were shortened now."""
        over = self.size() - self.budget_chars
        if over <= 0:
            return 0
        shortened = 0
        protected_from = self._latest_turn_start()
        # Old tool results first; then the long arguments of old calls (a patch can be 1 MB).
        for kind in (ToolResultMessage, AssistantMessage):
            for i, msg in enumerate(self.messages[:protected_from]):
                if over <= 0:
                    break
                new = _shortened(msg) if isinstance(msg, kind) else None
                if new is None:
                    continue
                saved = message_size(msg) - message_size(new)
                over -= saved
                self._size -= saved
                self.messages[i] = new
                shortened += 1
        self.trimmed_results += shortened
        return shortened


def _cut(text: str, what: str) -> str:
    cut = len(text) - KEEP_CHARS
    return text[:KEEP_CHARS] + f"\n[codebox: {cut} characters of this {what} were cut to fit the context budget]"


def _shortened(msg: Message) -> Message | None:
    """A shorter copy of an old message, or None when there is nothing worth cutting."""
    if isinstance(msg, ToolResultMessage):
        if len(msg.content) <= KEEP_CHARS * 2:
            return None
        return msg.model_copy(update={"content": _cut(msg.content, "old tool result")})
    if isinstance(msg, AssistantMessage):
        calls = []
        changed = False
        for call in msg.tool_calls:
            args = {
                k: _cut(v, "old argument") if isinstance(v, str) and len(v) > KEEP_CHARS * 2 else v
                for k, v in call.arguments.items()
            }
            raw = call.raw_arguments
            if raw is not None and len(raw) > KEEP_CHARS * 2:
                raw = _cut(raw, "old argument")
            changed = changed or args != call.arguments or raw != call.raw_arguments
            calls.append(call.model_copy(update={"arguments": args, "raw_arguments": raw}))
        return msg.model_copy(update={"tool_calls": calls}) if changed else None
    return None
