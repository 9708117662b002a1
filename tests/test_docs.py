"""README is short and points into the documentation site (docs/, MkDocs); the site's generated facts (the rubric table,
the hidden items, the layout) are generated from the code, never copied by hand, and nothing README held before the
site existed was dropped."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mlsys_grader import cli
from mlsys_grader.api import default_rubric
from mlsys_grader.core.report import HIDDEN_ITEMS
from mlsys_grader.core.rubric import rubric_markdown
from mlsys_grader.labs import lab_ids

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"


def _page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _between(start: str, end: str, page: str = "grading.md") -> str:
    match = re.search(re.escape(start) + r"\n(.*?)\n" + re.escape(end), _page(page), re.S)
    assert match, f"docs/{page} lacks the block {start} … {end}"
    return match.group(1)


def test_the_rubric_table_is_the_generated_one():
    expected = rubric_markdown([default_rubric(lab) for lab in lab_ids()])
    assert _between("<!-- rubric-table:start -->", "<!-- rubric-table:end -->") == expected, (
        "docs/grading.md's rubric table is out of date: paste the output of `mlsys-grader rubric`")


def test_the_cli_prints_the_same_table(capsys):
    assert cli.main(["rubric"]) == cli.EXIT_OK
    assert capsys.readouterr().out.strip() == rubric_markdown([default_rubric(lab) for lab in lab_ids()])


@pytest.mark.slow
def test_the_installed_command_prints_the_same_table():
    result = subprocess.run([sys.executable, "-m", "mlsys_grader", "rubric"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == rubric_markdown([default_rubric(lab) for lab in lab_ids()])


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="argparse words its help differently after Python 3.11; "
                                                              "docs/cli.md is generated on 3.11, the version CI runs")
def test_the_command_reference_is_the_generated_one():
    assert _between("<!-- cli-reference:start -->", "<!-- cli-reference:end -->", "cli.md") == cli.command_reference(), (
        "docs/cli.md's command reference is out of date: paste the output of "
        "`python -c \"from mlsys_grader.cli import command_reference; print(command_reference())\"`")


def test_the_docs_name_exactly_the_hidden_items():
    block = _between("<!-- hidden-items:start -->", "<!-- hidden-items:end -->")
    assert set(re.findall(r"`(\w+)`", block)) == set(HIDDEN_ITEMS)



def _layout() -> dict[str, str]:
    """The Layout block of docs/design.md: each entry (``mlsys_grader/core/``, ``mlsys_grader/api.py``, ``assignments/``) → its
    whole description (continuation lines, indented past the names, included)."""
    block = _between("# Layout\n\n```", "```", "design.md")
    entries: dict[str, str] = {}
    name = None
    for line in block.splitlines():
        entry = re.match(r"^(  )?(\S+)(?: {2,}(.*))?$", line)
        if entry:
            name = ("mlsys_grader/" if entry.group(1) else "") + entry.group(2)
            entries[name] = entry.group(3) or ""
        else:
            assert name is not None and line.startswith(" " * 17), line
            entries[name] += " " + line.strip()
    return entries


def test_the_layout_names_exactly_the_packages_and_public_modules_of_the_tree():
    """The Layout names every package and public module of ``mlsys_grader/``, every lab package and the modules
    it is split into, and the repository's folders; everything it names exists."""
    root = Path(__file__).resolve().parents[1]
    named = _layout()
    package = root / "mlsys_grader"
    tree = {f"mlsys_grader/{path.name}/" for path in package.iterdir() if path.is_dir() and not path.name.startswith("_")}
    tree |= {f"mlsys_grader/{path.name}" for path in package.glob("*.py") if not path.name.startswith("_")}
    assert {name for name in named if name.startswith("mlsys_grader/") and name != "mlsys_grader/"} == tree
    assert all((root / name).exists() for name in named)
    assert {"assignments/", "solutions/", "autograder/", "examples/", "benchmarks/", "tests/"} <= set(named)
    labs = named["mlsys_grader/labs/"]
    lab_packages = [path for path in (package / "labs").iterdir() if path.is_dir() and not path.name.startswith("_")]
    assert lab_packages
    for lab in lab_packages:
        assert f"{lab.name}/" in labs, lab.name
        seams = {path.stem for path in lab.glob("*.py") if path.stem != "__init__"}
        assert seams <= set(re.findall(r"\b\w+\b", labs)), (lab.name, seams - set(re.findall(r"\b\w+\b", labs)))
    for helper in (package / "labs").glob("*.py"):  # the helpers the lab packages share (charts.py)
        assert helper.name == "__init__.py" or helper.name in labs, helper.name
    for layer in ("core", "staff"):  # each module by its name (a private module's without its underscore)
        words = set(re.findall(r"\b\w+\b", named[f"mlsys_grader/{layer}/"]))
        modules = {path.stem.lstrip("_") for path in (package / layer).glob("*.py") if path.stem != "__init__"}
        assert modules <= words, (layer, sorted(modules - words))


