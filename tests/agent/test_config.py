"""The config file: codebox.toml in the user's config folder, [tool.codebox] in ./pyproject.toml,
CODEBOX_* variables; flags win; a bad file is a one-line usage error naming the file and key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.cli import build_parser, main
from agent.config import ConfigError, load_settings


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(the user's codebox.toml, the project's pyproject.toml), both absent at first."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    for name in list(os.environ):
        if name.upper().startswith("CODEBOX_"):
            monkeypatch.delenv(name)
    user = tmp_path / "config" / "codebox" / "codebox.toml"
    user.parent.mkdir(parents=True)
    return user, project / "pyproject.toml"


def test_built_in_defaults_without_files(places: tuple[Path, Path]) -> None:
    settings = load_settings()
    assert settings.model is None and settings.max_steps == 30 and settings.policy == "read-only"
    assert settings.memory == "1g" and settings.jobs == 2


def test_precedence_flags_env_project_user(places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    user, project = places
    user.write_text('model = "user-model"\nmax_steps = 11\njobs = 3\nmemory = "2g"\ndeny = ["*.pem"]\n')
    project.write_text('[project]\nname = "x"\n[tool.codebox]\nmax_steps = 22\npolicy = "workspace-write"\n')
    monkeypatch.setenv("CODEBOX_JOBS", "5")
    settings = load_settings()
    assert settings.model == "user-model"  # only the user's file sets it
    assert settings.max_steps == 22  # the project's file wins over the user's
    assert settings.jobs == 5  # the environment wins over both
    args = build_parser(settings).parse_args(["run", "--repo", ".", "--max-steps", "7", "g"])
    assert args.max_steps == 7 and args.policy == "workspace-write" and args.memory == "2g"
    assert args._deny == ["*.pem"]


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

    import agent.commands.run as run_command

    monkeypatch.setattr(run_command, "cmd_run", fake_cmd_run)  # main() looks the command up after parsing
    assert main(["run", "--repo", ".", "g"]) == 0 and seen["allow"] == ["src/**"]
    assert main(["run", "--repo", ".", "--allow", "docs/**", "g"]) == 0 and seen["allow"] == ["docs/**"]


@pytest.mark.parametrize(
    ("where", "content", "message"),
    [
        ("user", "modle = 'x'\n", "{user}: modle: unknown key (known: model, base_url,"),
        ("user", "max_steps = 0\n", "{user}: max_steps: must be at least 1 (got 0)"),
        ("user", "max_steps = [\n", "{user}: cannot read it as TOML:"),
        ("project", "[tool.codebox]\npolicy = 'yolo'\n",
         "{project} [tool.codebox]: policy: must be 'read-only', 'workspace-write' or 'ask' (got \"yolo\")"),
        ("user", "api = 'rest'\n", "{user}: api: must be 'chat' or 'responses' (got \"rest\")"),
        ("user", "model = 5\n", "{user}: model: must be a string (got 5)"),
        ("user", "jobs = 'many'\n", "{user}: jobs: must be a whole number (got \"many\")"),
        ("user", "jobs = 2.5\n", "{user}: jobs: must be a whole number (got 2.5)"),
        ("user", "cpus = true\n", "{user}: cpus: must be a number\n"),
        ("user", "timeout = inf\n", "{user}: timeout: must be a finite number (got inf)"),
        ("user", "timeout = 0\n", "{user}: timeout: must be more than 0 (got 0)"),
        ("user", "pids = 8\n", "{user}: pids: must be at least 16 (got 8)"),
        ("user", "allow = 'src/**'\n", "{user}: allow: must be a list of strings (got \"src/**\")"),
        ("project", "[tool.codebox]\ndeny = ['a', 1]\n", "{project} [tool.codebox]: deny: must be a list of strings"),
    ],
)
def test_a_bad_config_is_a_usage_error_naming_file_and_key(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], where: str, content: str, message: str
) -> None:
    user, project = places
    (user if where == "user" else project).write_text(content)
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


def test_every_key_has_one_kind() -> None:
    from agent import config

    kinds = [config._TEXT, set(config._CHOICES), config._INTEGERS, config._NUMBERS, config._LISTS]
    assert sorted(k for kind in kinds for k in kind) == sorted(config.KNOWN_KEYS)
    assert set(config._BOUNDS) <= config._INTEGERS | config._NUMBERS
