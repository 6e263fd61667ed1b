"""How the browser tests get their Chromium (tests/support/chromium.py), with
apt-get, root and the file system replaced: what runs, and when it skips."""

from __future__ import annotations

import pytest

from tests.support.chromium import ChromiumUnavailable, find_or_install, launch_args


class Apt:
    """Records the commands; "installs" by creating the file."""

    def __init__(self, path, fail: bool = False):
        self.path, self.fail, self.commands = path, fail, []

    def __call__(self, argv, timeout, env):
        self.commands.append(argv)
        assert env["DEBIAN_FRONTEND"] == "noninteractive" and timeout >= 300
        if self.fail:
            raise RuntimeError("apt-get failed")
        if argv[:2] == ["apt-get", "install"]:
            self.path.write_text("")


def test_a_present_chromium_is_used_as_it_is(tmp_path):
    path = tmp_path / "chromium"
    path.write_text("")
    apt = Apt(path)
    assert find_or_install(str(path), run=apt, is_root=lambda: False, which=lambda _: None) == str(path)
    assert apt.commands == []


def test_a_missing_chromium_is_installed_from_debian_as_root(tmp_path):
    path = tmp_path / "chromium"
    apt = Apt(path)
    assert find_or_install(str(path), run=apt, is_root=lambda: True, which=lambda _: "/usr/bin/apt-get") == str(path)
    assert apt.commands == [
        ["apt-get", "update"],
        ["apt-get", "install", "-y", "--no-install-recommends", "chromium"],
    ]


@pytest.mark.parametrize(
    ("root", "apt_get", "reason"), [(False, "/usr/bin/apt-get", "needs root"), (True, None, "no apt-get")]
)
def test_without_root_or_apt_get_it_says_why(tmp_path, root, apt_get, reason):
    path = tmp_path / "chromium"
    with pytest.raises(ChromiumUnavailable, match=reason):
        find_or_install(str(path), run=Apt(path), is_root=lambda: root, which=lambda _: apt_get)


def test_a_failing_install_is_an_error_not_a_skip(tmp_path):
    path = tmp_path / "chromium"
    with pytest.raises(RuntimeError, match="apt-get failed"):
        find_or_install(str(path), run=Apt(path, fail=True), is_root=lambda: True, which=lambda _: "/usr/bin/apt-get")


def test_the_browser_stays_off_the_network():
    args = launch_args()
    assert {"--disable-background-networking", "--disable-component-update", "--disable-sync"} <= set(args)
