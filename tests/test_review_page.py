"""The local review page (course/_review_app.py) in real headless Chromium, driven by Playwright: the queue, keyboard
steps, highlighted spans, an override with a comment that reaches the final gradebook and the LMS export, student
text shown as text, and the token, origin and method checks."""

from __future__ import annotations

import copy
import csv
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import reseal
from needs import chromium
from test_course_term import options, write
from test_review import CITES, RECOMMENDATION, build_review_term, final_row, uncertain_bundle

from mlsys_grader.course import BatchOptions, grade_paths
from mlsys_grader.course._lms import export_lms
from mlsys_grader.course._review_app import ReviewServer

pytest.importorskip("flask")
playwright = pytest.importorskip("playwright.sync_api")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "submissions" / "lab07-cloud.json"
"""An honest full-marks submission: its rationale is the student's own."""
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
HOSTILE = ("<script>document.title='owned'</script> <b>bold</b> **not markdown** [link](http://x) "
           "<img src=x onerror=alert(1)> & &amp; ")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("review-page")
    paths = build_review_term(root)
    hostile = copy.deepcopy(uncertain_bundle())
    hostile["synthesis"]["rationale"] = HOSTILE + hostile["synthesis"]["rationale"]
    write(paths["dee"], reseal(hostile))  # Dee's lab07: Eve's bundle (same capture times) behind markup and a script
    db = root / "gradebook.sqlite"
    grade_paths([paths["down"]], options(root, db))
    return root, paths, db


@pytest.fixture
def db(graded, tmp_path):
    mine = tmp_path / "gradebook.sqlite"
    shutil.copyfile(graded[2], mine)
    return mine


@pytest.fixture(scope="module")
def browser():
    executable = chromium()
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=executable, headless=True, args=FLAGS)
        yield launched
        launched.close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # the status of the request itself (a 303 after a decision), not of the page it points to


def status(url: str, data: bytes | None = None, headers: dict | None = None) -> int:
    try:
        with urllib.request.build_opener(_NoRedirect).open(urllib.request.Request(url, data=data, headers=headers or {})) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.slow  # drives Chromium
def test_step_through_the_queue_by_keyboard_see_the_spans_and_override_with_a_comment(db, browser, tmp_path):
    with ReviewServer(db, by="ta-rosa") as server:
        page = browser.new_page()
        page.goto(server.url)
        titles = [page.inner_text("#title")]
        assert titles[0].startswith("1. ")
        queued = page.locator("nav#queue a").count()
        assert queued >= 8
        for _ in range(queued - 1):
            page.keyboard.press("j")
            page.wait_for_url(f"{server.base}/entry/{len(titles) + 1}")
            titles.append(page.inner_text("#title"))
        page.keyboard.press("j")  # past the end: stays
        assert page.inner_text("#title") == titles[-1]
        page.keyboard.press("k")
        page.wait_for_url(f"{server.base}/entry/{queued - 1}")
        assert len(set(titles)) == queued, "every entry once, in queue order"
        eve = next(i for i, t in enumerate(titles, 1) if "(2005) · lab07" in t)
        page.goto(f"{server.base}/entry/{eve}")
        assert f"uncertain {RECOMMENDATION}: option named, no stance cue found" in page.inner_text("#why")
        quantities = page.locator("#rationale mark.quantity")
        assert quantities.count() >= 5
        first = quantities.first
        assert first.inner_text() == "8.99 ms" and "matches" in first.get_attribute("title")
        assert "recorded in part B's evidence" in first.get_attribute("title")
        assert page.locator("#rationale mark.limitation").count() >= 1 and page.locator("#rationale mark.trigger").count() >= 1
        assert "rejects compiled" in page.inner_text("#legend"), "the stance cue and the option it applied to"
        assert "compiled_fused" in page.inner_text("#choices")
        page.keyboard.press("e")
        assert page.evaluate("document.activeElement.name").startswith("points:")
        page.fill(f"input[name='points:{RECOMMENDATION}']", "2")
        page.fill("#comment", "recommends compiled execution with fusion in the first sentence")
        with page.expect_navigation(url=re.compile(rf"/entry/{eve}\?saved=")):  # the same entry: wait for the reload itself
            page.click("#save")
        page.reload()
        assert "2 by ta-rosa: recommends compiled execution with fusion in the first sentence" in page.inner_text("#decide")
        assert "✓" not in page.locator("nav#queue a").nth(eve - 1).inner_text(), \
            "Dee's copy makes Eve's a collusion entry too: one item decided is not the whole entry"
        assert "flag collusion" in page.inner_text("#why")
        assert page.locator("#collusion mark.shared").count() >= 2, "the shared text marked on both sides"
        assert page.locator("#collusion .time-shared").count() >= 1 and page.locator("#times .time-shared").count() >= 1
        # the other submission's settings and choices beside ours: Dee's copy has every one of Eve's
        settings = page.locator("#collusion table.settings")
        assert settings.count() == 1 and settings.locator("tr.same").count() >= 9, settings.inner_text()
        assert "compiled_fused" in settings.inner_text() and "dispatches=" in settings.inner_text()
        shot = tmp_path / "collusion-entry.png"
        page.locator("#collusion").screenshot(path=str(shot))
        assert shot.stat().st_size > 10_000, "the side-by-side view rendered"
    row = final_row(db, "2005", "lab07")
    assert (row["machine_score"], row["score"]) == (98.0, 100.0)
    assert "recommends compiled execution with fusion in the first sentence" in row["overrides"]
    export_lms(db, "generic", tmp_path / "generic.csv")
    line = next(r for r in csv.reader((tmp_path / "generic.csv").open(encoding="utf-8")) if r[:2] == ["2005", "lab07"])
    assert line[2] == "100.0"


