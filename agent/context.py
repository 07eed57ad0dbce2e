"""The history of a run, kept inside a size budget.

Not a compaction: when the history outgrows the budget, the oldest tool results are
shortened (head kept, the cut marked) until it fits. The goal and the latest turn
(the last assistant message and the results that answer it) are never touched.
"""

from __future__ import annotations

from agent.protocol import AssistantMessage, Message, ToolResultMessage, UserMessage

KEEP_CHARS = 300  # how much of a shortened tool result stays


def message_size(msg: Message) -> int:
    if isinstance(msg, AssistantMessage):
        size = len(msg.content or "")
        for call in msg.tool_calls:
            size += len(call.name) + len(call.raw_arguments or "") + len(str(call.arguments))
        return size
    return len(msg.content)


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
        """Shorten old tool results until the history fits; returns how many were shortened now."""
        over = self.size() - self.budget_chars
        if over <= 0:
            return 0
        shortened = 0
        protected_from = self._latest_turn_start()
        for i, msg in enumerate(self.messages[:protected_from]):
            if over <= 0:
                break
            if not isinstance(msg, ToolResultMessage) or len(msg.content) <= KEEP_CHARS * 2:
                continue
            cut = len(msg.content) - KEEP_CHARS
            note = f"\n[codebox: {cut} characters of this old tool result were cut to fit the context budget]"
            new = msg.model_copy(update={"content": msg.content[:KEEP_CHARS] + note})
            over -= len(msg.content) - len(new.content)
            self._size -= len(msg.content) - len(new.content)
            self.messages[i] = new
            shortened += 1
        self.trimmed_results += shortened
        return shortened
