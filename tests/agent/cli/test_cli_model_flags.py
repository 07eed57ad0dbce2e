"""The model flags of `codebox run` reach the client's config."""

from __future__ import annotations

import pytest

from agent.cli.commands.common import openai_options as _openai_options
from agent.cli.parser import build_parser
from agent.model.factory import build_model
from agent.model.openai_client import OpenAIChatClient


def test_model_flags_reach_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    args = build_parser().parse_args([
        "run", "--repo", ".", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
        "--max-tokens", "64", "--temperature", "0.1", "--request-timeout", "7", "--tool-choice", "required",
        "goal",
    ])
    client = build_model("m", **_openai_options(args))
    assert isinstance(client, OpenAIChatClient)
    cfg = client.config
    assert (cfg.max_tokens, cfg.temperature, cfg.request_timeout_s, cfg.tool_choice) == (64, 0.1, 7.0, "required")


def test_defaults_when_no_flag_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    args = build_parser().parse_args(["run", "--repo", ".", "--base-url", "http://127.0.0.1:9/v1", "goal"])
    client = build_model("m", **_openai_options(args))
    assert isinstance(client, OpenAIChatClient)
    assert (client.config.max_tokens, client.config.tool_choice, client.config.request_timeout_s) == (None, "auto", 60)
