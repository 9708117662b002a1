"""The fast mlsysim import reads mlsysim's data exactly as PyYAML's pure-Python loader does."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import LABS, TRACKS, reseal, solved, sweep

import mlsys_grader

# find_spec locates the installed package without importing it.
NOTATION_DATA = Path(importlib.util.find_spec("mlsysim").submodule_search_locations[0]) / "notation" / "data"
DATA_FILES = sorted(path.name for path in NOTATION_DATA.glob("*.yaml"))


def test_the_notation_data_is_where_the_fast_import_expects_it():
    assert len(DATA_FILES) >= 5
    assert {"exempt.yaml", "vocabulary.yaml"} <= set(DATA_FILES)


@pytest.mark.parametrize("name", sweep(DATA_FILES, fast=["exempt.yaml", "vocabulary.yaml"]))
def test_libyaml_safe_loader_gives_identical_notation_data(name):
    """The pure-Python loader takes seconds on the large files: the quick loop checks the small ones."""
    text = (NOTATION_DATA / name).read_text(encoding="utf-8")
    assert yaml.load(text, Loader=yaml.CSafeLoader) == yaml.safe_load(text)


def test_loading_the_evaluators_leaves_yaml_safe_load_as_pyyaml_defines_it():
    mlsys_grader.get_lab("lab11").plan(mlsys_grader.Replay(), "edge", "A", {"change": "bandwidth", "factor": 2}, {})  # evaluators loaded
    assert "mlsysim" in sys.modules
    assert (yaml.safe_load.__module__, yaml.safe_load.__name__) == ("yaml", "safe_load")


@pytest.mark.slow
def test_evaluators_load_on_first_use_and_yaml_is_restored():
    """In a fresh interpreter: neither ``import mlsys_grader`` nor loading a lab imports mlsysim; the lab's first
    evaluation does (through a live replay), and restores yaml."""
    code = (
        "import yaml, sys; before = yaml.safe_load; import mlsys_grader; "
        "assert 'mlsysim' not in sys.modules, 'importing the package must not import mlsysim'; "
        "lab = mlsys_grader.get_lab('lab07'); "
        "assert 'mlsysim' not in sys.modules, 'loading a lab must not import mlsysim'; "
        "lab.plan(mlsys_grader.Replay(), 'cloud', 'B', {'executions': 50, 'recompilations': 0}, {}); "
        "assert yaml.safe_load is before; assert 'mlsysim' in sys.modules; "
        "from mlsysim.notation.registry import Notation; print(len(list(Notation)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 100


# -- grading that the replay table answers never imports mlsysim ------------------------------------------------
def test_the_unit_registry_built_without_mlsysim_is_mlsysims():
    """Every unit the rationale reader maps words to, and every unit a solved bundle records, has the same base
    factor, dimensionality and spelling in the registry built from mlsysim's definition file as in mlsysim's own."""
    from mlsysim.core.units import ureg

    from mlsys_grader import _mlsysim
    from mlsys_grader.core.rationale._quantities import _UNIT_WORDS

    ours = _mlsysim._own_registry()
    assert ours is not ureg and _mlsysim.unit_registry() is ureg  # mlsysim is loaded here: its own registry is used
    units = {unit for meanings in _UNIT_WORDS.values() for unit in meanings if unit and not unit.startswith("%")}
    for lab_id, track in (("lab07", "cloud"), ("lab11", "edge"), ("lab11", "tinyml")):
        units |= set(re.findall(r'"unit": ?"([^"]+)"', json.dumps(solved(lab_id, track, 3))))
    assert len(units) > 40
    checked = 0
    for unit in sorted(units):
        try:
            theirs = ureg.Quantity(1.0, unit).to_base_units()
        except Exception:  # a reader pseudo-unit pint does not know: ours must refuse it too
            with pytest.raises(Exception):  # noqa: B017
                ours.Quantity(1.0, unit).to_base_units()
            continue
        mine = ours.Quantity(1.0, unit).to_base_units()
        assert (repr(mine.magnitude), str(mine.dimensionality), f"{mine.units}") == \
            (repr(theirs.magnitude), str(theirs.dimensionality), f"{theirs.units}"), unit
        checked += 1
    assert checked > 40


_GRADE = """
import json, sys
from pathlib import Path
from mlsys_grader import grade_file
from mlsys_grader.replay import Replay
mode, cache, paths = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
replay = Replay.from_tables(cache) if mode == "table" else Replay()
reports = {Path(p).name: grade_file(p, replay=replay).model_dump_json() for p in paths}
print(json.dumps({"reports": reports, "mlsysim": "mlsysim" in sys.modules,
                  "loaded": sorted(m for m in sys.modules if m.startswith("mlsysim"))[:5]}))
