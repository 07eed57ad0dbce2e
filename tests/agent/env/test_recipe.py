"""Recipes: parsed from flags, task files and a recipes file (never the repository), merged in order, keyed."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from agent.cli.env_flags import EnvFlags
from agent.env.errors import EnvError
from agent.env.recipe import Recipe, load_recipes, parse_recipe
from agent.protocol import EnvSpec, TaskSpec


def flags(**kw: object) -> argparse.Namespace:
    return argparse.Namespace(**{"pip": [], "pre_install": [], "recipes": None, "as_of": None, **kw})


def test_recipes_add_up_in_order_without_repeats() -> None:
    first = Recipe(pip=["a", "b"], pre_install=["make"])
    merged = first.plus(Recipe(pip=["b", "c"], apt=["less"]))
    assert merged.pip == ["a", "b", "c"] and merged.apt == ["less"] and merged.pre_install == ["make"]
    assert Recipe().is_empty() and not merged.is_empty()
    assert merged.key() == Recipe(pip=["c", "b", "a"], apt=["less"], pre_install=["make"]).key()
    assert Recipe(pre_install=["a", "b"]).key() != Recipe(pre_install=["b", "a"]).key()  # commands run in order


@pytest.mark.parametrize("bad", [{"pip": ["x @ https://evil.example/x.whl"]}, {"pip": ["not a req!!"]},
                                 {"pre_install": [""]}, {"pre_install": ["x\0y"]}, {"mystery": ["x"]}])
def test_a_bad_recipe_is_one_usage_error(bad: dict[str, list[str]]) -> None:
    with pytest.raises(EnvError) as failed:
        parse_recipe(bad, "task t1 env")
    assert failed.value.usage and str(failed.value).startswith("task t1 env")


def test_a_recipes_file_matches_a_repository_by_path_name_or_owner_name_and_version(tmp_path: Path) -> None:
    book_file = tmp_path / "recipes.json"
    book_file.write_text(json.dumps({
        "astropy/astropy": {"pip": ["numpy<2"], "versions": {"4.3": {"pre_install": ["sed -i s/x/y/ setup.cfg"]}}},
        "flatproj": {"apt": ["less"]},
    }))
    book = load_recipes(book_file)
    assert book.for_repo("/work/repos/astropy/astropy").pip == ["numpy<2"]
    assert book.for_repo("/work/repos/astropy/astropy", "4.3").pre_install == ["sed -i s/x/y/ setup.cfg"]
    assert book.for_repo("/src/flatproj").apt == ["less"]
    assert book.for_repo("/src/other").is_empty()
    toml = tmp_path / "recipes.toml"
    toml.write_text('["flatproj"]\npip = ["delta"]\n')
    assert load_recipes(toml).for_repo("/x/flatproj").pip == ["delta"]


@pytest.mark.parametrize("text, message", [("{", "not valid JSON"), ("[1]", "expected a table"),
                                           ('{"r": {"pip": [1]}}', "r: pip.0"),
                                           ('{"r": {"versions": [1]}}', "versions: expected a table")])
def test_a_bad_recipes_file_is_one_usage_error_naming_it(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "recipes.json"
    path.write_text(text)
    with pytest.raises(EnvError, match=message) as failed:
        load_recipes(path)
    assert failed.value.usage and str(path) in str(failed.value)


def test_the_flags_fold_into_the_tasks_that_build_their_environment(tmp_path: Path) -> None:
    book = tmp_path / "recipes.json"
    book.write_text(json.dumps({"proj": {"pip": ["from-book"]}}))
    parsed = EnvFlags(flags(pip=["from-flag"], pre_install=["make gen"], recipes=str(book), as_of="2021-06-01"))
    auto = parsed.apply(TaskSpec(repo="/r/proj", goal="g"))
    assert isinstance(auto.env, EnvSpec)
    assert auto.env.pip == ["from-flag", "from-book"] and auto.env.pre_install == ["make gen"]
    assert auto.env.as_of == "2021-06-02T00:00:00Z"  # the whole day of the date given
    own = parsed.apply(TaskSpec(repo="/r/proj", goal="g", env={"pip": ["own"], "as_of": "2020-01-01"}))
    assert isinstance(own.env, EnvSpec) and own.env.pip == ["from-flag", "from-book", "own"]
    assert own.env.as_of == "2021-06-02T00:00:00Z"  # the flag wins over the task's own date
    for fixed in ("none", "codebox-env:abc"):  # a recipe changes only an environment codebox builds
        assert parsed.apply(TaskSpec(repo="/r/proj", goal="g", env=fixed)).env == fixed
    assert EnvFlags(flags()).apply(TaskSpec(repo="/r/proj", goal="g")).env == "auto"


def test_every_recipe_field_has_a_flag_on_run_batch_eval_and_env_build(tmp_path: Path) -> None:
    """`codebox run --apt less` (click's pager tests need less) is what `env build --apt` was."""
    from agent.cli.parser import build_parser

    words = ["--pip", "p", "--apt", "less", "--extra", "e", "--group", "g", "--requirements", "r.txt",
             "--pre-install", "make"]
    commands = {"run": ["run", "--repo", str(tmp_path), *words, "goal"], "batch": ["batch", "t.jsonl", *words],
                "eval": ["eval", "--dataset", "d.jsonl", "--predictions", "gold", *words],
                "env build": ["env", "build", "--repo", str(tmp_path), *words]}
    for name, argv in commands.items():
        recipe = EnvFlags(build_parser().parse_args(argv)).recipe
        assert recipe == Recipe(pip=["p"], apt=["less"], extras=["e"], groups=["g"], requirements=["r.txt"],
                                pre_install=["make"]), name


def test_a_task_file_env_object_is_checked_like_any_task_field() -> None:
    from pydantic import ValidationError

    task = TaskSpec.model_validate({"repo": "/r", "goal": "g", "env": {"pip": ["x"], "pre_install": ["make"]}})
    assert isinstance(task.env, EnvSpec) and task.env.recipe() == Recipe(pip=["x"], pre_install=["make"])
    with pytest.raises(ValidationError):
        TaskSpec.model_validate({"repo": "/r", "goal": "g", "env": {"pip": ["x @ file:///etc"]}})
    with pytest.raises(ValidationError):
        TaskSpec.model_validate({"repo": "/r", "goal": "g", "env": ""})


def test_bad_flags_are_one_usage_error() -> None:
    with pytest.raises(EnvError, match="--as-of") as failed:
        EnvFlags(flags(as_of="last tuesday"))
    assert failed.value.usage
    with pytest.raises(EnvError) as url:
        EnvFlags(flags(pip=["a @ https://x/y.whl"]))
    assert str(url.value) == ("--pip: 'a @ https://x/y.whl': packages come from the index by name, "
                              "not from a URL")
    with pytest.raises(EnvError, match="cannot read it"):
        EnvFlags(flags(recipes="/nonexistent/recipes.json"))
