"""The local review page: ``mlsys-grader review --db gradebook.sqlite`` (Flask; ``pip install "mlsys-grader[review]"``).

Bound to 127.0.0.1 only, with a random access token in the URL as Jupyter does: the first
request carries ``?token=…`` and gets it back as an HttpOnly, SameSite=Strict cookie.  Every
request without the token is refused (403); so is every state change that is not a POST
carrying the token in its form (the page's own forms do) from the page's own origin.
Student text reaches the page only through Jinja2's autoescaping (never ``|safe``), so a
rationale holding ``<script>``, HTML or Markdown shows as the text it is.

The page is computed from the gradebook on every request (:func:`._review.build_queue`), so
a decision made in another tab, or imported from CSV meanwhile, is what the next page shows.
Not in the student kit (``_packaging.STUDENT`` leaves this module out) nor the Gradescope image.
"""

from __future__ import annotations

import contextlib
import difflib
import hmac
import itertools
import os
import re
import secrets
import threading
import webbrowser
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, abort, redirect, render_template, request, url_for
from werkzeug.serving import make_server

from ..core.generated import matched_runs
from ..errors import DecisionError
from ._decisions import CONFIRM
from ._review import FULL, Decision, Entry, WholeDecision, add_request, apply_decisions, build_queue, decide_code
from ._row import ItemKey
from ._store import GradebookDB

COOKIE = "mlsys_review_token"
TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
SHARED_WORDS = 6
"""Runs of at least this many words shared with the other submission are marked."""


@dataclass(frozen=True)
class Segment:
    """A run of the rationale with the spans that cover it (kinds for the CSS class, labels for the tooltip)."""

    text: str
    kinds: tuple[str, ...]
    labels: tuple[str, ...]


def segments(text: str, spans: Sequence[Sequence[Any]]) -> list[Segment]:
    """``text`` cut at every span boundary; each piece knows every span covering it (spans may overlap)."""
    spans = [s for s in spans if 0 <= int(s[0]) < int(s[1]) <= len(text)]
    cuts = sorted({0, len(text), *(int(s[0]) for s in spans), *(int(s[1]) for s in spans)})
    out = []
    for low, high in itertools.pairwise(cuts):
        covering = [s for s in spans if int(s[0]) <= low and high <= int(s[1])]
        out.append(Segment(text[low:high], tuple(dict.fromkeys(str(s[2]) for s in covering)),
                           tuple(dict.fromkeys(str(s[3]) for s in covering))))
    return out


def shared_spans(mine: str, other: str, label: str) -> list[list[Any]]:
    """Spans of ``mine`` that repeat ``other`` word for word for :data:`SHARED_WORDS` words or more."""
    def words(text: str) -> list[tuple[str, int, int]]:
        return [(m.group().lower(), m.start(), m.end()) for m in re.finditer(r"\w+", text)]

    a, b = words(mine), words(other)
    matcher = difflib.SequenceMatcher(None, [w for w, *_ in a], [w for w, *_ in b], autojunk=False)
    return [[a[block.a][1], a[block.a + block.size - 1][2], "shared", label]
            for block in matcher.get_matching_blocks() if block.size >= SHARED_WORDS]


def _parts_concerned(entry: Entry, evidence: Mapping[str, Any]) -> list[str]:
    parts = {ItemKey.of(item.column).part for item in entry.items}
    return sorted(evidence) if "synthesis" in parts or not parts & set(evidence) else sorted(parts & set(evidence))


MAX_BODY = 64 * 1024
"""Bytes a request body may hold (a form with every item of a lab and its comment is a few KiB)."""
FIELD_LIMITS = {"comment": 2000, "reason": 1000, "item": 200, "lab": 100, "student": 500, "input_hash": 128}
"""Characters each text field of the page's forms may hold (shown in the forms as maxlength)."""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")


