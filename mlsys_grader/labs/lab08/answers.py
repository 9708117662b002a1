"""Lab 08's hand-written reference answers: the synthesis of the default bundle of each track.

``solve(lab, track)`` (seed None) writes the grader's own template rationale, which the grader flags as generated, so
everything that must score full marks (the master's solution, the reference submissions, the notebook tests) takes its
synthesis from here instead.  Every number is one that bundle's notebook shows, or one a student computes from two
numbers of the same table.  The default part E chooses the fix that cuts update time most and rejects the runner-up
(prefetch on TinyML, faster arithmetic elsewhere), so the recommendation is part E's saved decision.

These are solutions: the student build of the package leaves this module out
(``mlsys_grader.staff._packaging.STUDENT``), and :meth:`Lab.reference_answers` says so.
"""

from __future__ import annotations

import tomllib
from typing import Any

ANSWERS: dict[str, dict[str, Any]] = tomllib.loads(r'''
[tinyml]
recommendation = "prefetch"
rejected_alternative = "arithmetic"
reevaluation_trigger = "target_quality"
residual_risk = "convergence"
rationale = """\
I recommend prefetching input as the first fix for the wake-word teacher run. It takes 40.0 ms off each update \
(206.0 ms to 166.0 ms) and brings time to target from 154.5 s to 124.5 s without changing memory. I reject the \
faster arithmetic path: it saves only 32.8 ms per update and still needs 129.9 s to reach the target. Checkpointing \
is not a speed fix here, since it adds 27.72 ms per update; it only matters at the 256-sample probe, where no \
checkpointing needs 134.9 GB against 85.9 GB and full checkpointing fits in 29.2 GB. The limitation is that the \
convergence trace is supplied scenario evidence, so the 750 updates to target may not transfer to the real teacher. \
If the target quality is missed I would reopen the decision."""

[mobile]
recommendation = "arithmetic"
rejected_alternative = "prefetch"
reevaluation_trigger = "memory"
residual_risk = "timing"
rationale = """\
- Recommendation: the faster arithmetic path. It cuts update time by 37.2 ms (203.2 ms to 166.0 ms) and time to \
target from 152.4 s to 124.5 s, with no change in memory.
- Rejected: prefetching input, which only removes 24.0 ms per update and finishes in 134.4 s.
- Context: under AdamW the optimizer state is 18.0 GB of a 32.6 GB total, six times the 3.0 GB of weights, and BF16 \
reaches the target at 32.6 GB where FP32 needs 47.3 GB.
- Limitation: the stage timings are illustrative fixtures, not measurements on the A100, so the ranking of the two \
fixes could shift.
- Trigger: if training memory exceeds capacity (the 64-sample probe already needs 92.1 GB of 85.9 GB without \
checkpointing), I would revisit the plan."""

[edge]
recommendation = "arithmetic"
rejected_alternative = "prefetch"
reevaluation_trigger = "schedule_cost"
residual_risk = "numerical"
rationale = """\
My recommendation is faster arithmetic first. The backward stage dominates the update, so the arithmetic path saves 49.2 ms per update \
and gets to the target in 150.3 s instead of 187.2 s. Prefetch is the alternative I reject: it only saves 16.0 ms \
and still takes 175.2 s. The batch results point the same way: the resident batch of 32 would be faster on paper \
(161.85 s) but needs 117.3 GB against 85.9 GB, so the accumulated 8 x 4 batch at 249.6 ms per update is the design \
that actually runs. Caveat: BF16 was accepted on a finite numerical replay, which could miss a rare instability in a \
longer run. I would look again if the schedule or cost limit is crossed."""

[cloud]
recommendation = "arithmetic"
rejected_alternative = "prefetch"
reevaluation_trigger = "schedule_cost"
residual_risk = "timing"
rationale = """\
I recommend the faster arithmetic path on the H100 host. It lowers update time from 360.3 ms to 285.9 ms, a cut of \
74.4 ms, and time to target from 270.2 s to 214.4 s with no extra memory. I reject prefetching input because it saves \
only 16.8 ms per update (257.6 s to target); the input stage is not what binds. The memory side is settled by the \
other parts: BF16 fits in 60.0 GB while FP32 needs 102.0 GB of the 85.9 GB available, and resident batch 32 would need \
311.0 GB, so accumulation stays. The remaining limitation is that these stage timings are illustrative and may change \
on real hardware. I would re-evaluate if the schedule or cost limit is crossed."""
''')
"""Track → synthesis answer → value."""