def first_item_entry(page, server) -> int:
    """The number of the first queue entry with items to decide (entries of a whole unreadable upload come first)."""
    links = page.locator("nav#queue a")
    return next(i for i in range(links.count()) if not links.nth(i).get_attribute("data-whole")) + 1


@pytest.mark.slow  # drives Chromium
def test_confirming_by_keyboard_takes_the_entry_out_of_the_pending_count(db, browser):
    with ReviewServer(db, by="ta-rosa") as server:
        page = browser.new_page()
        page.goto(server.url)
        number = first_item_entry(page, server)
        page.goto(f"{server.base}/entry/{number}")
        before = page.inner_text("nav#queue p")
        # The decided entry is marked done where it stands: wait for the reload itself.
        with page.expect_navigation(url=re.compile(rf"/entry/{number}\?saved=")):
            page.keyboard.press("c")
        after = page.inner_text("nav#queue p")
        assert int(after.split()[0]) == int(before.split()[0]) - 1
        assert "✓" in page.locator("nav#queue a").nth(number - 1).inner_text()


@pytest.mark.slow  # drives Chromium
def test_a_rationale_holding_script_html_and_markdown_shows_as_text(db, browser):
    with ReviewServer(db) as server:
        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(server.url)
        links = page.locator("nav#queue a")
        dee = next(i for i in range(links.count()) if links.nth(i).get_attribute("data-student") == "2004"
                   and "lab07" in links.nth(i).inner_text())
        page.goto(f"{server.base}/entry/{dee + 1}")
        text = page.inner_text("#rationale")
        assert text.startswith(HOSTILE.rstrip()), "every character as the student typed it"
        assert page.locator("#rationale script, #rationale b, #rationale img, #rationale a").count() == 0
        assert page.title() != "owned" and dialogs == []


