"""A spec's preferred pins against the project's own requirements (resolve/prefer.py), from sphinx 3.x's shape."""

from __future__ import annotations

from agent.env.install.metadata import marker_environment
from agent.env.read.reqlines import parse_requirement
from agent.env.resolve.prefer import exact_version, replaced_pins
from agent.env.resolve.resolve import PREFERRED, Target

PY39 = marker_environment(Target(python="3.9.2", platform="x86_64-manylinux_2_31"))
METADATA = "the project's build backend (METADATA)"


def test_sphinx_3s_spec_pin_is_replaced_by_its_own_pre_install_bound() -> None:
    # SWE-bench 4.1.0's sphinx 3.1-4.0 spec: pip_packages pin Jinja2==3.0.3, pre_install seds setup.py's
    # 'Jinja2>=2.3' to 'Jinja2<3.0' and adds 'markupsafe<=2.0.1'; the box's METADATA says the sed's words.
    prefer = [parse_requirement(t, PREFERRED) for t in ("tox==4.16.0", "tox-current-env==0.0.11", "Jinja2==3.0.3")]
    later = [parse_requirement(t, "setup.py install_requires") for t in ("Jinja2>=2.3", "packaging")]
    later += [parse_requirement(t, METADATA) for t in ("Jinja2<3.0", "markupsafe<=2.0.1", "packaging")]
    kept, notes = replaced_pins(prefer, later, PY39)
    assert [r.text for r in kept] == ["tox==4.16.0", "tox-current-env==0.0.11"]
    assert notes == [f"spec pin Jinja2==3.0.3 replaced by the project's Jinja2<3.0 ({METADATA}): the project's "
                     "install comes after the spec's packages, as in SWE-bench's"]


def test_a_pin_the_project_accepts_or_names_loosely_stays() -> None:
    prefer = [parse_requirement("jinja2==3.0.3", PREFERRED)]
    for text in ("Jinja2>=2.3", "jinja2", "JINJA2<4,>=3", "jinja2!=3.0.2"):
        assert replaced_pins(prefer, [parse_requirement(text, METADATA)], PY39) == (prefer, [])


def test_only_an_exact_pin_is_judged_here_and_a_marker_that_does_not_hold_refuses_nothing() -> None:
    loose = [parse_requirement("jinja2<3.1", PREFERRED)]
    assert replaced_pins(loose, [parse_requirement("jinja2<3.0", METADATA)], PY39) == (loose, [])  # the resolve's
    pin = [parse_requirement("typed-ast==1.5.5", PREFERRED)]
    old_only = parse_requirement("typed_ast<1.5; python_version < '3.8'", METADATA)
    assert replaced_pins(pin, [old_only], PY39) == (pin, [])
    kept, notes = replaced_pins(pin, [parse_requirement("typed_ast<1.5; python_version >= '3.8'", METADATA)], PY39)
    assert kept == [] and "typed_ast<1.5" in notes[0]


def test_exact_versions() -> None:
    assert exact_version("tox==4.16.0") == "4.16.0"
    assert exact_version("tox===4.16.0") == "4.16.0"
    assert exact_version("tox==4.*") is None
    assert exact_version("tox>=4") is None
    assert exact_version("tox==4,<5") is None
    assert exact_version("not a requirement ==") is None


# uv's pylock.toml for sphinx 5.1's row (as of 2022-05-15), with the spec's pin tox-current-env==0.0.11 (2023).
PYLOCK = '''lock-version = "1.0"
created-by = "uv"

[[packages]]
name = "tox-current-env"
version = "0.0.11"
wheels = [{ url = "https://x/tcf.whl", upload-time = 2023-01-10T16:32:04Z, hashes = { sha256 = "b03c" } }]

[[packages]]
name = "packaging"
version = "21.3"
wheels = [{ url = "https://x/p.whl", upload-time = 2021-11-18T00:39:10Z, hashes = { sha256 = "ef10" } }]
'''


def test_an_exact_spec_pin_newer_than_the_date_is_taken_and_said() -> None:
    from agent.env.resolve.resolve import parse_pylock, past_the_date

    lock = parse_pylock(PYLOCK)
    assert [p.uploaded for p in lock.pins] == ["2021-11-18T00:39:10Z", "2023-01-10T16:32:04Z"]
    asked = [parse_requirement(t, PREFERRED) for t in ("tox-current-env==0.0.11", "packaging==21.3")]
    assert past_the_date(lock, asked, "2022-05-22T04:33:42Z") == [
        "tox-current-env==0.0.11 (the recipe's prefer): uploaded 2023-01-10, after the as-of date 2022-05-22; taken "
        "all the same, as an exact pin names its release"]
    assert past_the_date(lock, asked, None) == []  # as of now: nothing is past the date
    project = [parse_requirement("tox-current-env>=0.0.3", "setup.py install_requires")]
    assert past_the_date(lock, project, "2022-05-22T04:33:42Z") == []  # not named exactly: the resolve's own choice