"""


def _grade_in_a_fresh_process(mode: str, cache: Path, paths: list[Path]) -> dict:
    done = subprocess.run([sys.executable, "-c", _GRADE, mode, str(cache), *map(str, paths)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _bundles(tmp_path: Path) -> list[Path]:
    """Full-marks bundles of both labs on every track, and on two tracks a stale one and one with an edited number
    (their messages show recorded quantities in readable units)."""
    paths = []
    for lab_id in LABS:
        for track in TRACKS:
            paths.append(tmp_path / f"{lab_id}-{track}.json")
            paths[-1].write_text(json.dumps(solved(lab_id, track, 5)))
    stale = solved("lab07", "cloud", 5)
    stale["controls"]["B"]["executions"] = 10 if stale["controls"]["B"]["executions"] != 10 else 20
    edited = solved("lab11", "edge", 5)
    latency = edited["evidence"]["D"]["result"]["outputs"]["accelerated"]["total_time"]
    latency["magnitude"] = latency["magnitude"] * 1.5
    stale_c = solved("lab11", "mobile", 5)
    stale_c["controls"]["C"] = {"shape": "misaligned", "operation": "scatter"} if stale_c["controls"]["C"] != {
        "shape": "misaligned", "operation": "scatter"} else {"shape": "aligned", "operation": "scatter"}
    for name, data in (("lab07-stale-b", stale), ("lab11-edited-d", edited), ("lab11-stale-c", stale_c)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(reseal(data)))
    return paths


@pytest.mark.slow  # fresh interpreters and both labs' tables
def test_grading_that_the_table_answers_leaves_mlsysim_unimported_and_gives_the_live_reports(tmp_path, replay_tables_dir):
    cache = replay_tables_dir
    paths = _bundles(tmp_path)
    through_table = _grade_in_a_fresh_process("table", cache, paths)
    assert not through_table["mlsysim"], through_table["loaded"]
    live = _grade_in_a_fresh_process("live", cache, paths)
    assert live["mlsysim"]
    assert through_table["reports"] == live["reports"]
    scores = {name: json.loads(report)["score"] for name, report in live["reports"].items()}
    assert scores["lab07-cloud.json"] == scores["lab11-edge.json"] == 88.0
    assert scores["lab07-stale-b.json"] < 88.0 and scores["lab11-edited-d.json"] < 88.0 and scores["lab11-stale-c.json"] < 88.0
    findings = {name: {(f["part"], f["criterion"]) for f in json.loads(report)["findings"]}
                for name, report in live["reports"].items()}
    assert ("D", "replay") in findings["lab11-edited-d.json"]
    assert ("B", "stale") in findings["lab07-stale-b.json"]
    assert {("C", "stale"), ("D", "stale")} <= findings["lab11-stale-c.json"]  # D's message shows part C's latency


@pytest.mark.slow  # fresh interpreters
def test_a_lab_without_a_table_is_graded_live_with_the_same_report(tmp_path, replay_tables_dir):
    """Only Lab 07's table is there: a Lab 11 bundle is evaluated through mlsysim, a Lab 07 one is not."""
    from mlsys_grader.labs import get_lab
    from mlsys_grader.replay import _table as table

    cache = tmp_path / "replay"
    cache.mkdir()
    shutil.copy(replay_tables_dir / table.table_key(get_lab("lab07")).filename(), cache)
    lab07, lab11 = tmp_path / "lab07.json", tmp_path / "lab11.json"
    lab07.write_text(json.dumps(solved("lab07", "mobile", 6)))
    lab11.write_text(json.dumps(solved("lab11", "cloud", 6)))
    only_lab07 = _grade_in_a_fresh_process("table", cache, [lab07])
    assert not only_lab07["mlsysim"]
    both = _grade_in_a_fresh_process("table", cache, [lab07, lab11])
    assert both["mlsysim"]
    assert both["reports"] == _grade_in_a_fresh_process("live", cache, [lab07, lab11])["reports"]
    assert both["reports"]["lab07.json"] == only_lab07["reports"]["lab07.json"]


_PREPARE = """
import json, sys
from pathlib import Path
from mlsys_grader.labs import get_lab
from mlsys_grader.replay import Replay
replay = Replay.from_tables(Path(sys.argv[1]))
replay.prepare()
print(json.dumps({"mlsysim": "mlsysim" in sys.modules, "pint": "pint" in sys.modules,
                  "tables": {lab: replay.table(get_lab(lab)) is not None for lab in ("lab07", "lab11")}}))
"""