def test_requests_without_the_token_from_another_origin_or_changing_state_by_get_are_refused(db):
    with ReviewServer(db) as server:
        token = server.token
        assert status(f"{server.base}/") == 403
        assert status(f"{server.base}/entry/1") == 403
        assert status(f"{server.base}/entry/1?token=wrong") == 403
        assert status(f"{server.base}/entry/1?token={token}") == 200
        assert status(server.url) == 302, "the token URL sets the cookie and shows the first entry"
        assert status(f"{server.base}/decide?token={token}&student=2005&lab=lab07") == 403, "no change by GET"
        assert status(f"{server.base}/request?token={token}&student=2005&lab=lab07&reason=x") == 403
        form = f"token={token}&student=2005&lab=lab07&item={CITES}&points%3A{CITES}=3&comment=c&number=1".encode()
        assert status(f"{server.base}/decide?token={token}", form, {"Origin": "http://evil.example"}) == 403
        assert status(f"{server.base}/decide?token={token}", form.replace(token.encode(), b"x", 1),
                      {"Origin": server.base}) == 403, "the form must carry the token too"
        assert status(f"{server.base}/decide", form, {"Origin": server.base}) == 403, "the request itself needs it"
        assert final_row(db, "2005", "lab07")["overrides"] == ""
        assert status(f"{server.base}/decide?token={token}", form, {"Origin": server.base}) == 303
    assert final_row(db, "2005", "lab07")["overrides"] == f"{CITES} 4->3 by ? (c)"


def test_the_command_prints_a_token_url_bound_to_localhost_and_decisions_outlive_a_restart(db):
    tokens = []
    for attempt in range(2):  # a restart: a new process, a new token, the decision made through the first still there
        process = subprocess.Popen([sys.executable, "-m", "mlsys_grader", "review", "--db", str(db), "--no-browser",
                                    "--by", "prof-k"], stdout=subprocess.PIPE, text=True)
        try:
            url = process.stdout.readline().split("review page: ", 1)[1].strip()
            assert url.startswith("http://127.0.0.1:") and "/?token=" in url
            base, token = url.split("/?token=")
            tokens.append(token)
            assert status(f"{base}/entry/1?token={token}") == 200 and status(f"{base}/entry/1") == 403
            if attempt == 0:
                form = f"token={token}&student=2005&lab=lab07&item={CITES}&points%3A{CITES}=3&number=1".encode()
                assert status(f"{base}/decide?token={token}", form, {"Origin": base}) == 303
        finally:
            process.terminate()
            process.wait(timeout=10)
        assert final_row(db, "2005", "lab07")["overrides"] == f"{CITES} 4->3 by prof-k"
    assert tokens[0] != tokens[1], "a random token per start"


@pytest.mark.slow  # drives Chromium
def test_a_regrade_request_entered_on_the_page_joins_the_entry_and_a_bad_one_says_why(db, browser):
    with ReviewServer(db, by="ta-rosa") as server:
        page = browser.new_page()
        page.goto(server.url)
        page.goto(f"{server.base}/entry/{first_item_entry(page, server)}")
        page.fill("#request input[name='item']", CITES)
        page.fill("#request input[name='reason']", "I cite <b>14.24 ms</b> eager")
        page.click("#request button")
        page.wait_for_load_state()
        assert any(line.startswith(f"regrade request on {CITES}") and line.endswith("I cite <b>14.24 ms</b> eager")
                   for line in page.inner_text("#why").splitlines())
        page.fill("#request input[name='item']", "synthesis.charm")
        page.fill("#request input[name='reason']", "x")
        page.click("#request button")
        page.wait_for_load_state()
        assert "unknown rubric item 'synthesis.charm'" in page.inner_text("#problems")


@pytest.mark.slow  # drives Chromium
def test_an_unreadable_upload_is_decided_on_the_page_as_a_whole(db, browser):
    """Eve's writeup.pdf sits beside her Lab 07 and Lab 11 bundles: its lab is unknown, staff name it with the score."""
    with ReviewServer(db, by="ta-rosa") as server:
        page = browser.new_page()
        page.goto(server.url)
        links = page.locator("nav#queue a")
        number = next(i for i in range(links.count()) if links.nth(i).get_attribute("data-whole")) + 1
        page.goto(f"{server.base}/entry/{number}")
        assert "writeup.pdf" in page.inner_text("#why") and "lab unknown" in page.inner_text("#whole-why")
        page.fill("#whole-points", "20")
        page.fill("#whole-reason", "the PDF is her Lab 11 write-up")
        page.click("#whole-score")
        page.wait_for_load_state()
        assert "name the lab the score is for" in page.inner_text("#problems")
        page.fill("#whole-lab", "lab11")
        page.fill("#whole-points", "20")
        page.fill("#whole-reason", "the PDF is her Lab 11 write-up")
        page.click("#whole-score")
        page.wait_for_load_state()
        assert "✓" in page.locator("nav#queue a").nth(number - 1).inner_text()
    from mlsys_grader.course import GradebookDB

    gradebook = GradebookDB(db)
    try:
        [decision] = [e for e in gradebook.change_log() if e["kind"] == "decision"]
    finally:
        gradebook.close()
    assert decision["student"] == "2005" and decision["lab"] == "lab11" and "writeup.pdf" in decision["reason"]
    assert decision["by"] == "ta-rosa"


