"""A streamed Chat Completions reply, chunk by chunk, back into the body an unstreamed reply has.

Tool calls arrive as deltas keyed by ``index``: the id and name usually in the first delta of
a call, the arguments in pieces cut anywhere (inside a JSON string, inside an escape), the
deltas of several calls interleaved. Some servers leave ``index`` out, or give every call
index 0 with its own id; both are handled. Usage comes in the last chunk when it was asked
for (``stream_options.include_usage``). A stream without a ``finish_reason`` did not end: it
is refused whole (StreamInterrupted), never half used.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent.model.retry_rules import SERVER_ERROR_EVENT, EmptyStream, StreamInterrupted, short

TextFn = Callable[[str], None]


@dataclass
class _CallSlot:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def wire(self) -> dict[str, Any]:
        return {
            "id": self.id or None,
            "type": "function",
            "function": {"name": self.name, "arguments": "".join(self.arguments)},
        }


class ChatStreamAssembler:
    """Feed it chunks (as dicts) with ``add``; ``result()`` is the chat.completion body."""

    def __init__(self, on_text: TextFn | None = None) -> None:
        self.on_text = on_text
        self.chunks = 0
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: list[_CallSlot] = []
        self._by_index: dict[int, _CallSlot] = {}
        self._legacy: _CallSlot | None = None  # the pre-tools ``function_call`` shape
        self._finish: str | None = None
        self._usage: Any = None
        self._model: Any = None

    def add(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            return
        self.chunks += 1
        if chunk.get("error"):
            err = chunk["error"]
            said = err.get("message", err) if isinstance(err, dict) else err
            raise StreamInterrupted(f"{SERVER_ERROR_EVENT}: {short(str(said), 2000)}")
        if chunk.get("usage"):
            self._usage = chunk["usage"]  # the last one wins: some servers send a running count
        self._model = chunk.get("model", self._model)
        choices = chunk.get("choices") or []
        choice = next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), None)
        if choice is None:
            return
        if choice.get("finish_reason"):
            self._finish = str(choice["finish_reason"])
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            return
        self._add_text(delta.get("content"))
        if isinstance(delta.get("refusal"), str):
            self._refusal.append(delta["refusal"])
        for call in delta.get("tool_calls") or []:
            if isinstance(call, dict):
                self._add_call(call)
        if isinstance(delta.get("function_call"), dict):
            self._legacy = self._legacy or _CallSlot()
            self._extend(self._legacy, delta["function_call"])

    def _add_text(self, content: Any) -> None:
        if isinstance(content, str) and content:
            self._text.append(content)
            if self.on_text is not None:
                self.on_text(content)

    def _add_call(self, call: dict[str, Any]) -> None:
        raw_id = call.get("id")
        new_id = raw_id if isinstance(raw_id, str) else ""
        slot = self._slot_for(call.get("index"), new_id)
        if new_id and not slot.id:
            slot.id = new_id
        fn = call.get("function")
        if isinstance(fn, dict):
            self._extend(slot, fn)

    def _slot_for(self, index: Any, new_id: str) -> _CallSlot:
        if isinstance(index, int) and not isinstance(index, bool):
            slot = self._by_index.get(index)
            if slot is None or (new_id and slot.id and new_id != slot.id):  # a server that numbers every call 0
                slot = self._by_index[index] = self._new_slot()
            return slot
        # No index: a delta with an id not seen yet starts a call; one without goes on the last call.
        last = self._calls[-1] if self._calls else None
        if last is None or (new_id and new_id != last.id):
            return self._new_slot()
        return last

    def _new_slot(self) -> _CallSlot:
        slot = _CallSlot()
        self._calls.append(slot)
        return slot

    @staticmethod
    def _extend(slot: _CallSlot, fn: dict[str, Any]) -> None:
        name = fn.get("name")
        if isinstance(name, str) and name and name != slot.name:
            slot.name += name  # a name in pieces; a server that repeats the whole name changes nothing
        args = fn.get("arguments")
        if isinstance(args, str):
            slot.arguments.append(args)
        elif isinstance(args, dict):  # a server that sends an object (rare): keep it as JSON text
            slot.arguments.append(json.dumps(args))

    def result(self) -> dict[str, Any]:
        """The chat.completion body; StreamInterrupted when the stream never said it was done."""
        if self._finish is None and self.chunks == 0:
            raise EmptyStream("the stream ended before its first chunk (HTTP 200 and nothing in it)")
        if self._finish is None:
            raise StreamInterrupted(f"the stream ended after {self.chunks} chunks without a finish_reason")
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._text) or None}
        if self._refusal:
            message["refusal"] = "".join(self._refusal)
        calls = [slot.wire() for slot in self._calls]
        if calls:
            message["tool_calls"] = calls
        elif self._legacy is not None:
            message["function_call"] = self._legacy.wire()["function"]
        body: dict[str, Any] = {
            "object": "chat.completion",
            "model": self._model,
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish}],
        }
        if self._usage is not None:
            body["usage"] = self._usage
        return body