@pytest.mark.slow  # fresh interpreters and both labs' tables
def test_a_worker_prepared_for_a_batch_imports_mlsysim_only_for_a_lab_left_on_live_replay(tmp_path, replay_tables_dir):
    from mlsys_grader.labs import get_lab
    from mlsys_grader.replay import _table as table

    only_lab07, both = tmp_path / "only-lab07", replay_tables_dir
    only_lab07.mkdir()
    shutil.copy(replay_tables_dir / table.table_key(get_lab("lab07")).filename(), only_lab07)

    def prepared(cache: Path) -> dict:
        done = subprocess.run([sys.executable, "-c", _PREPARE, str(cache)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    # The reader's units are the checked-in scales: a worker the tables answer loads no pint either.
    assert prepared(both) == {"mlsysim": False, "pint": False, "tables": {"lab07": True, "lab11": True}}
    assert prepared(only_lab07) == {"mlsysim": True, "pint": True, "tables": {"lab07": True, "lab11": False}}


@pytest.mark.slow  # a fresh interpreter
def test_a_student_check_in_a_fresh_process_loads_neither_bulk_grading_nor_the_notebook_api_nor_staff(tmp_path):
    """``mlsys-grader check`` is what a student waits for: it loads the grader and the lab, never ``course/``,
    ``student/`` or ``staff/`` (their public names in ``mlsys_grader`` load on first use), nor Jinja2 (only an HTML
    page needs it)."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps(solved("lab07", "cloud")), encoding="utf-8")
    code = ("import sys; from mlsys_grader.cli import main; code = main(['check', sys.argv[1]]); "
            "print(code, sorted(m for m in ('mlsys_grader.course', 'mlsys_grader.student', 'mlsys_grader.staff', 'jinja2') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "0 []", done.stdout[-500:]  # graded (exit 0), with nothing else loaded
    from mlsys_grader import BatchOptions, open_lab  # and the names still resolve

    assert callable(open_lab) and BatchOptions.__name__ == "BatchOptions"


# -- a lab's evaluators load with only the mlsysim modules they import -------------------------------------------
_DOMAIN = """
import hashlib, sys
from mlsys_grader._mlsysim import import_mlsysim
if sys.argv[1] == "whole":
    import_mlsysim()
from mlsys_grader.core.jsonio import canonical_dumps
from mlsys_grader.replay._table import build_entries
from mlsys_grader.labs import get_lab
for lab_id in ("lab07", "lab11"):
    entries = build_entries(get_lab(lab_id))
    print(lab_id, len(entries), hashlib.sha256(canonical_dumps(entries).encode()).hexdigest())
print(type(sys.modules["mlsysim"]).__name__, sum(name.startswith("mlsysim.") for name in sys.modules))
"""


@pytest.mark.slow  # both labs' whole domains, evaluated twice in fresh interpreters
def test_every_evaluation_of_both_domains_is_the_same_with_mlsysim_loaded_lazily_or_whole():
    runs = {}
    for how in ("lazy", "whole"):
        done = subprocess.run([sys.executable, "-c", _DOMAIN, how], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        runs[how] = done.stdout.splitlines()
    assert runs["lazy"][:2] == runs["whole"][:2]  # per lab: the same number of evaluations, the same bytes
    assert all(int(line.split()[1]) > 300 for line in runs["lazy"][:2])
    lazy_kind, lazy_modules = runs["lazy"][2].split()
    whole_kind, whole_modules = runs["whole"][2].split()
    assert (lazy_kind, whole_kind) == ("_LazyPackage", "module")  # the lazy run never completed the package
    assert int(lazy_modules) * 4 < int(whole_modules)


_LAZY = """
import sys
from mlsys_grader.labs import get_lab
from mlsys_grader.replay import Replay
get_lab("lab07").plan(Replay(), "cloud", "B", {"executions": 50, "recompilations": 0}, {})
package = sys.modules["mlsysim"]
loaded = sorted(name for name in sys.modules if name.startswith("mlsysim."))
assert type(package).__name__ == "_LazyPackage", type(package)
assert "mlsysim.notation" not in sys.modules and "mlsysim.engine" not in sys.modules, loaded
hardware, ops = package.Hardware, package.Ops
import mlsysim
assert mlsysim is package
engine = mlsysim.Engine  # any other name runs the package's own __init__ in the same module
assert type(mlsysim).__name__ == "module" and "mlsysim.notation" in sys.modules
assert mlsysim.Hardware is hardware and mlsysim.Ops is ops  # bound from the modules __init__ binds them from
from mlsysim import *  # noqa: F403
assert "Engine" in dir(mlsysim) and mlsysim.__version__ == "0.3.0"
print(len(loaded))
"""


@pytest.mark.slow  # a fresh interpreter
def test_a_lazily_loaded_mlsysim_becomes_the_whole_package_on_any_other_name():
    done = subprocess.run([sys.executable, "-c", _LAZY], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert 0 < int(done.stdout) < 40


_FALLBACK = """
import sys
from pathlib import Path
from mlsys_grader._mlsysim import import_evaluator
flag = Path(sys.argv[1]) / "failed-once"
module = import_evaluator("flaky_evaluate")
print(type(sys.modules["mlsysim"]).__name__, flag.exists(), module.VALUE)
"""

_FLAKY = """
from pathlib import Path
from mlsysim.core.units import Q_
flag = Path(__file__).parent / "failed-once"
if not flag.exists():
    flag.write_text("")
    raise RuntimeError("the first import fails")
VALUE = Q_(2, "ms").to("us").magnitude
"""


@pytest.mark.slow  # a fresh interpreter
def test_an_evaluator_that_fails_to_load_lazily_is_loaded_again_with_mlsysim_whole(tmp_path):
    (tmp_path / "flaky_evaluate.py").write_text(_FLAKY, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", _FALLBACK, str(tmp_path)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["module", "True", "2000.0"]