@pytest.mark.slow  # drives Chromium
def test_a_generated_entry_shows_the_template_it_was_matched_against_with_the_shared_words_marked(browser, tmp_path):
    """A rationale flagged ``generated`` (here solve's own, reworded in two places): the entry shows the template as
    ``solve`` writes it for that submission beside the rationale, both with the words they share marked; an honest
    rationale's stored result holds no template."""
    from conftest import solved

    from mlsys_grader.course import GradebookDB

    folder = tmp_path / "subs"
    data = solved("lab07", "edge", 5)
    data["synthesis"]["rationale"] = data["synthesis"]["rationale"].replace("Evidence from", "As seen in", 2)
    write(folder / "gen" / "lab07-submission.json", reseal(data))
    db = tmp_path / "gradebook.sqlite"
    result = grade_paths([folder], BatchOptions(jobs=1, db=str(db)))
    [row] = result.rows
    assert "generated" in row.flags
    store = GradebookDB(db)
    try:
        stored = store.result(row.input_hash)
    finally:
        store.close()
    template = stored["template"]
    assert template["text"].startswith("I recommend") and set(template) == {"text", "sentences"}
    with ReviewServer(db, by="ta-rosa") as server:
        page = browser.new_page()
        page.goto(server.url)
        assert "flag generated" in page.inner_text("#why")
        marks = page.locator("#template-text mark.template")
        assert marks.count() >= 3
        shown = page.inner_text("#template-text")
        assert shown == template["text"], "the template as written, nothing dropped or escaped into it"
        assert all(marks.nth(i).inner_text() in template["text"] for i in range(marks.count()))
        assert page.locator("#template mark.template").count() > marks.count(), "the rationale's shared runs marked too"
        shot = tmp_path / "generated-entry.png"
        page.locator("#template").screenshot(path=str(shot))
        assert shot.stat().st_size > 10_000, "the side-by-side view rendered"
    honest = grade_paths([EXAMPLE], BatchOptions(jobs=1, db=str(tmp_path / "honest.sqlite")))
    assert "generated" not in honest.rows[0].flags
    store = GradebookDB(tmp_path / "honest.sqlite")
    try:
        assert "template" not in store.result(honest.rows[0].input_hash)
    finally:
        store.close()


def test_every_open_item_of_one_kind_is_decided_from_the_page(db):
    """The page's form posts what `review --decide-code` does; a decision without a reason is refused and stores nothing."""
    import http.cookiejar
    import urllib.parse

    from test_review import queue

    kinds = {code for entry in queue(db) for item in entry.items for code in [item.code]}
    assert "flag.generated" in kinds
    with ReviewServer(db, by="ta-rosa") as server:
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect)
        token = server.url.split("token=", 1)[1]
        number = next(i for i, e in enumerate(queue(db), 1) if "flag.generated" in e.codes and e.lab == "lab07")
        with opener.open(f"{server.base}/entry/{number}?token={token}") as page:
            assert 'id="decide-code"' in page.read().decode()

        def post(comment: str) -> int:
            body = urllib.parse.urlencode({"token": token, "number": str(number), "code": "flag.generated", "lab": "lab07",
                                           "action": "confirm", "comment": comment}).encode()
            try:
                with opener.open(urllib.request.Request(f"{server.base}/decide-code", data=body,
                                                        headers={"Origin": server.base})) as r:
                    return r.status
            except urllib.error.HTTPError as exc:
                return exc.code

        assert post("") == 400
        assert any("flag.generated" in e.codes for e in queue(db) if e.lab == "lab07")
        assert post("template flagged; points stand") == 303
    assert not any("flag.generated" in e.codes for e in queue(db) if e.lab == "lab07")
