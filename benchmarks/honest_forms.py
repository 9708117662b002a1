"""Honest rationales in the forms students type, and the gaming cases beside them (prints figures).

    python benchmarks/honest_forms.py

Each text is graded on the default bundle of its lab and track (``mlsys_grader.solve``), with its synthesis answers.
Honest texts — option values as typed, Markdown headings and tables, abbreviations and short verdicts, terse
limitations, in both labs and every track — print the share of rationale points they keep (the bar: at least 99 %).
Gaming texts print what they earn beside what a fair reader gives them.  None of these texts is in the test corpus:
they were written after the reader's rules, to measure them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from conftest import reseal, solved  # noqa: E402  (the tests' bundle factory)

from mlsys_grader import grade_bundle  # noqa: E402

L07 = {"recommendation": "compiled_fused", "rejected_alternative": "eager", "reevaluation_trigger": "execution_count",
       "residual_risk": "timing_assumptions"}
L07_NONE = {"recommendation": "none", "rejected_alternative": "compiled_fused", "reevaluation_trigger": "operator_set",
            "residual_risk": "target_measurement"}
L11 = {"reevaluation_trigger": "energy", "residual_risk": "power"}
L11_CONTRACT = {"reevaluation_trigger": "latency", "residual_risk": "contract"}

HONEST = [
    ("lab07", "tinyml", L07_NONE, "Decision: none. host_callback has no path on the ESP32-S3, so neither compiled "
     "(93.210 ms) nor eager (340.960 ms) can ship. Rej: compiled_fused. Nothing was measured on the real board. "
     "Revisit when the operator set changes."),
    ("lab07", "mobile", L07, "**Recommendation:** Compiled-Fused\n**Rejected:** Eager\n\nOver 50 executions compiled "
     "costs 63.998 ms against 361.748 ms eager. The timings are illustrative assumptions. If the execution count "
     "drops I would re-run the comparison."),
    ("lab07", "edge", L07, "| option | total at 50 runs |\n|---|---|\n| compiled_fused (recommended) | 18.418 ms |\n"
     "| eager (rejected) | 66.168 ms |\n\nTiming assumptions are illustrative. Revisit if the execution count changes."),
    ("lab07", "cloud", L07, "Rec: COMPILED_FUSED. Rej: eager → out, 14.243 ms vs 8.993 ms for compiled at 50 runs. "
     "Timings illustrative, not measured. Revisit if the execution count falls."),
    ("lab07", "edge", L07, "## Decision\nCompiled with fusion.\n\n## Not chosen\nEager: 66.168 ms against 18.418 ms "
     "over 50 executions.\n\n## Caveat\nThe timing assumptions are illustrative.\n\n## When to revisit\nIf the "
     "execution count changes."),
    ("lab07", "mobile", L07, "compiled_fused wins over 50 executions (63.998 ms vs 361.748 ms), so eager rejected. "
     "Caveat: timing assumptions are illustrative. Revisit if the execution count shrinks."),
    ("lab11", "tinyml", L11, "Rec: primary (nRF52840). Rej: alt (ESP32-S3), even at 5.218 ms end to end and "
     "0.4874 mJ. A 10x faster kernel only gives 1.836x overall. Power draw differs from the TDP proxy. Revisit if "
     "the energy budget tightens."),
    ("lab11", "mobile", L11, "## Recommendation\nPrimary: the Apple M2.\n\n## Rejected\nThe iPhone 15 Pro, at "
     "8.031 ms and 10.15 mJ per inference.\n\n## Limitation\nPower draw differs from the TDP proxy.\n\n## Trigger\n"
     "Revisit when the energy budget tightens."),
    ("lab11", "edge", L11, "| candidate | verdict |\n|---|---|\n| primary (AGX Orin) | retained |\n"
     "| alternative (Orin NX, 3.631 ms, 15.77 mJ) | rejected |\n\nPower draw differs from the TDP proxy, so I would "
     "revisit if the energy budget tightens."),
    ("lab11", "cloud", L11, "The H100 is retained; the A100 → out at 6.195 ms end to end and 878 mJ. A 10x kernel "
     "speedup gives only 1.003x overall. Power draw differs from the TDP proxy. Revisit if the energy budget "
     "tightens."),
    ("lab11", "edge", L11_CONTRACT, "Rec: primary (Jetson AGX Orin). Rej: Orin NX, 3.631 ms end to end against the "
     "latency budget. Kernels may differ from contract. Revisit if the latency budget tightens."),
    ("lab11", "mobile", L11_CONTRACT, "Primary (M2 NE) it is; alt (iPhone 15 Pro) rejected at 8.031 ms per frame. "
     "Deployed kernels may differ from the contract. I would revisit if the latency budget tightens."),
]

# A second batch, written after the reader's rules were set by the first, and measured once as written.
HONEST_SECOND = [
    ("lab07", "cloud", L07, "## Verdict\ncompiled_fused\n\n## Against\neager, since it needs 14.243 ms where compiled "
     "needs 8.993 ms over 50 executions.\n\n## Risk\nThe timings are assumed, not measured.\n\n## Revisit\nIf the "
     "execution count changes a lot."),
    ("lab07", "edge", L07, "- Rec: compiled fused\n- Rej: eager (66.168 ms vs 18.418 ms at 50 executions)\n- Limitation: "
     "illustrative timings\n- Trigger: re-evaluate if the execution count drops below the break-even"),
    ("lab07", "mobile", L07, "I'd ship Compiled_Fused. Eager is out: 361.748 ms against 63.998 ms over 50 runs. These "
     "timings are modeled rather than measured, so I would revisit if the execution count changes."),
    ("lab07", "tinyml", L07_NONE, "Verdict: no feasible target path; host_callback is unsupported on the ESP32-S3. "
     "compiled_fused rejected: its 93.210 ms against 340.960 ms for eager does not matter if the graph cannot run. "
     "Nothing was measured on the real board; revisit once the operator set changes."),
    ("lab11", "edge", L11, "Rec: primary (Jetson AGX Orin). Rej: alt (Orin NX), 3.631 ms and 15.77 mJ per request. "
     "The power draw differs from the TDP proxy. Re-evaluate if the energy budget tightens."),
    ("lab11", "tinyml", L11, "| role | board | verdict |\n|---|---|---|\n| primary | nRF52840 | kept |\n| alternative "
     "| ESP32-S3 (5.218 ms, 0.4874 mJ) | rejected |\n\nPower draw differs from the TDP proxy; revisit if the energy "
     "budget tightens."),
    ("lab11", "cloud", L11_CONTRACT, "H100 retained. A100 rejected at 6.195 ms end to end. Kernels may differ from the "
     "contract. Revisit if the latency budget tightens."),
    ("lab11", "mobile", L11, "Going with the primary, the Apple M2; the iPhone 15 Pro → out, 8.031 ms and 10.15 mJ per "
     "inference. Power draw differs from the TDP proxy. I'd revisit if the energy budget tightens."),
]

# (lab, track, answers, text, what a fair reader gives of the 12 rationale points, why)
GAMING = [
    ("lab07", "edge", L07, "I recommend compiled with fusion and I reject eager execution. Timing assumptions are "
     "illustrative. I would revisit if the execution count changes. Numbers: 18.42 ms. And 66.17 ms.", 8,
     "numbers tied to nothing: no evidence point"),
    ("lab11", "edge", L11, "I choose the primary Jetson AGX Orin and I reject the Orin NX. Power draw differs from the "
     "TDP proxy. I would revisit if the energy budget tightens. Numbers: 3.631 ms. Also 15.77 mJ.", 8,
     "numbers tied to nothing: no evidence point"),
    ("lab07", "edge", L07, "I recommend compiled with fusion: 18.42 ms against 66.17 ms eager at 50 executions. Timing "
     "assumptions are illustrative; revisit if the execution count changes. I do not recommend compiled with fusion "
     "for this deployment.", 8, "contradiction: no naming points"),
    ("lab11", "edge", L11, "I choose the primary Jetson AGX Orin over the Orin NX, which needs 3.631 ms end to end. "
     "Power draw differs from the TDP proxy; revisit if the energy budget tightens. I would not choose the primary "
     "Jetson AGX Orin for this deployment.", 8, "contradiction: no naming points"),
    ("lab07", "edge", L07, "Rec: eager. Rej: compiled_fused. 66.17 ms eager vs 18.42 ms compiled at 50 executions. "
     "Timing assumptions are illustrative; revisit if the execution count changes.", 8,
     "contradiction: no naming points"),
    ("lab07", "edge", L07, "Ich empfehle compiled with fusion und lehne eager ab: 18.42 ms gegen 66.17 ms bei 50 "
     "Ausführungen. Die Zeiten sind nur Annahmen, und ich würde neu bewerten, wenn sich die Zahl der Ausführungen "
     "ändert, aber das ist nicht sicher.", 0, "not English: every item to staff"),
]


def _grade(lab: str, track: str, answers: dict, text: str):
    data = json.loads(json.dumps(solved(lab, track)))
    data["synthesis"].update(answers)
    data["synthesis"]["rationale"] = text
    report = grade_bundle(reseal(data))
    items = [i for i in report.parts["synthesis"].items if i.item.startswith("rationale_")]
    return sum(i.points for i in items), sum(i.max_points for i in items), report


def main() -> int:
    kept = total = 0.0
    print("honest texts: rationale points kept")
    for lab, track, answers, text in HONEST:
        points, most, report = _grade(lab, track, answers, text)
        kept, total = kept + points, total + most
        lost = [i.item for i in report.parts["synthesis"].items if i.points < i.max_points]
        print(f"  {lab} {track:6} {points:g}/{most:g}  {text[:60]!r}" + (f"  lost {lost}" if lost else ""))
    share = kept / total
    print(f"honest: {kept:g} of {total:g} rationale points kept ({share:.1%})")
    second = [_grade(lab, track, answers, text) for lab, track, answers, text in HONEST_SECOND]
    for (lab, track, _, text), (points, most, report) in zip(HONEST_SECOND, second, strict=True):
        lost = [i.item for i in report.parts["synthesis"].items if i.points < i.max_points]
        print(f"  {lab} {track:6} {points:g}/{most:g}  {text[:60]!r}" + (f"  lost {lost}" if lost else ""))
    kept_second, total_second = sum(p for p, _, _ in second), sum(m for _, m, _ in second)
    print(f"honest, second batch: {kept_second:g} of {total_second:g} rationale points kept ({kept_second / total_second:.1%})")
    print("gaming texts: earned / what a fair reader gives")
    over = 0
    for lab, track, answers, text, fair, why in GAMING:
        points, most, report = _grade(lab, track, answers, text)
        uncertain = [i.item for i in report.uncertain_items()]
        over += points > fair
        print(f"  {lab} {track:6} {points:g}/{most:g} (fair {fair}) {why}; uncertain {uncertain}")
    print(f"gaming texts earning more than a fair reader: {over} of {len(GAMING)}")
    return 0 if share >= 0.99 and not over else 1


if __name__ == "__main__":
    raise SystemExit(main())