def whole_number(form: Mapping[str, str], field: str, default: int = 1) -> int:
    """A form field holding a whole number; a malformed one is answered 400 naming the field, never a traceback."""
    raw = (form.get(field) or "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        abort(400, f"{field}: expected a whole number (got {raw[:40]!r})")


def check_lengths(form: Mapping[str, str]) -> None:
    """Every text field within its limit (:data:`FIELD_LIMITS`), else 400 naming the field: nothing is stored."""
    for field, most in FIELD_LIMITS.items():
        value = form.get(field) or ""
        if len(value) > most:
            abort(400, f"{field}: at most {most:,} characters (got {len(value):,})")


def _shown(value: Any) -> str:
    """A part's settings or a choice in a cell: ``dispatches=2, executions=120``; a missing one as ``—``."""
    if value is None:
        return "—"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items())) or "—"
    return str(value)


def saved_words(made: Sequence[Any], before: float | None, after: float | None) -> str:
    """What a save changed, for the page to confirm it: each decision, and the final score before and after."""
    what = [f"{m.item} {m.old_points:g} → {m.new_points:g}" if hasattr(m, "item") else m.words().split(" by ")[0]
            for m in made]
    if not what:
        return "nothing to save: no points were typed"
    final = f"final {before:g} → {after:g}" if before is not None and after is not None else ""
    return ("saved: " + "; ".join(what) + (f"; {final}" if final else ""))[:500]


