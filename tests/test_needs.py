"""A test's outside resource: skipped with its reason when missing, failed when the run requires it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import needs
import pytest

PROBE = textwrap.dedent("""
    import needs

    def test_wants_a_missing_folder():
        needs.shared_path("no-such-folder-anywhere")
""")


def _run(tmp_path, require: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_probe.py").write_text(PROBE, encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(needs.ROOT / "tests")}
    if require is not None:
        env[needs.ENVIRONMENT] = require
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)


@pytest.mark.slow  # a pytest run in a subprocess
def test_a_missing_resource_skips_with_its_reason(tmp_path):
    done = _run(tmp_path, None)
    assert done.returncode == 0, done.stdout
    assert "1 skipped" in done.stdout
    assert "needs " in done.stdout and "no-such-folder-anywhere (a copy of shared/ beside the repository)" in done.stdout


@pytest.mark.slow  # a pytest run in a subprocess each
@pytest.mark.parametrize("require", ["shared", "chromium,shared", "all"])
def test_a_missing_resource_fails_when_the_run_requires_it(tmp_path, require):
    done = _run(tmp_path, require)
    assert done.returncode == 1, done.stdout
    assert "1 failed" in done.stdout
    assert "MLSYS_GRADER_REQUIRE says this run must have 'shared'" in done.stdout


@pytest.mark.slow  # a pytest run in a subprocess
def test_a_requirement_for_another_resource_still_skips(tmp_path):
    done = _run(tmp_path, "chromium")
    assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout


def test_an_unknown_requirement_is_named(monkeypatch):
    monkeypatch.setenv(needs.ENVIRONMENT, "shared,gpu")
    with pytest.raises(ValueError, match=r"names \['gpu'\]; expected a comma-separated list of \['shared', 'chromium', 'root'\]"):
        needs.required()
