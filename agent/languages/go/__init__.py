"""Go: a repository with a go.mod is tested with ``go test -json ./...``, its per-test outcomes read from
test2json's events; modules come from its own vendor/ only (GOFLAGS=-mod=vendor, GOPROXY=off: no module is
fetched), the toolchain is Debian trixie's Go 1.24 (or the user's image), the build cache outside /repo."""

from __future__ import annotations

import posixpath
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from agent.languages.base import CONTROL, Detection, Log, NamedTestsRun, TestArgsError, check_test_path, refused
from agent.languages.go import gomod, gotest

if TYPE_CHECKING:
    from agent.env.cancel import Cancel
    from agent.env.info import EnvInfo

GO_TEST = ["go", "test", "-json", "./..."]
SUITE = "trixie"  # Go 1.24 (bookworm's is 1.19)
PACKAGES = ["golang-go", "gcc", "libc6-dev"]  # cgo (a plugin, -race): golang-go only recommends gcc
BUILD_CACHE = "/tmp/codebox-cache"  # kept between test runs by the sandbox
GO_ENV = {"GOCACHE": f"{BUILD_CACHE}/go-build", "GOPATH": f"{BUILD_CACHE}/gopath", "GOPROXY": "off",
          "GOTOOLCHAIN": "local", "GOTELEMETRY": "off", "GOFLAGS": "-mod=vendor"}
EVAL_EVENTS = "/tmp/codebox-eval-gotest.json"
ALLOWED = "package patterns inside the repository (./pkg/...), -run REGEX, -skip REGEX, -count N, -v, -short, -failfast"
_VALUE = {"-run", "-skip", "-count"}
_TEST_NAME = re.compile(r"^(Test|Example|Fuzz)\w*(/\S+)*$")  # TestAdd, TestAdd/small
_FLAG = {"-v", "-short", "-failfast"}


class Go:
    """The Go ecosystem's answers to the language seam (agent.languages.base.Language)."""

    name = "go"

    def detect(self, repo: Path, env: EnvInfo | None) -> Detection | None:
        if not (repo / "go.mod").is_file():
            return None
        missing = gomod.missing_modules(repo)
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            return Detection(self.name, list(GO_TEST), "go.mod",
                             missing=f"go.mod requires modules that are not vendored ({shown}): codebox fetches no "
                                     "Go modules; commit them (go mod vendor)")
        return Detection(self.name, list(GO_TEST), "go.mod")

    def runs(self, test_cmd: list[str]) -> bool:
        return len(test_cmd) >= 2 and posixpath.basename(test_cmd[0]) == "go" and test_cmd[1] == "test"

    def check_test_args(self, test_cmd: list[str], arguments: list[str], repo: Path | None) -> None:
        _split(arguments, repo)

    def test_argv(self, test_cmd: list[str], arguments: list[str]) -> list[str]:
        flags, packages = _split(arguments, None)
        base = [a for a in test_cmd if a != "./..."] if packages else list(test_cmd)
        return [*base[:2], *flags, *base[2:], *packages]

    def failing_tests(self, output: str) -> list[str]:
        return gotest.failing_tests(output)

    def outcomes(self, output: str) -> dict[str, str]:
        return gotest.outcomes(output)

    def is_test_id(self, name: str) -> bool:
        return bool(_TEST_NAME.match(name))

    def named_tests_run(self, repo: Path, names: list[str], env: EnvInfo | None) -> NamedTestsRun:
        return NamedTestsRun(["sh", "-c", f"go test -json ./... > {EVAL_EVENTS}"], EVAL_EVENTS, list(GO_TEST))

    def environment(self, repo: Path, image: str | None, backend: str, log: Log, cancel: Cancel,
                    repo_name: str) -> EnvInfo:
        from agent.env.errors import EnvError
        from agent.env.info import EnvInfo

        why = gomod.refusal(repo)
        if why:
            raise EnvError(why, usage=True)
        started = time.monotonic()
        if image:
            return EnvInfo(image=image, base_image=image, notes=["go: the toolchain of the image given"])
        from agent.env.install.images import EngineImages
        from agent.languages.toolchain_store import toolchain_image

        engine = EngineImages.connect(backend)
        try:
            tag = toolchain_image(engine, "go", SUITE, PACKAGES, log, GO_ENV, cancel)
        finally:
            engine.close()
        vendored = "vendored modules" if gomod.vendored(repo) else "no modules required"
        return EnvInfo(image=tag, base_image=tag, notes=[f"go: Debian {SUITE}'s Go, {vendored}"],
                       duration_s=round(time.monotonic() - started, 3))




def _split(arguments: list[str], repo: Path | None) -> tuple[list[str], list[str]]:
    """(flags, package patterns); TestArgsError for anything that does not choose tests."""
    flags: list[str] = []
    packages: list[str] = []
    i = 0
    while i < len(arguments):
        arg = arguments[i]
        if CONTROL.search(arg):
            raise refused(arg, "it contains a control character", ALLOWED)
        name, eq, _ = arg.partition("=")
        if name in _VALUE:
            if not eq:
                if i + 1 >= len(arguments):
                    raise refused(arg, "it needs a value", ALLOWED)
                flags += [arg, arguments[i + 1]]
                i += 1
            else:
                flags.append(arg)
            value = arguments[i] if not eq else arg.partition("=")[2]
            if name == "-count" and not (value.isdigit() and 1 <= int(value) <= 100):
                raise refused(arg, "-count takes a number from 1 to 100", ALLOWED)
        elif arg in _FLAG:
            flags.append(arg)
        elif arg.startswith("-"):
            raise refused(arg, "it is not an option that chooses tests", ALLOWED)
        else:
            try:
                check_test_path(arg.removesuffix("/..."), repo)
            except TestArgsError as exc:
                raise refused(arg, str(exc), ALLOWED) from None
            packages.append(arg if arg.startswith(".") else f"./{arg}")
        i += 1
    return flags, packages


GO = Go()
