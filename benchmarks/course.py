"""A generated course for bulk grading, and the benchmark figures of ``mlsys-grader grade``.

    python benchmarks/course.py build DIR --clean 40        # write a course with every kind of input
    python benchmarks/course.py bench [--workdir DIR]       # print the figures (1,000 and 10,000 submissions)

``BENCH_SKIP_10K=1`` / ``BENCH_SKIP_OTTER=1`` skip the 10,000 run / the ``otter run`` comparison.

``build_course`` is also what ``tests/test_gradebook.py`` grades.  The course holds clean
submissions from ``solve`` (as bundles, Otter export zips, notebook + bundle folders and a
Gradescope export) and the genuine marimo exports of ``tests/fixtures/marimo`` (four
sessions, JSON snapshots and a Markdown report, repeated past four), tampered ones (edited
number, out-of-domain input, stale part, and marimo exports with an edited output or a
prediction changed in its capture only), garbage (non-JSON, truncated zip, zip bomb, 50 MB file,
path-traversal zip, notebook without bundle) and colluding pairs. ``.course-manifest.json``
(JSON) says what each input is and what the gradebook must say about it.
"""

from __future__ import annotations

import argparse
import copy
import csv
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from mlsys_grader import solve
from mlsys_grader.core.jsonio import sha256_of
from mlsys_grader.course._pool import run_tasks
from mlsys_grader.labs import get_lab

LABS = ("lab07", "lab11")
TRACKS = ("tinyml", "mobile", "edge", "cloud")
NOTEBOOK = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
LAST_CPU_S = 0.0


def _reseal(data: dict) -> dict:
    data = copy.deepcopy(data)
    data.pop("content_hash", None)
    data["content_hash"] = sha256_of(data)
    return data


def _solved(lab: str, track: str, seed: int | None) -> dict:
    return json.loads(solve(lab, track, seed).to_json())


ROOT = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def _honest_students() -> tuple[tuple[str, str, int | None, tuple[tuple[str, Any], ...]], ...]:
    """(lab, track, seed, synthesis answers) of every hand-written rationale the repository holds:
    the realistic corpus of ``tests/rationale_corpus`` and the reference answers of each track.
    ``solve``'s own rationale is the grader's template (flagged ``generated``), never a clean student's."""
    fields = ("recommendation", "rejected_alternative", "reevaluation_trigger", "residual_risk", "rationale")
    found = []
    for lab in LABS:
        corpus = tomllib.loads((ROOT / "tests" / "rationale_corpus" / f"{lab}.toml").read_text(encoding="utf-8"))
        for entry in corpus["honest"]:
            found.append((lab, entry["track"], entry.get("seed"), tuple((k, entry[k]) for k in fields if k in entry)))
        references = {track: get_lab(lab).reference_answers(track) for track in get_lab(lab).tracks}
        for track, entry in references.items():
            found.append((lab, track, None, tuple((k, entry[k]) for k in fields if k in entry)))
    found.sort(key=lambda item: (LABS.index(item[0]), item[1], -1 if item[2] is None else item[2]))
    # One student per bundle: two texts on the same (lab, track, seed) would share solve's capture times, a copy.
    distinct = {}
    for item in found:
        distinct.setdefault(item[:3], item)
    found = list(distinct.values())
    by_lab = [[item for item in found if item[0] == lab] for lab in LABS]
    return tuple(item for pair in zip(*by_lab, strict=False) for item in pair)  # alternate the labs; the longer list's tail is unused


def clean_student(index: int) -> tuple[str, dict]:
    """The ``index``-th clean student: a bundle with a hand-written rationale (labs alternate).
    Past the distinct students they repeat, and a repeat is a copy (collusion pairs it)."""
    students = _honest_students()
    lab, track, seed, answers = students[index % len(students)]
    bundle = _solved(lab, track, seed)
    bundle["synthesis"].update(dict(answers))
    return lab, _reseal(bundle)


