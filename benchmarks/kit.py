"""The student kit's install, today's against the one before issue 20 (Otter-Grader, pandas, no Jupyter front end).

    python benchmarks/kit.py [--before COMMIT] [--rounds 2]

Builds both kits — the earlier one from ``git worktree add /tmp/kit-before COMMIT`` (its own code makes it),
this tree's with this tree's code — then, in the same run, installs each with the kit README's one command
(``pip install -r requirements.txt``) in a fresh venv, the two kits interleaved round by round (the order
alternates, so neither always meets the warmer pip cache), and prints each install's wall time, package count
and environment size, the ratios (the issue's target: at most 60 % of the earlier time and size), and what the
largest distributions of the new environment cost.  Needs pip to reach its index (its cache makes later rounds
faster for both kits alike).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from _timing import timed

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "9b9e539"
"""The commit before issue 20's kit changes (the parent of 88d3c82, lab.export)."""
WORKTREE = Path("/tmp/kit-before")

# Builds a kit with the code of the tree given first (an editable install's import hook would load this tree instead).
MAKE_KIT = """\
import sys
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
sys.path.insert(0, sys.argv[1])
from mlsys_grader import cli
assert cli.__file__.startswith(sys.argv[1]), cli.__file__
sys.exit(cli.main(["kit", "-o", sys.argv[2], "--root", sys.argv[1]]))
"""

# Run inside an installed venv: every distribution's size on disk, from its RECORD (bytecode pip wrote included).
SIZES = """\
import json, os, sys
from importlib import metadata
sizes = {}
for dist in metadata.distributions():
    total = 0
    for file in dist.files or ():
        path = file.locate()
        if os.path.isfile(path):
            total += os.lstat(path).st_size
    sizes[dist.metadata["Name"]] = total
print(json.dumps(sizes))
"""


@dataclass(frozen=True)
class Install:
    kit: str
    round: int
    seconds: float
    packages: int
    bytes: int
    sizes: dict[str, int]


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return done


def _tree_bytes(folder: Path) -> int:
    total = 0
    for top, _, files in os.walk(folder):
        total += sum(os.lstat(os.path.join(top, name)).st_size for name in files)
    return total


def make_kit(tree: Path, out: Path) -> Path:
    _run([sys.executable, "-c", MAKE_KIT, str(tree), str(out)], cwd=tree)
    return out


def install(kit: Path, name: str, round_: int, python: str, scratch: Path) -> Install:
    venv = scratch / f"{name}-{round_}"
    _run([python, "-m", "venv", str(venv)])
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(venv), PIP_DISABLE_PIP_VERSION_CHECK="1")
    took = timed(lambda: _run([str(venv / "bin" / "pip"), "install", "--quiet", "-r", "requirements.txt"], cwd=kit, env=env))
    sizes = json.loads(_run([str(venv / "bin" / "python"), "-c", SIZES], env=env).stdout)
    result = Install(name, round_, took.seconds, len(sizes), _tree_bytes(venv), sizes)
    shutil.rmtree(venv)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help=f"the commit whose kit is today's baseline (default {BEFORE})")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--python", default=sys.executable, help="the interpreter the venvs are made from")
    args = parser.parse_args(argv)
    if not WORKTREE.exists():
        _run(["git", "worktree", "add", "--detach", str(WORKTREE), args.before], cwd=ROOT)
    at = _run(["git", "rev-parse", "HEAD"], cwd=WORKTREE).stdout.strip()
    wanted = _run(["git", "rev-parse", args.before], cwd=ROOT).stdout.strip()
    if at != wanted:
        raise SystemExit(f"{WORKTREE} is at {at[:9]}, not {args.before}: remove it (git worktree remove {WORKTREE}) or pass --before")
    with tempfile.TemporaryDirectory(prefix="kit-bench-") as scratch_name:
        scratch = Path(scratch_name)
        kits = {"before": make_kit(WORKTREE, scratch / "kit-before"), "new": make_kit(ROOT, scratch / "kit-new")}
        runs: list[Install] = []
        for round_ in range(args.rounds):
            order = list(kits) if round_ % 2 == 0 else list(reversed(kits))
            for name in order:
                runs.append(install(kits[name], name, round_, args.python, scratch))
                last = runs[-1]
                print(f"round {round_ + 1} {name:6}: {last.seconds:6.1f} s  {last.packages:4d} packages  "
                      f"{last.bytes / 1e6:6.0f} MB", flush=True)
    print()
    best = {name: min((r for r in runs if r.kit == name), key=lambda r: r.seconds) for name in kits}
    for name in kits:
        mine = [r for r in runs if r.kit == name]
        print(f"{name:6}: best {best[name].seconds:.1f} s, median {statistics.median(r.seconds for r in mine):.1f} s; "
              f"{mine[-1].packages} packages; {mine[-1].bytes / 1e6:.0f} MB")
    time_ratio = best["new"].seconds / best["before"].seconds
    size_ratio = best["new"].bytes / best["before"].bytes
    print(f"new / before: install time {time_ratio:.0%} (best of {args.rounds}), environment size {size_ratio:.0%}, "
          f"packages {best['new'].packages} / {best['before'].packages} (target: at most 60 % of time and size)")
    gone = sorted(set(best["before"].sizes) - set(best["new"].sizes), key=lambda n: -best["before"].sizes[n])
    print(f"left out: {sum(best['before'].sizes[n] for n in gone) / 1e6:.0f} MB in {len(gone)} packages, largest "
          + ", ".join(f"{n} {best['before'].sizes[n] / 1e6:.0f} MB" for n in gone[:8]))
    largest = sorted(best["new"].sizes.items(), key=lambda item: -item[1])[:15]
    print("largest in the new environment: " + ", ".join(f"{n} {size / 1e6:.0f} MB" for n, size in largest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
