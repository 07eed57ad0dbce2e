"""The batch board and the threads that feed it: rich redraws the board from its own thread while
the engine's threads report tasks. A print made while holding the view's lock could wait on the
redraw while the redraw waited on that lock: CI's run froze there (in
test_a_cancelled_batch_leaves_no_board_behind), and so would a real batch's screen."""

from __future__ import annotations

import io
import threading
from typing import Any

from rich.text import Text

from agent.console.batch_view import BatchView
from agent.console.terminal import Styled
from agent.protocol import Report


def report(task_id: str) -> Report:
    return Report(task_id=task_id, goal="g", repo="/r", model="m", status="completed", stop_reason="final_message",
                  started_at=0.0, duration_s=1.0)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_draws_or_stops_the_board_while_holding_the_view_s_lock() -> None:
    view = BatchView(3, _Terminal(), styled=True)
    held: list[bool] = []
    line = view.writer.line

    def recording_line(text: Text | Styled) -> None:
        held.append(view._lock._is_owned())  # type: ignore[attr-defined]  # RLock's own check
        line(text)

    view.writer.line = recording_line  # type: ignore[method-assign]
    live = view._live
    assert live is not None
    stop = live.stop

    def recording_stop() -> None:
        held.append(view._lock._is_owned())  # type: ignore[attr-defined]
        stop()

    live.stop = recording_stop  # type: ignore[method-assign]
    view.started("a")
    view.finished(report("a"))
    view.skipped(report("b"))
    view.write("codebox: SIGINT received: stopping\n")
    view.close()
    assert held == [False, False, False, False]  # finished, skipped, write, and the board's stop


def test_tasks_reported_from_threads_while_the_board_redraws_all_finish() -> None:
    view = BatchView(400, _Terminal(), styled=True)
    assert view._live is not None
    view._live.stop()  # started again redrawing as often as it can (the refresh thread reads the state)
    view._live.refresh_per_second = 1000
    view._live.start()

    def worker(first: int) -> None:
        for n in range(first, first + 200):
            view.started(f"t{n}")
            view.finished(report(f"t{n}"))

    threads = [threading.Thread(target=worker, args=(n * 200,), daemon=True) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    alive: list[Any] = [thread for thread in threads if thread.is_alive()]
    closer = threading.Thread(target=view.close, daemon=True)
    closer.start()
    closer.join(60)
    assert not alive and not closer.is_alive(), "the board and a reporting thread deadlocked"
    assert view.done == 400