# -- README, short, and the site it points into -----------------------------------------------------------------------
SECTIONS_BEFORE_THE_SITE = (
    "Quick start", "What a student does, and what is checked", "What the grade proves", "The book's records",
    "Command line", "For students: the notebooks", "For course staff: Gradescope",
    "For course staff: bulk grading without Docker", "Running a term", "Reviewing", "Python API", "Layout",
    "Adding a lab", "Versions", "Benchmarks",
)
"""Every section README had when it held the whole reference (1,225 lines): each must be a heading of the site."""


def _headings() -> dict[str, str]:
    """Heading text → the page under docs/ that holds it (fenced code left out)."""
    found: dict[str, str] = {}
    for page in sorted(DOCS.rglob("*.md")):
        fenced = False
        for line in page.read_text(encoding="utf-8").splitlines():
            fenced ^= line.startswith("```")
            heading = None if fenced else re.match(r"^#{1,6} (.+?)\s*$", line)
            if heading:
                found.setdefault(heading.group(1), str(page.relative_to(DOCS)))
    return found


def test_readme_is_short_and_its_two_commands_are_what_ci_runs():
    assert len(README.splitlines()) <= 250
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", quick, re.S)
    assert commands == ['pip install . && mlsys-grader grade examples/submissions -o grades.csv --html report.html',
                        'pip install ".[test]" && python -m pytest -q -n auto']
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"\n{commands[1]}\n" in ci, ".ci/run must run README's test command as it is written"
    assert "mkdocs build --strict" in ci
    assert (ROOT / "examples" / "submissions").is_dir()


def test_every_section_readme_had_is_a_heading_of_the_site():
    headings = _headings()
    missing = [title for title in SECTIONS_BEFORE_THE_SITE if title not in headings]
    assert not missing, f"sections no page of docs/ holds: {missing}"


def test_every_role_has_a_readme_section_ending_in_a_link_that_exists():
    sections = re.split(r"^## ", README, flags=re.M)[1:]
    titles = [section.split("\n", 1)[0] for section in sections]
    for role in ("Students", "Course staff: running a term", "Course staff: Gradescope", "Lab authors: adding a lab"):
        assert role in titles, role
    links = re.findall(r"\]\((docs/[^)#]+)", README)
    assert {"docs/students.md", "docs/term/index.md", "docs/gradescope.md", "docs/adding-a-lab.md"} <= set(links)
    for link in links:
        assert (ROOT / link).is_file(), link


def test_every_page_is_in_the_sites_navigation_and_every_entry_is_a_page():
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def entries(nav):
        for item in nav:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            yield from (entries(value) if isinstance(value, list) else [value])

    named = set(entries(config["nav"]))
    pages = {str(page.relative_to(DOCS)) for page in DOCS.rglob("*.md")}
    assert named == pages
    assert config["strict"] is True


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    """What CI's ``mkdocs build --strict`` does: a broken link, a missing page or a page left out of the navigation
    fails the build."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env={**__import__("os").environ,
                                                                                       "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "term" / "reviewing" / "index.html").is_file()


def _listed(names: list[str]) -> str:
    quoted = [f"`{name}`" for name in names]
    return (", ".join(quoted[:-1]) + " and " + quoted[-1]) if len(quoted) > 1 else quoted[0]


@pytest.mark.parametrize("page, block, name", [
    ("students.md", "lab-notebooks", "{lab}.ipynb"),
    ("gradescope.md", "autograder-zips", "dist/{lab}-autograder.zip"),
])
def test_the_lists_of_labs_are_generated_from_the_registry(page, block, name):
    """A list of the labs' files is the registry's (a hand-written one named only Labs 07 and 11 long after Labs 02 and
    08 shipped)."""
    listed = _between(f"<!-- {block}:start -->", f"<!-- {block}:end -->", page)
    assert listed == _listed([name.format(lab=lab) for lab in lab_ids()]) + ",", (
        f"docs/{page}'s list of {name} is out of date")


def test_the_quick_starts_outputs_leave_the_checkout_clean():
    """What README's first command writes in the repository root (the grades CSV, the final gradebook beside it, the
    HTML summary, the gradebook database) is ignored by git, so a newcomer's checkout stays clean."""
    import shutil

    from mlsys_grader.course import default_final_path

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout of the repository")
    command = next(line for line in README.splitlines() if line.startswith("pip install . && mlsys-grader grade"))
    words = command.split()
    written = [words[words.index("-o") + 1], words[words.index("--html") + 1]]
    written += [str(default_final_path(written[0])), "gradebook.sqlite"]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *written], cwd=ROOT, capture_output=True, text=True)
    assert sorted(ignored.stdout.split()) == sorted(written), written
