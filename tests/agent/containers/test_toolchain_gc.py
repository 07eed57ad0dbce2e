"""Which toolchain images `codebox gc` removes: an older image of a toolchain (one repository and suite, or one
rustup source) that no image that stays and no container uses; the newest of each stays."""

from __future__ import annotations

from agent.containers.toolchain import SOURCE_LABEL
from agent.containers.toolchain_gc import Image, plan, toolchain_of

P = "codebox-toolchain-"


def image(image_id: str, tag: str, layers: str, created: int, labels: dict[str, str] | None = None) -> Image:
    return Image(id=image_id, tags=(tag,) if tag else (), layers=tuple(layers), created=created, size=1,
                 labels=labels or {})


def test_the_older_image_of_a_suite_goes_and_the_newest_and_other_suites_stay() -> None:
    images = [image("a", f"{P}go:trixie-aaaa", "A", 1), image("b", f"{P}go:trixie-bbbb", "B", 2),
              image("c", f"{P}go:bookworm-cccc", "C", 0), image("d", f"localhost/{P}node:trixie-dddd", "D", 0)]
    chosen = plan(images, {})
    assert [(s.tag, s.newer) for s in chosen.removable] == [(f"{P}go:trixie-aaaa", f"{P}go:trixie-bbbb")]
    assert chosen.kept == []


def test_rustup_copies_of_one_toolchain_are_one_toolchain_whatever_their_version() -> None:
    stable, nightly = {SOURCE_LABEL: "rustup stable-x86_64"}, {SOURCE_LABEL: "rustup nightly-x86_64"}
    images = [image("a", f"{P}rust:rustup-1.94.0-aaaa", "LA", 1, stable),
              image("b", f"{P}rust:rustup-1.95.0-bbbb", "LB", 2, stable),
              image("n", f"{P}rust:rustup-1.97.0-nightly-nnnn", "LN", 0, nightly),
              image("d", f"{P}rust:trixie-dddd", "D", 0)]
    assert [s.tag for s in plan(images, {}).removable] == [f"{P}rust:rustup-1.94.0-aaaa"]
    assert toolchain_of(f"localhost/{P}rust:rustup-1.95.0-bbbb", images[1]) == f"{P}rust rustup stable-x86_64"


def test_an_image_built_on_it_or_a_container_keeps_a_superseded_one() -> None:
    images = [image("a", f"{P}go:trixie-aaaa", "A", 1), image("b", f"{P}go:trixie-bbbb", "B", 2),
              image("e", "codebox-env:go-1", "AE", 3),  # built on the old one
              image("x", f"{P}node:trixie-xxxx", "X", 1), image("y", f"{P}node:trixie-yyyy", "Y", 2),
              image("z", f"{P}rust:trixie-zzzz", "Z", 1), image("w", f"{P}rust:trixie-wwww", "W", 2),
              image("u", "", "ZU", 3)]  # untagged (a build loading it): it stays, so it keeps its base
    chosen = plan(images, {"x": "codebox-t1-tools"})
    assert chosen.removable == []
    assert sorted((s.tag, why) for s, why in chosen.kept) == [
        (f"{P}go:trixie-aaaa", "codebox-env:go-1 is built on it"),
        (f"{P}node:trixie-xxxx", "the container codebox-t1-tools uses it"),
        (f"{P}rust:trixie-zzzz", "an untagged image u is built on it")]


def test_a_container_of_an_image_on_top_keeps_every_image_below() -> None:
    images = [image("l1", f"{P}rust-linker:trixie-aaaa", "L", 1), image("l2", f"{P}rust-linker:trixie-bbbb", "M", 2),
              image("r1", f"{P}rust:rustup-1.0-aaaa", "LR", 1, {SOURCE_LABEL: "rustup s"}),
              image("r2", f"{P}rust:rustup-1.1-bbbb", "MR", 2, {SOURCE_LABEL: "rustup s"}),
              image("e", "codebox-env:rust-1", "LRC", 3)]
    assert plan(images, {"e": "box"}).removable == []
    # With the environment image gone, the old rustup copy goes first, then the linker under it.
    assert [s.tag for s in plan(images[:4], {}).removable] == [f"{P}rust:rustup-1.0-aaaa",
                                                               f"{P}rust-linker:trixie-aaaa"]


def test_a_superseded_image_on_top_of_another_superseded_one_goes_with_it() -> None:
    images = [image("l1", f"{P}rust-linker:trixie-aaaa", "L", 1), image("l2", f"{P}rust-linker:trixie-bbbb", "M", 2),
              image("r1", f"{P}rust:rustup-1.0-aaaa", "LR", 1, {SOURCE_LABEL: "rustup s"}),
              image("r2", f"{P}rust:rustup-1.1-bbbb", "MR", 2, {SOURCE_LABEL: "rustup s"})]
    assert plan(images, {}).kept == []


def test_images_of_no_toolchain_are_never_candidates() -> None:
    images = [image("a", "codebox-sandbox:latest", "A", 1), image("b", "codebox-sandbox:py3.9", "B", 2),
              image("c", "my-toolchain-go:trixie-aaaa", "C", 1), image("d", "my-toolchain-go:trixie-bbbb", "D", 2)]
    assert plan(images, {}) == plan([], {})
