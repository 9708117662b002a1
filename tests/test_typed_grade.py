"""A grade is read once into typed values (an item's ``ItemKey``, a row's reasons one by one, its flags as a list, an
override's code): no code of the course layer takes a stored string apart again, outside the one reader of an item key
and the numbered migration that rewrites what earlier releases stored."""

from __future__ import annotations

import re
from pathlib import Path

COURSE = Path(__file__).resolve().parents[1] / "mlsys_grader" / "course"
SPLITS = re.compile(r"""\.split\(\s*["'](?: \| |\.|;|:|\|)["']|\.r?partition\(\s*["'][.:;|]["']\)""")
"""Taking apart a reason list (" | "), a "part.item" key, a flag cell (";") or a "kind: why" reason."""
ALLOWED = {
    ("_row.py", 'part, _, item = column.partition(".")'),  # ItemKey.of: the one reader of a stored item key
    ("_migrations.py", 'return [statement.strip() for statement in script.split(";") if statement.strip()]'),  # SQL
    ("_migrations.py", 'kind, _, rest = why.partition(":")'),  # version 6: the code of a reason stored before codes
    ("_migrations.py", 'row["_flags"] = [flag for flag in str(row.get("flags") or "").split(";") if flag]'),  # version 6
    ("_feedback.py", 'name = key.rsplit(".", 1)[-1].lower()'),  # an evidence field's own name, shown (rendering)
    ("_review_app.py", 'host, _, port = request.host.rpartition(":") if request.host.count(":") == 1 else (request.host, "", "")'),
}


def test_no_code_of_the_course_layer_takes_a_stored_string_apart_again():
    found = []
    for path in sorted(COURSE.glob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SPLITS.search(line) and (path.name, line.strip()) not in ALLOWED:
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert found == [], found


def test_the_scan_sees_a_split():
    assert SPLITS.search('pieces = row.reasons.split(" | ")') and SPLITS.search('part = column.split(".", 1)[0]')
    assert SPLITS.search('kind = reason.split(":", 1)[0]') and not SPLITS.search('dict(item.split("=", 1))')
