"""Token and cost budgets: the arithmetic, the step a run stops at, a batch that stops starting tasks."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

import pytest

import agent.batch as batch
import agent.engines.local as local_engine
from agent.cli.parser import main
from agent.console.render import summary_text
from agent.engines import TaskJob, TaskOutcome
from agent.protocol import AgentEvent, Report, TaskSpec, Usage
from agent.task.budget import BatchBudget, Prices, TaskBudget
from agent.task.events import EventSink
from agent.task.loop import Limits
from tests.fakes import make_agent, task


def usage(inp: int, out: int) -> Usage:
    return Usage(input_tokens=inp, output_tokens=out, total_tokens=inp + out)


# --- arithmetic ----------------------------------------------------------------------------------


def test_cost_per_million_tokens() -> None:
    prices = Prices(input_per_million=3.0, output_per_million=15.0)
    assert prices.cost(usage(1_000_000, 500_000)) == pytest.approx(10.5)
    assert prices.cost(usage(1234, 56)) == pytest.approx(1234 * 3e-6 + 56 * 15e-6)
    assert prices.cost(None) == 0.0 and not Prices().known and prices.known


def test_the_next_request_is_estimated_from_the_last_one() -> None:
    budget = TaskBudget(max_total_tokens=2500)
    assert budget.check(sent_chars=4000) is None  # the first request: 4000 characters / 4 = 1000 tokens
    budget.record(usage(1000, 200), sent_chars=4000)
    # 1000 in last time + 400 new characters / 4 = 1100 in, and a reply as long as the longest: 200
    assert budget.next_request(sent_chars=4400) == usage(1100, 200)
    assert budget.check(sent_chars=4400) is None  # 1200 spent + 1300 = 2500: fits exactly
    reason = budget.check(sent_chars=4404)
    assert reason is not None and "token budget (2500)" in reason and "1200 used" in reason


def test_the_first_request_is_checked_too() -> None:
    budget = TaskBudget(max_total_tokens=1000)
    assert budget.next_request(sent_chars=4001) == usage(1001, 0)  # rounded up, no reply seen yet
    reason = budget.check(sent_chars=4001)
    assert reason is not None and "0 used, the next request would take about 1001 more" in reason
    assert TaskBudget(max_total_tokens=1000, max_output_tokens=200).check(sent_chars=3204) is not None  # 801 + 200


def test_the_clients_max_tokens_is_the_output_estimate() -> None:
    budget = TaskBudget(max_total_tokens=10_000, max_output_tokens=4096)
    budget.record(usage(1000, 10), sent_chars=0)
    assert budget.next_request(sent_chars=0).output_tokens == 4096


def test_the_cost_budget() -> None:
    budget = TaskBudget(max_cost=0.01, prices=Prices(input_per_million=10.0))  # 0.01 = 1000 input tokens
    budget.record(usage(400, 0), sent_chars=0)
    assert budget.check(sent_chars=0) is None  # 400 + 400
    budget.record(usage(400, 0), sent_chars=0)
    reason = budget.check(sent_chars=0)  # 800 + 400 > 1000
    assert reason is not None and reason.startswith("the cost budget (0.01) is spent: 0.0080 used")


def test_the_batch_budget_is_thread_safe() -> None:
    budget = BatchBudget(max_tokens=100_000)

    def spend() -> None:
        for _ in range(1000):
            budget.spend(usage(7, 3))

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert budget.spent == usage(56_000, 24_000) and budget.should_start()
    budget.spend(usage(20_000, 0))
    assert not budget.should_start() and "100000 tokens of 100000" in budget.describe()


# --- the loop stops at the right step ------------------------------------------------------------

CALL = {"tool_calls": [{"name": "search", "arguments": {"query": "x"}}]}


def turn(inp: int, out: int, **extra: Any) -> dict[str, Any]:
    return {**CALL, "usage": usage(inp, out).model_dump(), **extra}


def test_the_run_stops_before_the_request_that_would_not_fit() -> None:
    turns = [turn(1000, 50), turn(1100, 50), turn(1200, 50), turn(1300, 50), {"message": "done"}]
    agent, sink, model, _ = make_agent(turns)
    # spent after 2 replies: 2200; the 3rd is estimated at ~1100 + growth + 50 → fits under 3500;
    # after 3: 3450; the 4th would need ~1250 more → over 4000.
    report = agent.run(task(max_total_tokens=4000))
    assert report.stop_reason == "budget" and report.status == "stopped"
    assert report.steps == 3 and model.position == 3
    assert report.usage == usage(3300, 150).model_copy(update={"source": "server"})
    assert report.error is not None and "token budget (4000)" in report.error
    assert sink.events[-1].data["reason"] == "budget"


def test_the_limits_cap_the_tasks_own_budget_and_each_reply_reaches_on_usage() -> None:
    seen: list[Usage] = []
    turns = [turn(1000, 50), turn(1000, 50), {"message": "done", "usage": usage(1000, 5).model_dump()}]
    agent, _, _, _ = make_agent(turns, limits=Limits(max_total_tokens=2000, on_usage=seen.append))
    report = agent.run(task(max_total_tokens=10**6))
    assert report.stop_reason == "budget" and report.steps == 1
    assert seen == [usage(1000, 50).model_copy(update={"source": "server"})]


def test_cost_in_the_report_and_max_cost() -> None:
    prices = Prices(input_per_million=2.0, output_per_million=8.0)
    turns = [turn(100_000, 1000), turn(100_000, 1000), {"message": "done"}]
    agent, _, _, _ = make_agent(turns, limits=Limits(prices=prices))
    report = agent.run(task(max_cost=0.3))  # one reply costs 0.208: the second would make 0.416
    assert report.stop_reason == "budget" and report.steps == 1
    assert report.cost == pytest.approx(0.208)
    assert "cost: 0.2080" in summary_text(report)


def test_no_budget_no_cost() -> None:
    agent, _, _, _ = make_agent([turn(10**6, 10**6), {"message": "done"}])
    report = agent.run(task())
    assert report.stop_reason == "final_message" and report.cost is None


# --- the batch -----------------------------------------------------------------------------------


def _report(t: TaskSpec, spent: Usage) -> Report:
    return Report(task_id=t.id, goal=t.goal, repo=t.repo, model="fake", status="completed",
                  stop_reason="final_message", usage=spent, started_at=0.0, duration_s=0.1)


def _spending_job(replies: int, each: Usage) -> Any:
    """An execute_job that spends like a run: one `message` event with usage a reply, then its report."""

    def execute(
        job: TaskJob, source: Path, cancel: Any, sink: EventSink | None = None, prepared: Any = None, **_: Any
    ) -> TaskOutcome:
        for seq in range(replies):
            if sink is not None:
                sink.emit(AgentEvent(type="message", task_id=job.task.id, seq=seq + 1, step=seq + 1,
                                     data={"text": "…", "final": False, "usage": each.model_dump()}))
        spent = Usage(input_tokens=each.input_tokens * replies, output_tokens=each.output_tokens * replies,
                      total_tokens=each.total_tokens * replies)
        report = _report(job.task, spent)
        if job.limits.prices is not None:
            report = report.model_copy(update={"cost": job.limits.prices.cost(spent)})
        return TaskOutcome(task_id=job.task.id, report=report)

    return execute


def test_a_spent_batch_budget_starts_no_more_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    spend = _spending_job(3, usage(150, 50))

    def execute(
        job: TaskJob, source: Path, cancel: Any, sink: EventSink | None = None, prepared: Any = None, **_: Any
    ) -> TaskOutcome:
        started.append(job.task.id)
        return spend(job, source, cancel, sink, prepared)

    monkeypatch.setattr(local_engine, "execute_job", execute)
    tasks = [TaskSpec(id=f"t{i}", repo=str(tmp_path), goal="g") for i in range(5)]
    budget = BatchBudget(max_tokens=1000)
    reports = batch.run_batch(tasks, tmp_path / "out", model="scripted:x", jobs=1,
                              progress_stream=io.StringIO(), budget=budget, warm=False)
    assert started == ["t0", "t1"]  # 600 spent after t0: t1 starts; 1200 after t1: none more
    assert [r.task_id for r in reports] == ["t0", "t1"] and budget.spent.total_tokens == 1200
    rows = [json.loads(line) for line in (tmp_path / "out" / "summary.jsonl").read_text().splitlines()]
    assert [r["tokens"] for r in rows] == [600, 600]
    table = batch.render_table(reports)
    assert "tokens" in table.splitlines()[0] and "600" in table.splitlines()[1]


def test_an_engine_without_live_events_spends_when_a_task_ends(tmp_path: Path) -> None:
    class OneByOne:  # like a remote engine: no live sink, outcomes come back whole
        def run(self, jobs: Any, on_outcome: Any, cancel: Any, on_start: Any = None, admit: Any = None) -> None:
            for job in jobs:
                if admit is not None and not admit(job):
                    continue
                on_start(job)
                on_outcome(_spending_job(1, usage(500, 100))(job, Path(job.task.repo), cancel))

    tasks = [TaskSpec(id=f"t{i}", repo=str(tmp_path), goal="g") for i in range(4)]
    budget = BatchBudget(max_tokens=1000)
    reports = batch.run_batch(tasks, tmp_path / "out", model="scripted:x", engine=OneByOne(),
                              progress_stream=io.StringIO(), budget=budget)
    assert [r.task_id for r in reports] == ["t0", "t1"] and budget.spent.total_tokens == 1200


def test_cli_batch_budget_line_and_cost_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(local_engine, "execute_job", _spending_job(1, usage(1_000_000, 0)))
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps({"id": f"t{i}", "repo": str(tmp_path), "goal": "g"}) + "\n" for i in range(3)))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"message": "done"}]}))
    code = main(["batch", str(path), "--jobs", "1", "--out", str(tmp_path / "out"), "--model", f"scripted:{script}",
                 "--price-input", "2.5", "--budget-cost", "4", "--no-warm"])
    out = capsys.readouterr().out
    assert code == 1  # not every task ran
    assert "budget: 2000000 tokens, cost 5.0000 of 4 (spent: no new task was started); 1 task(s) not started" in out
    assert "2.5000" in out  # the cost column


def test_cli_cost_limits_need_prices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"turns": [{"message": "done"}]}')
    base = ["run", "--repo", str(tmp_path), "--model", f"scripted:{script}", "--quiet"]
    assert main([*base, "--max-cost", "1", "g"]) == 2
    assert "needs the prices" in capsys.readouterr().err
    assert main([*base, "--max-total-tokens", "0", "g"]) == 2
    assert "max_total_tokens" in capsys.readouterr().err
