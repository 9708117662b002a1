"""Lab 02's hand-written reference answers: the synthesis of the default bundle of each track.

``solve(lab, track)`` (seed None) writes the grader's own template rationale, which the grader flags as generated, so
everything that must score full marks (the master's solution, the reference submissions, the notebook tests) takes its
synthesis from here instead.  Every number is one that bundle's notebook shows, or one a student computes from two
numbers of the same table.  The recommendation is part D's captured placement (local execution on every track's
defaults); the rejected alternative is the student's to choose.

These are solutions: the student build of the package leaves this module out
(``mlsys_grader.staff._packaging.STUDENT``), and :meth:`Lab.reference_answers` says so.
"""

from __future__ import annotations

import tomllib
from typing import Any

ANSWERS: dict[str, dict[str, Any]] = tomllib.loads(r'''
[tinyml]
recommendation = "local"
rejected_alternative = "raw"
reevaluation_trigger = "connectivity"
residual_risk = "energy"
rationale = """\
I recommend running inference locally on the sensor: it takes 8 ms against the 100 ms deadline and needs no link at all. \
Sending the raw 1.6 MB reading over the 2 Mb/s link is hopeless: the upload alone is 6400 ms, so the remote \
path takes 6426 ms, and the missed-deadline boundary at this rate is only 0.0185 MB. Raw input also breaks the \
0.1 MB upload cap, so I reject it. Event filtering helps (157 ms) but still misses the deadline, and the feature \
summary keeps only 86% of the information. What worries me is energy: at a 75% duty cycle the node draws 0.3 W \
against a 0.05 W budget, and that power figure is only a fixture, not measured on the real board. If the connection becomes unavailable nothing changes for local inference, but if a better link appears \
I would revisit the remote options."""

[mobile]
recommendation = "local"
rejected_alternative = "event_filter"
reevaluation_trigger = "payload"
residual_risk = "network"
rationale = """\
My recommendation is on-device inference for the media assistant: 24 ms locally, well inside the 100 ms \
deadline. I reject filtering events and then sending, because even with only 0.32 MB uploaded it takes \
105 ms over the 40 Mb/s link, 5 ms past the deadline, and it gives up 5% of the information. Raw remote is \
far worse at 3238 ms for the 16 MB request. The catch is the connection rate: all of these remote numbers \
assume a steady symmetric 40 Mb/s, and real mobile links vary, so the margin could move either way. The \
local side is not free either: doubling resident memory needs 1040 MB of a 768 MB budget. I would revisit \
the placement if the payload grows past the saved 0.31 MB boundary in the other direction, i.e. if requests \
shrink enough that the remote path fits."""

[edge]
recommendation = "local"
rejected_alternative = "feature_summary"
reevaluation_trigger = "duty_cycle"
residual_risk = "information"
rationale = """\
Decision: run inference locally at the inspection station (16 ms against a 50 ms deadline). Rejected: \
sending a feature summary. It is quick, 32.24 ms with only 0.12 MB uploaded, but it retains 89% of the \
information where the task needs 92%, so it fails on information, not speed. Raw transfer of the 24 MB frame \
takes 1934.64 ms at 100 Mb/s, and the event filter lands at 56.04 ms, just past the deadline. My main doubt is \
the filtering evidence itself: those retained-information percentages are supplied observations for one \
matched task and may not transfer to other defects. Power is the other constraint to watch: at a 75% duty \
cycle the station averages 19.75 W against a 15 W budget, so if the observation or power requirement changes \
I would re-evaluate the placement."""

[cloud]
recommendation = "local"
rejected_alternative = "event_filter"
reevaluation_trigger = "connectivity"
residual_risk = "information"
rationale = """\
I recommend local inference on the regional ingress host. It finishes in 80 ms, inside the 120 ms deadline, \
with nothing to upload. I reject event filtering plus the central accelerator even though it is faster \
(23 ms with 0.08 MB uploaded): it depends on the link and keeps 97% of the information, and that figure is a \
supplied observation that may not hold for other documents. Raw remote is out at 176.8 ms, since the 4 MB \
request exceeds the 2.58 MB boundary at 200 Mb/s. The local host has its own limits: doubling the work needs \
36000 MB of 24000 MB memory and 160 ms of execution. I would revisit this if the connection becomes \
unavailable or far more reliable, since the remote design only works while the link is up."""
''')
"""Track → synthesis answer → value."""