def _write(path: Path, data: dict | bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, dict):
        path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    elif isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def otter_zip(bundle: dict, lab: str) -> bytes:
    """An Otter export zip: the notebook and ``<lab>-submission.json`` at the root."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{lab}.ipynb", NOTEBOOK)
        archive.writestr(f"{lab}-submission.json", json.dumps(bundle))
    return buffer.getvalue()


MARIMO_FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "marimo"
MARIMO_SESSIONS = (("lab07-cloud.report.md", "lab07", "cloud"), ("lab11-edge.json", "lab11", "edge"),
                   ("lab07-tinyml.json", "lab07", "tinyml"), ("lab11-tinyml.json", "lab11", "tinyml"))
"""Genuine exports of four different sessions of the book's marimo labs (name, lab, track)."""


def marimo_export(index: int) -> tuple[str, bytes, str, str]:
    """The ``index``-th marimo session, unchanged: (file name, bytes, lab, track).  Past four the
    sessions repeat, and a repeat shares its rationale with the first (so they pair as collusion)."""
    name, lab, track = MARIMO_SESSIONS[index % len(MARIMO_SESSIONS)]
    return name, (MARIMO_FIXTURES / name).read_bytes(), lab, track


def tampered_marimo(index: int, edit: str) -> bytes:
    """A genuine JSON export with ``edit``: ``output`` (part C's first computed number ×1.5, its copies
    rewritten to agree) or ``prediction`` (part B's prediction changed in the capture only)."""
    order = [MARIMO_SESSIONS[(index + k) % len(MARIMO_SESSIONS)][0] for k in range(len(MARIMO_SESSIONS))]
    name = next(n for n in order if n.endswith(".json"))
    report = json.loads((MARIMO_FIXTURES / name).read_bytes())
    captures = report["result_snapshot"]["captures"]
    if edit == "output":
        arm = captures["C"]["result"]
        values = arm.get("outputs", arm)
        key = next(k for k, v in values.items() if isinstance(v, float) or (isinstance(v, dict) and isinstance(v.get("magnitude"), float)))
        if isinstance(values[key], dict):
            values[key]["magnitude"] *= 1.5
        else:
            values[key] *= 1.5
        report["evidence_summary"]["C"]["result"] = copy.deepcopy(arm)
        if "C" in report["binding_constraints"]:
            report["binding_constraints"]["C"] = copy.deepcopy(arm["outputs"])
    else:
        lab = "lab07" if report["metadata"]["lab_id"].startswith("v1_07") else "lab11"
        current = captures["B"]["prediction"]
        captures["B"]["prediction"] = next(c for c in get_lab(lab).parts["B"].predictions if c != current)
    return json.dumps(report, indent=2, sort_keys=True).encode()


