"""Issue 15's measurements of the text normalisation and the template-sentence rule (prints figures).

    python benchmarks/template_sentences.py [--repeat 3]

1. The invisible-character attack: one of U+200B, U+200C, U+2060, U+00AD inside every filler
   word of ``solve``'s template (names and the reader's cue words left intact), 4 seeds × 4
   tracks × 2 labs: how many bundles are flagged ``generated`` and how many earn 12/12.
2. The paraphrase ladder: k = 0 … all of the template's sentences rewritten by hand (the
   rewrites of ``tests/test_generated.py``), in the template's order, every track, seeds
   None and 3: ``G`` flagged, ``p`` partly template (a note), ``-`` none; then the rationale points.
   Then the same with rewrites that cite no number (what kept template evidence is worth).
3. Grading time per bundle (in-process, replay caches warm) for the corpus's honest texts,
   for partly-template texts and for ``solve``'s own: the cost of the sentence comparison.

Run it with ``PYTHONPATH`` pointing at another checkout to compare (the figures of steps 1
and 2 before issue 15 come from the commit before it).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from conftest import LABS, TRACKS, reseal, solved  # noqa: E402  (the tests' bundle factory)
from test_generated import INVISIBLE_ATTACK, _invisible_in_filler_words, _names, _rewrite, _sentences  # noqa: E402

from mlsys_grader import grade_bundle  # noqa: E402
from mlsys_grader.core import generated  # noqa: E402


def _graded(data: dict, text: str):
    data = json.loads(json.dumps(data))
    data["synthesis"]["rationale"] = text
    return grade_bundle(reseal(data))


def _points(report) -> float:
    return sum(i.points for i in report.parts["synthesis"].items if i.item.startswith("rationale_"))


def _mark(report) -> str:
    if any(f.criterion == "generated" and f.message == generated.MESSAGE for f in report.findings):
        return "G"
    return "p" if any(f.criterion == "generated" for f in report.findings) else "-"


def attack() -> None:
    flagged = full = total = 0
    for lab in LABS:
        for track in TRACKS:
            for seed, char in zip((None, 1, 7, 3), INVISIBLE_ATTACK, strict=True):
                data = solved(lab, track, seed)
                report = _graded(data, _invisible_in_filler_words(data["synthesis"]["rationale"], _names(lab, data), char))
                total += 1
                flagged += "generated" in report.flags
                full += _points(report) == 12
    print(f"invisible characters in filler words: {flagged}/{total} flagged, {full}/{total} with 12/12 rationale points")


def ladder(without_numbers: bool) -> None:
    def rewrite(sentence: str) -> str:
        text = _rewrite(sentence)
        return re.sub(r"\d[\d.e+-]*\s?(?:ms|MB|mJ|µs|x)\b", "a lot", text) if without_numbers else text

    print("ladder" + (" (rewrites cite no number)" if without_numbers else "") + ": k rewritten → mark, rationale points")
    for lab in LABS:
        for track in TRACKS:
            for seed in (None, 3):
                data = solved(lab, track, seed)
                template = _sentences(data["synthesis"]["rationale"])
                row = []
                for k in range(len(template) + 1):
                    report = _graded(data, " ".join(rewrite(s) if i < k else s for i, s in enumerate(template)))
                    row.append(f"{k}:{_mark(report)}{_points(report):g}")
                print(f"  {lab} {track:6} seed {seed!s:4} " + " ".join(row))


def timing(repeat: int) -> None:
    honest = []
    for path in sorted((ROOT / "tests" / "rationale_corpus").glob("*.toml")):
        for entry in tomllib.loads(path.read_text(encoding="utf-8"))["honest"]:
            data = solved(path.stem, entry["track"], entry.get("seed"))
            data["synthesis"].update({k: v for k, v in entry.items() if k in data["synthesis"]})
            honest.append(json.dumps(reseal(data)).encode())
    partly, template = [], []
    for lab in LABS:
        for track in TRACKS:
            for seed in range(4):
                data = solved(lab, track, seed)
                sentences = _sentences(data["synthesis"]["rationale"])
                template.append(json.dumps(data).encode())
                data["synthesis"]["rationale"] = " ".join(_rewrite(s) if i % 2 == 0 else s for i, s in enumerate(sentences))
                partly.append(json.dumps(reseal(data)).encode())
    for name, blobs in (("honest corpus", honest), ("partly template", partly), ("solve's template", template)):
        for blob in blobs:
            grade_bundle(blob)  # warm the replay caches
        times = []
        for _ in range(repeat):
            for blob in blobs:
                started = time.perf_counter()
                grade_bundle(blob)
                times.append(time.perf_counter() - started)
        print(f"grading, {name:16}: {statistics.median(times) * 1000:.2f} ms median of {len(times)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    attack()
    ladder(without_numbers=False)
    ladder(without_numbers=True)
    timing(args.repeat)


if __name__ == "__main__":
    main()
