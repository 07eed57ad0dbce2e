"""How the dependencies box is made for a lock (deps.box_plan): root, capabilities and the CPU quota."""

from __future__ import annotations

from agent.env.install.box import DPKG_CAPS, SETUP_CAPS, BuildLimits
from agent.env.install.deps_box import box_plan
from agent.env.resolve.resolve import Lock, Pin

LIMITS = BuildLimits(memory="768m", pids=99, cpus=1.0, timeout_s=600)
WHEEL = Pin(name="alpha", version="1.0", url="file:///w/alpha-1.0-py3-none-any.whl", sha256="a" * 64)
SDIST = Pin(name="tinysd", version="0.1", url="file:///w/tinysd-0.1.tar.gz", sha256="b" * 64, sdist=True)


def test_an_all_wheels_lock_on_the_tmpfs_gets_no_root_step_no_capability_and_no_cpu_quota() -> None:
    plan = box_plan(Lock(pins=[WHEEL]), debs=False, tmpfs=True, limits=LIMITS)
    assert plan.caps == [] and not plan.root_step
    assert plan.limits.cpus == 0  # no quota: no repository or package code runs there
    assert (plan.limits.memory, plan.limits.pids, plan.limits.timeout_s) == ("768m", 99, 600)  # these stay


def test_a_venv_on_the_image_file_system_needs_roots_folder_step() -> None:
    plan = box_plan(Lock(pins=[WHEEL]), debs=False, tmpfs=False, limits=LIMITS)
    assert plan.caps == SETUP_CAPS and plan.root_step and plan.limits.cpus == 0


def test_an_sdist_to_build_keeps_the_cpu_quota() -> None:
    plan = box_plan(Lock(pins=[WHEEL, SDIST]), debs=False, tmpfs=True, limits=LIMITS)
    assert plan.limits == LIMITS and plan.caps == [] and not plan.root_step


def test_debian_packages_keep_the_quota_and_get_dpkgs_capabilities() -> None:
    plan = box_plan(Lock(pins=[WHEEL]), debs=True, tmpfs=True, limits=LIMITS)
    assert plan.limits == LIMITS and plan.caps == DPKG_CAPS and plan.root_step
