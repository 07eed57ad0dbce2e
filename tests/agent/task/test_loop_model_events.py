"""What the loop tells the events about the model: its instructions, the notes it sends, its errors."""

from __future__ import annotations

from collections.abc import Sequence

from agent.model.base import EmitFn, ModelError
from agent.protocol import Message, ModelOutput, ToolSpec, UserMessage
from agent.task.loop import DEFAULT_INSTRUCTIONS
from tests.fakes import make_agent, task


def test_turn_start_carries_the_instructions() -> None:
    agent, sink, _, _ = make_agent([{"message": "done"}])
    agent.run(task())
    assert sink.events[0].type == "turn.start"
    assert sink.events[0].data["instructions"] == DEFAULT_INSTRUCTIONS


def test_every_note_sent_to_the_model_is_an_event_with_the_same_text() -> None:
    agent, sink, model, _ = make_agent(
        [{"message": None}, {"message": "half a sent", "finish_reason": "length"}, {"message": "done"}]
    )
    report = agent.run(task())
    assert report.status == "completed"
    notes = [e for e in sink.events if e.type == "note"]
    assert [n.data["reason"] for n in notes] == ["empty", "cut_off"]
    sent = [m.content for m in model.requests[-1][1] if isinstance(m, UserMessage)][1:]  # after the goal
    assert [n.data["text"] for n in notes] == sent
    assert all(text.startswith("[codebox] ") for text in sent)


class _RefusingModel:
    name = "refusing"

    def complete(
        self, instructions: str, messages: Sequence[Message], tools: Sequence[ToolSpec], emit: EmitFn
    ) -> ModelOutput:
        raise ModelError("request 1 was refused", request="request 1 (POST x)", status=500, body="the whole body")


def test_a_model_error_event_carries_request_status_and_body() -> None:
    agent, sink, _, _ = make_agent([])
    agent.model = _RefusingModel()
    report = agent.run(task())
    assert report.stop_reason == "model_error" and report.error == "request 1 was refused"
    (event,) = [e for e in sink.events if e.type == "model.error"]
    assert event.data == {
        "error": "request 1 was refused",
        "request": "request 1 (POST x)",
        "status": 500,
        "body": "the whole body",
    }
