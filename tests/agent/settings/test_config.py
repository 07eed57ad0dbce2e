"""The settings: flags > environment > the user's codebox.toml > a trusted project > defaults; a bad
value of the user's is a one-line usage error naming the file (or variable) and key; a project's
file is read as hostile input (tests/agent/settings/test_config_trust.py has the trust table)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.cli.parser import main, parse
from agent.settings.sources import ConfigError, load_settings


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(the user's codebox.toml, the project's pyproject.toml), both absent at first."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    for name in list(os.environ):
        if name.upper().startswith("CODEBOX_") or name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
            monkeypatch.delenv(name)
    user = tmp_path / "config" / "codebox" / "codebox.toml"
    user.parent.mkdir(parents=True)
    return user, project / "pyproject.toml"


def test_built_in_defaults_without_files(places: tuple[Path, Path]) -> None:
    settings = load_settings()
    assert settings.model is None and settings.max_steps == 30 and settings.policy == "read-only"
    assert settings.memory == "1g" and settings.jobs == 2


def test_precedence_flags_env_user_project(places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    user, project = places
    user.write_text('model = "user-model"\nmax_steps = 11\njobs = 3\nmemory = "2g"\ndeny = ["*.pem"]\n')
    project.write_text('[project]\nname = "x"\n[tool.codebox]\nmax_steps = 22\npids = 64\ntimeout = 60\n')
    monkeypatch.setenv("CODEBOX_JOBS", "5")
    monkeypatch.setenv("CODEBOX_TIMEOUT", "120")
    settings = load_settings()
    assert settings.model == "user-model"  # only the user's file sets it
    assert settings.max_steps == 11  # the user's file wins over the project's
    assert settings.pids == 64  # only the project sets it, and it tightens the default
    assert settings.jobs == 5 and settings.timeout == 120  # the environment wins over both
    assert str(settings.sources["max_steps"]) == f"{user}: max_steps"
    assert str(settings.sources["pids"]) == f"{project} [tool.codebox]: pids (untrusted project: tightens the default)"
    assert str(settings.sources["jobs"]) == "environment CODEBOX_JOBS" and str(settings.sources["cpus"]) == "default"
    args = parse(["run", "--repo", ".", "--max-steps", "7", "g"])
    assert not isinstance(args, int)
    assert args.max_steps == 7 and args.memory == "2g" and args.deny == ["*.pem"]
    assert str(args.settings.sources["max_steps"]) == "flag --max-steps"


def test_an_explicit_environment_variable_beats_the_users_file_for_the_endpoint(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    user, _ = places
    user.write_text('base_url = "http://127.0.0.1:1111/v1"\n')
    assert load_settings().base_url == "http://127.0.0.1:1111/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:2222/v1")
    settings = load_settings()
    assert settings.base_url == "http://127.0.0.1:2222/v1" and str(settings.sources["base_url"]) == (
        "environment OPENAI_BASE_URL")
    monkeypatch.setenv("CODEBOX_BASE_URL", "http://127.0.0.1:3333/v1")  # codebox's own variable beats OpenAI's
    assert load_settings().base_url == "http://127.0.0.1:3333/v1"
    args = parse(["run", "--repo", ".", "--base-url", "http://127.0.0.1:4444/v1", "g"])
    assert not isinstance(args, int) and args.base_url == "http://127.0.0.1:4444/v1"


def test_help_shows_the_config_defaults(places: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    user, _ = places
    user.write_text('max_steps = 44\ndeny = ["*.pem", "*.key"]\n')
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: 44)" in out and "(default: *.pem *.key)" in out


def test_a_flag_replaces_the_configured_list(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    user, _ = places
    user.write_text('policy = "workspace-write"\nallow = ["src/**"]\n')
    seen = {}

    def fake_cmd_run(args: object) -> int:
        seen["allow"] = args.allow  # type: ignore[attr-defined]
        return 0

    import agent.cli.commands.run as run_command

    monkeypatch.setattr(run_command, "cmd_run", fake_cmd_run)  # main() looks the command up after parsing
    assert main(["run", "--repo", ".", "g"]) == 0 and seen["allow"] == ["src/**"]
    assert main(["run", "--repo", ".", "--allow", "docs/**", "g"]) == 0 and seen["allow"] == ["docs/**"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("modle = 'x'\n", "{user}: modle: unknown key (known: model, base_url,"),
        ("max_steps = 0\n", "{user}: max_steps: must be at least 1 (got 0)"),
        ("max_steps = [\n", "{user}: cannot read it as TOML:"),
        ("api = 'rest'\n", "{user}: api: must be 'chat' or 'responses' (got \"rest\")"),
        ("model = 5\n", "{user}: model: must be a string (got 5)"),
        ("jobs = 'many'\n", "{user}: jobs: must be a whole number (got \"many\")"),
        ("jobs = 2.5\n", "{user}: jobs: must be a whole number (got 2.5)"),
        ("cpus = true\n", "{user}: cpus: must be a number\n"),
        ("timeout = inf\n", "{user}: timeout: must be a finite number (got inf)"),
        ("timeout = 0\n", "{user}: timeout: must be more than 0 (got 0)"),
        ("pids = 8\n", "{user}: pids: must be at least 16 (got 8)"),
        ("allow = 'src/**'\n", "{user}: allow: must be a list of strings (got \"src/**\")"),
        ("memory = 'lots'\n", "{user}: memory: a size is a number with a unit b, k, m or g"),
        ("cpus = 0.001\n", "{user}: cpus: must be at least 0.01 (got 0.001)"),
    ],
)
def test_a_bad_config_is_a_usage_error_naming_file_and_key(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    user, project = places
    user.write_text(content)
    with pytest.raises(ConfigError):
        load_settings()
    assert main(["run", "--repo", ".", "g"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("codebox: " + message.format(user=user, project=project)), err
    assert err.count("\n") == 1


def test_environment_lists_are_json_and_names_any_case(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    user, _ = places
    user.write_text('deny = ["*.pem"]\npolicy = "workspace-write"\n')
    monkeypatch.setenv("CODEBOX_DENY", '["*.key", "secrets/**"]')
    monkeypatch.setenv("codebox_max_steps", "9")
    settings = load_settings()
    assert settings.deny == ["*.key", "secrets/**"] and settings.max_steps == 9 and settings.policy == "workspace-write"
    monkeypatch.setenv("CODEBOX_DENY", "null")  # JSON null: as if the variable were not set
    assert load_settings().deny == ["*.pem"]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("CODEBOX_ALLOW", "src/**", "the environment variable CODEBOX_ALLOW: allow: a list is written as JSON, e.g."),
        ("CODEBOX_DENY", '"*.pem"', "the environment variable CODEBOX_DENY: deny: must be a list of strings"),
        ("CODEBOX_JOBS", "0", "the environment variable CODEBOX_JOBS: jobs: must be at least 1 (got \"0\")"),
        ("CODEBOX_TEMPERATURE", "3", "the environment variable CODEBOX_TEMPERATURE: temperature: must be at most 2"),
    ],
)
def test_a_bad_environment_variable_is_a_usage_error_naming_it(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    name: str, value: str, message: str,
) -> None:
    monkeypatch.setenv(name, value)
    assert main(["run", "--repo", ".", "g"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("codebox: " + message), err
    assert err.count("\n") == 1


def test_the_environment_wins_over_a_bad_file_value(places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    user, project = places
    user.write_text("jobs = 0\n")
    project.write_text("[tool.codebox]\njobs = 'many'\n")
    monkeypatch.setenv("CODEBOX_JOBS", "4")
    assert load_settings().jobs == 4  # the merged value is checked, not each file's


def test_typed_values_are_read_as_the_setting_holds_them(places: tuple[Path, Path]) -> None:
    user, _ = places
    user.write_text("max_steps = 12.0\ntimeout = 60\ncpus = 2\ntemperature = 0\n")
    settings = load_settings()
    assert (settings.max_steps, settings.timeout, settings.cpus, settings.temperature) == (12, 60.0, 2.0, 0.0)
    assert isinstance(settings.max_steps, int) and isinstance(settings.timeout, float)


def test_every_setting_is_declared_once_and_typed_alike_everywhere() -> None:
    """agent.defaults.SETTINGS is the one declaration: the settings object annotates the same keys with the type its
    kind says, only numbers have bounds, only choices have choices, and every flag and model field takes them."""
    import typing

    from agent.defaults import SETTINGS
    from agent.settings import sources as config

    assert list(typing.get_type_hints(config.CodeboxSettings)) == list(SETTINGS) == list(config.KNOWN_KEYS)
    python_type = {"text": str, "integer": int, "number": float, "list": list}
    for key, setting in SETTINGS.items():
        hint = typing.get_type_hints(config.CodeboxSettings)[key]
        if setting.kind in python_type:
            assert python_type[setting.kind] in (typing.get_origin(hint), hint, *typing.get_args(hint)), key
        bounded = (setting.at_least, setting.more_than, setting.at_most) != (None, None, None)
        assert not bounded or setting.kind in ("integer", "number"), key
        assert bool(setting.choices) == (setting.kind == "choice"), key
        assert getattr(config.CodeboxSettings, key) == setting.default, key


@pytest.mark.parametrize(("key", "bad", "says"), [("max_steps", 0, "at least 1"), ("pids", 5, "at least 16"),
                                                  ("timeout", 0, "more than 0"), ("test_timeout", -1, "more than 0")])
def test_one_bound_says_the_same_in_a_config_file_a_task_line_and_a_flag(key: str, bad: int, says: str) -> None:
    from agent.defaults import bound_problem
    from agent.engines.base import JobLimits
    from agent.sandboxes.config import SandboxConfig, SandboxConfigError
    from agent.settings.sources import check_value

    assert bound_problem(key, bad) == f"must be {says}"
    with pytest.raises(ValueError, match=says):
        check_value(key, bad)
    model_field = {"max_steps": "max_steps", "timeout": "timeout_s", "test_timeout": "test_timeout_s"}
    if key in model_field:
        with pytest.raises(ValueError):
            JobLimits(**{model_field[key]: bad})
    if key == "pids":
        with pytest.raises(SandboxConfigError, match=says):
            SandboxConfig(pids_limit=bad)