def build_course(root: str | os.PathLike[str], clean: int = 24, *, garbage: bool = True, big_file: bool = True) -> dict[str, dict]:
    """Write a course under ``root``; returns (and writes) the manifest: input path → expectations.

    Each manifest entry has ``category`` (clean, tampered, garbage, colluding) and, where
    it applies, ``flag`` (a flag the row must carry) or ``reason`` (words the reason holds).
    """
    root = Path(root)
    subs = root / "submissions"
    manifest: dict[str, dict] = {}
    clean_bundles: list[tuple[str, dict]] = []
    gradescope: dict[str, Any] = {}
    marimo = 0
    for i in range(clean):
        style = i % 5
        if style == 4:
            name, data, lab, track = marimo_export(marimo)
            marimo += 1
            path = _write(subs / f"student{i:04d}" / name, data)
            manifest[str(path)] = {"category": "clean", "lab": lab, "track": track}
            continue
        lab, bundle = clean_student(i - marimo)
        track = bundle["track"]
        clean_bundles.append((lab, bundle))
        if style == 0:
            path = _write(subs / f"student{i:04d}" / f"{lab}-submission.json", bundle)
        elif style == 1:
            path = _write(subs / f"student{i:04d}.zip", otter_zip(bundle, lab))
        elif style == 2:
            folder = subs / f"student{i:04d}"
            _write(folder / f"{lab}-submission.json", bundle)
            path = _write(folder / f"{lab}.ipynb", NOTEBOOK)
        elif style == 3:
            folder = root / "gradescope_export" / f"submission_{9000 + i}"
            _write(folder / f"{lab}-submission.json", bundle)
            _write(folder / f"{lab}.ipynb", NOTEBOOK)
            gradescope[f"submission_{9000 + i}"] = {":submitters": [{":name": f"Student {i}", ":sid": f"{i:05d}",
                                                                     ":email": f"student{i}@example.edu"}],
                                                   ":created_at": "2026-03-01 12:00:00 -0800", ":score": 0.0}
            path = folder
        manifest[str(path)] = {"category": "clean", "lab": lab, "track": track}
    if gradescope:
        _write(root / "gradescope_export" / "submission_metadata.yml", yaml.safe_dump(gradescope))

    # -- tampered ------------------------------------------------------------------
    edited = _solved("lab07", "cloud", 7)
    edited["evidence"]["A"]["result"]["dispatch_fraction"] = round(edited["evidence"]["A"]["result"]["dispatch_fraction"] * 0.8, 6)
    manifest[str(_write(subs / "tampered_edited_number.json", _reseal(edited)))] = {"category": "tampered", "flag": "integrity"}
    domain = _solved("lab07", "edge", 8)
    domain["controls"]["B"]["executions"] = 205
    domain["evidence"]["B"]["result"]["inputs"]["executions"] = 205
    manifest[str(_write(subs / "tampered_out_of_domain.json", _reseal(domain)))] = {"category": "tampered", "flag": "integrity"}
    stale = _solved("lab11", "mobile", 9)
    stale["controls"]["C"] = {"operation": "gemm" if stale["controls"]["C"]["operation"] == "scatter" else "scatter",
                              "shape": stale["controls"]["C"]["shape"]}
    manifest[str(_write(subs / "tampered_stale_part.json", _reseal(stale)))] = {"category": "tampered", "flag": "stale"}
    unsealed = _solved("lab11", "edge", 10)
    unsealed["evidence"]["D"]["result"]["inputs"]["local_speedup"] = 4
    manifest[str(_write(subs / "tampered_not_resealed.json", unsealed))] = {"category": "tampered", "flag": "integrity"}
    # Marimo exports from sessions no clean row uses (while there are some), so they pair with nothing.
    for offset, edit in enumerate(("output", "prediction")):
        path = _write(subs / f"tampered_marimo_{edit}" / "v1_snapshot.json", tampered_marimo(marimo + offset, edit))
        manifest[str(path)] = {"category": "tampered", "flag": "integrity"}

    # -- colluding -------------------------------------------------------------------
    lab, original = clean_bundles[0]
    copied = copy.deepcopy(original)
    copied["created_at"] = "2026-01-02T09:00:00Z"
    a = _write(subs / "copy_a" / f"{lab}-submission.json", _reseal(copied))
    donor = _solved("lab11", "cloud", 11)
    taker = _solved("lab11", "cloud", 12)
    words = donor["synthesis"]["rationale"].split()
    words[len(words) // 2] = "clearly"
    taker["synthesis"]["rationale"] = " ".join(words)
    b = _write(subs / "pair_donor" / "lab11-submission.json", donor)
    c = _write(subs / "pair_taker" / "lab11-submission.json", _reseal(taker))
    manifest[str(a)] = {"category": "colluding", "with": str(next(p for p, m in manifest.items() if m["category"] == "clean"))}
    manifest[str(b)] = {"category": "colluding", "with": str(c)}
    manifest[str(c)] = {"category": "colluding", "with": str(b)}

    # -- garbage ---------------------------------------------------------------------
    if garbage:
        g = subs / "garbage"
        manifest[str(_write(g / "not_json.json", "this is not JSON {"))] = {"category": "garbage", "reason": "not valid JSON"}
        good_zip = otter_zip(clean_bundles[1][1], clean_bundles[1][0])
        manifest[str(_write(g / "truncated.zip", good_zip[: len(good_zip) // 2]))] = {"category": "garbage", "reason": "zip"}
        bomb = io.BytesIO()
        with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("lab07-submission.json", b" " * (64 * 1024 * 1024))
        manifest[str(_write(g / "bomb.zip", bomb.getvalue()))] = {"category": "garbage", "reason": "zip bomb"}
        traversal = io.BytesIO()
        with zipfile.ZipFile(traversal, "w") as archive:
            archive.writestr("../../outside.json", "{}")
            archive.writestr("lab07-submission.json", json.dumps(clean_bundles[0][1]))
        manifest[str(_write(g / "traversal.zip", traversal.getvalue()))] = {"category": "garbage", "reason": "path traversal"}
        manifest[str(_write(g / "lonely" / "lab07.ipynb", NOTEBOOK))] = {"category": "garbage", "reason": "lab07-submission.json"}
        manifest[str(_write(g / "deep.json", "[" * 100_000 + "]" * 100_000))] = {"category": "garbage", "reason": "deeper"}
        if big_file:
            big = g / "huge.json"
            big.parent.mkdir(parents=True, exist_ok=True)
            with open(big, "wb") as handle:
                handle.truncate(50 * 1024 * 1024)
            manifest[str(big)] = {"category": "garbage", "reason": "bytes"}
    _write(root / ".course-manifest.json", json.dumps(manifest, indent=1))  # hidden: never an input
    return manifest


# -- benchmark -----------------------------------------------------------------------

def _tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, in MiB (Linux /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, stack = 0, [pid]
    while stack:
        node = stack.pop()
        total += rss.get(node, 0)
        stack.extend(children.get(node, []))
    return total / 2**20


def timed_grade(args: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak resident MiB of the whole process tree, first output line) of one CLI run.

    The CPU seconds of the run (parent and workers) are kept in ``LAST_CPU_S``: on a shared
    machine wall time says more about the neighbours than about the grader.
    """
    global LAST_CPU_S
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "mlsys_grader", "grade", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, _tree_rss_mb(proc.pid))
        time.sleep(0.2)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    LAST_CPU_S = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = proc.stdout.read().strip().splitlines()
    if proc.returncode != 0:
        raise SystemExit(f"mlsys-grader grade failed ({proc.returncode}): {out[-3:]}")
    return wall, peak, out[0] if out else ""


def build_scaled(root: Path, distinct: int, total: int) -> None:
    """``total`` bundle files from ``distinct`` solved bundles (copies re-stamped so every file differs)."""
    made = []
    for i in range(distinct):
        made.append((LABS[i % 2], _solved(LABS[i % 2], TRACKS[(i // 2) % 4], i)))
    for n in range(total):
        lab, bundle = made[n % distinct]
        if n >= distinct:
            bundle = dict(bundle, created_at=f"2026-02-{1 + n % 28:02d}T{(n // 28) % 24:02d}:{n % 60:02d}:00Z")
            bundle = _reseal(bundle)
        _write(root / f"s{n:05d}" / f"{lab}-submission.json", bundle)


def _hostile(task: str) -> dict[str, Any]:
    if task == "sleep":
        time.sleep(60)
    if task == "spin":
        while True:
            pass
    if task == "eat":
        hog = []
        while True:
            hog.append(bytes(50 * 1024 * 1024))  # calloc: address space grows at once, as RLIMIT_AS counts it
    if task == "die":
        os._exit(9)
    if task == "raise":
        raise KeyError("boom")
    return {"status": "graded"}


def hostile_pool(jobs: int) -> None:
    """Print how long the worker pool takes over a batch with a hung, a spinning, a memory-hungry, a crashing and a
    failing task among good ones (1 s limit, 256 MiB): a hung task must not hold the batch."""
    tasks = ["ok", "sleep", "spin", "eat", "die", "raise", "ok"]
    status: dict[str, str] = {}
    start = time.perf_counter()
    run_tasks(tasks, _hostile, jobs=jobs, timeout_s=1.0, memory_mb=256,
              on_result=lambda index, result: status.__setitem__(tasks[index], result["status"]))
    print(f"hostile batch of {len(tasks)} tasks, {jobs} jobs, 1 s limit: {time.perf_counter() - start:.2f} s wall "
          f"({', '.join(f'{task} → {outcome}' for task, outcome in status.items())})")


def final_step(submissions: int = 10_000) -> float:
    """Seconds to build and store the final gradebook (one row per student and lab, late policy applied) from
    ``submissions`` per-input rows: half the students submit each lab twice, a tenth not at all."""
    from datetime import datetime, timedelta, timezone

    from mlsys_grader.course._final import build_final
    from mlsys_grader.course._identity import Roster, RosterStudent
    from mlsys_grader.course._late import Course, CourseFile
    from mlsys_grader.course._row import Row, Status
    from mlsys_grader.course._store import GradebookDB

    students = submissions // 3
    roster = Roster("roster.csv", tuple(RosterStudent(key=f"{i:05d}", name=f"Student {i}", email=f"s{i}@u.edu", sid=f"{i:05d}",
                                                      canvas_id=str(10_000 + i)) for i in range(students + students // 10)))
    deadline = datetime(2026, 2, 6, 23, 59, tzinfo=timezone(timedelta(hours=-8)))
    course = Course("course.toml", CourseFile.model_validate(
        {"labs": {lab: {"deadline": deadline, "grace_minutes": 30, "penalty_per_day": 10, "cap": 50} for lab in LABS}}), {})
    rows = []
    for n in range(submissions):
        student, lab = (n // 2) % students, LABS[n % 2]
        when = deadline + timedelta(hours=(n % 97) - 60)
        identity = {"student": f"{student:05d}", "student_name": "", "student_email": "", "student_id": "", "sis_id": "",
                    "canvas_id": "", "moodle_id": "", "section": "", "submitted_at": when.isoformat(), "late": ""}
        rows.append(Row(path=f"s{n:05d}/{lab}-submission.json", kind="json", identity=identity, input_hash=f"{n:064x}", lab=lab,
                        track="edge", status=Status.GRADED, score=88.0, max_score=100.0, parts={}, points={},
                        flags=("generated",), reasons="", error_kind="", origin="bundle", grader_version="", rubric=""))
    with tempfile.TemporaryDirectory() as folder:
        db = GradebookDB(Path(folder) / "final.sqlite")
        start = time.perf_counter()
        final = build_final(rows, roster, list(LABS), {lab: 100.0 for lab in LABS}, course)
        db.write_final(final)
        seconds = time.perf_counter() - start
        db.close()
    print(f"final gradebook from {submissions:,} submissions ({len(final):,} student-lab rows, late policy applied, "
          f"stored in SQLite): {seconds:.2f} s")
    return seconds


def bench(workdir: Path, jobs: int) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    one_k, ten_k = workdir / "course1000", workdir / "course10000"
    if not one_k.exists():
        t = time.perf_counter()
        build_scaled(one_k, 1000, 1000)
        print(f"built 1,000 distinct solved submissions in {time.perf_counter() - t:.0f} s")
    if not ten_k.exists():
        t = time.perf_counter()
        build_scaled(ten_k, 1000, 10_000)
        print(f"built 10,000 submissions (1,000 distinct evidence sets, re-stamped copies) in {time.perf_counter() - t:.0f} s")
    common = ["--jobs", str(jobs), "--quiet"]
    db = workdir / "bench.sqlite"
    db.unlink(missing_ok=True)
    print(f"load average before the runs: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    final_step()
    hostile_pool(jobs)
    wall, peak, _ = timed_grade([str(one_k), "-o", str(workdir / "g1000.csv"), "--db", str(db), *common])
    cpu = LAST_CPU_S
    print(f"1,000 submissions, {jobs} jobs, cold database, import included: {wall:.2f} s wall, {cpu:.1f} CPU s "
          f"(parent + workers), peak RSS {peak:.0f} MiB")
    wall2, _, _ = timed_grade([str(one_k), "-o", str(workdir / "g1000.csv"), "--db", str(db), *common])
    print(f"1,000 submissions again (all reused from the database): {wall2:.2f} s wall ({wall2 / wall:.0%} of the first run), "
          f"{LAST_CPU_S:.1f} CPU s ({LAST_CPU_S / cpu:.0%})")
    if not os.environ.get("BENCH_SKIP_10K"):
        wall, peak, _ = timed_grade([str(ten_k), "-o", str(workdir / "g10000.csv"), "--no-db", *common])
        print(f"10,000 submissions, {jobs} jobs, no database: {wall:.2f} s wall, {LAST_CPU_S:.1f} CPU s, "
              f"peak RSS of the process tree {peak:.0f} MiB")
    if not os.environ.get("BENCH_SKIP_OTTER"):
        otter_comparison(workdir, jobs)


def otter_comparison(workdir: Path, jobs: int, count: int = 20) -> None:
    """The same ``count`` Otter export zips graded by ``otter run`` one at a time and by ``mlsys-grader grade``."""
    root = Path(__file__).resolve().parents[1]
    references = [(lab, track, root / "solutions" / lab / f"reference-{track}.ipynb") for lab in LABS for track in TRACKS]
    references = [(lab, track, nb) for lab, track, nb in references
                  if nb.is_file() and (root / "examples" / "submissions" / f"{lab}-{track}.json").is_file()]
    autograders = workdir / "autograders"
    if references and not (autograders / "lab07-autograder.zip").is_file():
        built = subprocess.run([sys.executable, "-m", "mlsys_grader", "autograder", "-o", str(autograders), "--no-run-tests"],
                               capture_output=True, text=True, cwd=root)
        if built.returncode != 0:
            print(f"otter run comparison: skipped — building the autograders failed: {built.stderr.strip()[-300:]}")
            return
    if not references:
        print("otter run comparison: skipped — no reference notebooks under solutions/ (autograder issue not landed)")
        return
    zips = workdir / "otter_zips"
    shutil.rmtree(zips, ignore_errors=True)
    zips.mkdir()
    for i in range(count):
        lab, track, notebook = references[i % len(references)]
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.write(notebook, arcname=f"{lab}.ipynb")
            archive.write(root / "examples" / "submissions" / f"{lab}-{track}.json", arcname=f"{lab}-submission.json")
        _write(zips / f"s{i:02d}-{lab}-{track}.zip", buffer.getvalue())
    start = time.perf_counter()
    scores = []
    for path in sorted(zips.glob("*.zip")):
        lab = "lab07" if "-lab07-" in path.name else "lab11"
        out = workdir / "otter_out" / path.stem
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "otter", "run", "-a", str(autograders / f"{lab}-autograder.zip"), "-o", str(out), str(path)],
                       capture_output=True, text=True, cwd=out)
        results = out / "results.json"
        scores.append(json.loads(results.read_text())["score"] if results.is_file() else None)
    otter_s = time.perf_counter() - start
    ours, _, _ = timed_grade([str(zips), "-o", str(workdir / "g_otter.csv"), "--no-db", "--jobs", str(jobs), "--quiet"])
    with open(workdir / "g_otter.csv", newline="", encoding="utf-8") as handle:
        our_scores = [float(row["score"]) for row in csv.DictReader(handle)]
    print(f"{count} Otter export zips: otter run one at a time {otter_s:.1f} s ({otter_s / count:.1f} s each, scores "
          f"{sorted(set(scores), key=str)}), mlsys-grader grade {ours:.2f} s with import (scores {sorted(set(our_scores))}); "
          f"ratio {otter_s / ours:.0f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="write a generated course with every kind of input")
    build.add_argument("root")
    build.add_argument("--clean", type=int, default=40)
    sub.add_parser("final", help="print how long the final-gradebook step takes for 10,000 submissions")
    run = sub.add_parser("bench", help="print the benchmark figures")
    run.add_argument("--workdir", default=None, help="where to keep the generated courses (default: a temp dir)")
    run.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args(argv)
    if args.command == "final":
        final_step()
    elif args.command == "build":
        manifest = build_course(args.root, args.clean)
        print(f"wrote {len(manifest)} inputs under {args.root}")
    else:
        workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="mlsys-bench-"))
        bench(workdir, args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