def create_app(db_path: str | os.PathLike[str], *, token: str, by: str = "") -> Flask:
    """The review page's Flask app for the gradebook at ``db_path``, answering only requests that carry ``token``."""
    app = Flask(__name__, template_folder=str(TEMPLATES))
    # NOTE: a request body over MAX_BODY is answered 413 before any of it is read or stored.
    app.config.update(REVIEW_DB=os.fspath(db_path), REVIEW_BY=by, REVIEW_PORT=None, MAX_CONTENT_LENGTH=MAX_BODY)
    app.jinja_env.filters["g"] = lambda value: f"{float(value):g}"  # 3, 2.5, 0.125: as every other page writes numbers

    def authorised() -> bool:
        given = request.args.get("token") or request.cookies.get(COOKIE) or ""
        return hmac.compare_digest(given.encode(), token.encode())

    @app.before_request
    def guard() -> Response | None:
        # A DNS-rebinding page reaches 127.0.0.1 under its own host name: only the loopback names are served.
        host, _, port = request.host.rpartition(":") if request.host.count(":") == 1 else (request.host, "", "")
        served = app.config["REVIEW_PORT"]
        if host not in LOOPBACK_HOSTS or (served is not None and port != str(served)):
            abort(400, f"this page answers only to 127.0.0.1 or localhost on its own port (got Host {request.host!r})")
        if not authorised():
            abort(403, "this page needs the access token printed by `mlsys-grader review`")
        if request.method not in ("GET", "HEAD"):
            origin = request.headers.get("Origin") or request.headers.get("Referer") or ""
            here = f"{request.scheme}://{request.host}"
            if origin and f"{urlsplit(origin).scheme}://{urlsplit(origin).netloc}" != here:
                abort(403, "a change from another origin is refused")
            if not hmac.compare_digest((request.form.get("token") or "").encode(), token.encode()):
                abort(403, "a change must come from the review page's own form")
        return None

    @app.after_request
    def remember(response: Response) -> Response:
        if request.args.get("token"):
            response.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
        response.headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'; " \
                                                      "script-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"  # NOTE: "no-referrer" makes Chromium send "Origin: null" with our own forms
        return response

    def open_db() -> GradebookDB:
        return GradebookDB(app.config["REVIEW_DB"])

    @app.get("/")
    def index() -> Any:
        return redirect(url_for("entry", number=1))

    @app.get("/entry/<int:number>")
    def entry(number: int, problems: Sequence[str] = (), status: int = 200) -> Any:
        saved = (request.args.get("saved") or "")[:500] if request.method == "GET" else ""
        db = open_db()
        try:
            queue = build_queue(db, include_decided=True)
            pending = [e for e in queue if not e.decided]
            if not queue:
                return render_template("review.html", queue=[], pending=0, entry=None, number=0, token=token, by=by,
                                       problems=problems)
            number = min(max(number, 1), len(queue))
            current = queue[number - 1]
            result = db.result(current.input_hash) or {}
            final = {(r["student"], r["lab"]): r for r in db.final()}
            row = final.get((current.student, current.lab))
            rationale = str(result.get("rationale", ""))
            spans: list[Sequence[Any]] = list(result.get("spans") or [])
            mine_all = {t for times in (result.get("part_times") or {}).values() for t in times}
            others, others_all = [], set()
            for student in row.collusion_with if row is not None else ():
                other_row = final.get((student, current.lab))
                if not other_row or not other_row.get("input_hash"):
                    continue
                other = db.result(other_row["input_hash"]) or {}
                other_text = str(other.get("rationale", ""))
                other_times = other.get("part_times") or {}
                others_all |= {t for times in other_times.values() for t in times}
                spans += shared_spans(rationale, other_text, f"the same words as {student}")
                mine_controls, their_controls = result.get("controls") or {}, other.get("controls") or {}
                mine_choices, their_choices = result.get("choices") or {}, other.get("choices") or {}
                settings = [(part, _shown(mine_controls.get(part)), _shown(their_controls.get(part)),
                             mine_controls.get(part) == their_controls.get(part))
                            for part in sorted(set(mine_controls) | set(their_controls))]
                settings += [(name, _shown(mine_choices.get(name)), _shown(their_choices.get(name)),
                              mine_choices.get(name) == their_choices.get(name))
                             for name in sorted(set(mine_choices) | set(their_choices))]
                others.append({"student": student, "name": other_row.get("student_name", ""), "settings": settings,
                               "segments": segments(other_text, shared_spans(other_text, rationale,
                                                                             f"the same words as {current.student}")),
                               "times": {part: [(t, t in mine_all) for t in times] for part, times in other_times.items()}})
            template = result.get("template") or {}
            shown_template = None
            if template.get("text"):
                text = str(template["text"])
                shown_template = {
                    "template": segments(text, [[a, b, "template", "repeated in the rationale"]
                                                for a, b in matched_runs(text, rationale)]),
                    "mine": segments(rationale, [[a, b, "template", "the template's words"] for a, b in matched_runs(rationale, text)]),
                    "sentences": list(template.get("sentences") or [])}
            evidence = result.get("evidence") or {}
            mine_times = {part: [(t, t in others_all) for t in times] for part, times in (result.get("part_times") or {}).items()}
            body = render_template(
                "review.html", queue=queue, pending=len(pending), entry=current, number=number, token=token, by=by,
                problems=problems, saved=saved, row=row if row is not None else {}, segments=segments(rationale, spans),
                legend=sorted({(str(s[2]), str(s[3])) for s in spans}, key=lambda s: (s[0], s[1])),
                choices=result.get("choices") or {}, findings=result.get("findings") or [],
                evidence=[(part, sorted((evidence.get(part) or {}).items())) for part in _parts_concerned(current, evidence)],
                others=others, times=mine_times, template=shown_template)
            return body, status
        finally:
            db.close()

    @app.route("/decide", methods=["GET", "POST"])
    def decide() -> Any:
        if request.method != "POST":
            abort(403, "decisions are made by POST from the review page")
        form = request.form
        number = whole_number(form, "number")
        check_lengths(form)
        student, lab, input_hash = form.get("student", ""), form.get("lab", ""), form.get("input_hash", "")
        confirm = form.get("action") == "confirm"
        comment = form.get("comment", "")
        decisions, problems = [], []
        whole: list[WholeDecision] = []
        if confirm:  # one decision on the submission: the machine's verdict stands (who, when, which submission)
            whole.append(WholeDecision(student, lab, CONFIRM, None, comment, input_hash))
        if form.get("action") in ("whole-score", "whole-missing"):
            raw = (form.get("whole_points") or "").strip()
            points: float | None = None
            if form.get("action") == "whole-score":
                try:
                    points = float(raw)
                except ValueError:
                    problems.append(f"score: must be a number (got {raw!r})")
            whole.append(WholeDecision(student, lab, "score" if form.get("action") == "whole-score" else "missing", points,
                                       comment, input_hash))
        for column in [] if confirm else form.getlist("item"):
            raw = (form.get(f"points:{column}") or "").strip()
            if not raw:
                continue
            try:
                points = float(raw)
            except ValueError:
                problems.append(f"{column}: points must be a number (got {raw!r})")
                continue
            decisions.append(Decision(student, lab, column, points, comment, input_hash, form.get(f"why:{column}", ""),
                                      code=form.get(f"code:{column}", "")))
        db = open_db()
        saved = ""
        try:
            if not problems:
                before = {(r.student, r.lab): r.score for r in db.final()}.get((student, lab))
                made = apply_decisions(db, decisions, app.config["REVIEW_BY"], whole)
                after = {(r.student, r.lab): r.score for r in db.final()}.get((student, lab))
                saved = saved_words(made, before, after)
        except DecisionError as exc:
            problems = list(exc.problems)
        finally:
            db.close()
        if problems:
            return entry(number, problems=problems, status=400)
        return redirect(url_for("entry", number=number, saved=saved or None), code=303)

    @app.route("/decide-code", methods=["GET", "POST"])
    def decide_by_code() -> Any:
        """Decide every open item of one kind at once (``review --decide-code``), from the entry's page."""
        if request.method != "POST":
            abort(403, "decisions are made by POST from the review page")
        form = request.form
        number = whole_number(form, "number")
        check_lengths(form)
        code, action = form.get("code", ""), form.get("action", "")
        points: float | str | None = FULL if action == "full" else None
        db = open_db()
        try:
            made = decide_code(db, code, points, form.get("comment", ""), app.config["REVIEW_BY"], form.get("lab", ""))
        except DecisionError as exc:
            return entry(number, problems=list(exc.problems), status=400)
        finally:
            db.close()
        saved = (f"decided {len(made)} item(s) of {code} for {len({(o.student, o.lab) for o in made})} submission(s): "
                 f"{'each item gets its maximum' if points == FULL else 'the machine points stand'}")
        return redirect(url_for("entry", number=number, saved=saved), code=303)

    @app.route("/request", methods=["GET", "POST"])
    def regrade_request() -> Any:
        if request.method != "POST":
            abort(403, "regrade requests are entered by POST from the review page")
        form = request.form
        check_lengths(form)
        asked = whole_number(form, "number")
        db = open_db()
        try:
            add_request(db, form.get("student", ""), form.get("lab", ""), form.get("reason", ""), form.get("item", ""),
                        app.config["REVIEW_BY"])
            # the request moves the entry up the queue (more at stake): stay with it
            queue = build_queue(db, include_decided=True)
            number = next((i for i, e in enumerate(queue, 1) if (e.student, e.lab) == (form.get("student"), form.get("lab"))),
                          asked)
        except DecisionError as exc:
            return entry(asked, problems=list(exc.problems), status=400)
        finally:
            db.close()
        return redirect(url_for("entry", number=number), code=303)

    return app


class ReviewServer:
    """The review page served on 127.0.0.1 from a background thread; :attr:`url` carries the access token."""

    def __init__(self, db_path: str | os.PathLike[str], *, by: str = "", port: int = 0) -> None:
        self.token = secrets.token_urlsafe(24)
        self.app = create_app(db_path, token=self.token, by=by)
        self._server = make_server("127.0.0.1", port, self.app, threaded=True)
        self.app.config["REVIEW_PORT"] = self._server.server_port
        self.base = f"http://127.0.0.1:{self._server.server_port}"
        self.url = f"{self.base}/?token={self.token}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="mlsys-review", daemon=True)

    def __enter__(self) -> ReviewServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def serve(db_path: str | os.PathLike[str], *, by: str = "", port: int = 0, open_browser: bool = True) -> None:
    """Serve the review page until Ctrl-C; prints the URL (with its token) and opens the browser."""
    server = ReviewServer(db_path, by=by, port=port)
    with server:
        print(f"review page: {server.url}\n(only this machine can reach it; Ctrl-C stops it)", flush=True)
        if open_browser:
            webbrowser.open(server.url)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
