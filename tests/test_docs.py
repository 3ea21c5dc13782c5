"""The operator's documentation stands on its own in a clone: every endpoint the app serves is
in docs/API.md with a curl example, and nothing links outside the repository."""
import re
import subprocess

import pytest

from tests.fixtures import ROOT

API_DOC = ROOT / "docs" / "API.md"
DOCS = [ROOT / "README.md", API_DOC, ROOT / "docs" / "ARCHITECTURE.md",
        ROOT / "docs" / "AGENTS.md", *sorted((ROOT / "deploy").glob("*.md")),
        *sorted((ROOT / "bench").glob("*.md"))]
OUTSIDE = "DESIGN" + ".md"  # the contract beside the repository, which a clone does not have


def _routes(app) -> list[tuple[str, str]]:
    return sorted({(method, rule.rule) for rule in app.url_map.iter_rules()
                   for method in rule.methods - {"HEAD", "OPTIONS"}})


def test_every_endpoint_has_its_section_and_a_curl_example(app):
    text = API_DOC.read_text()
    curls = [line for line in text.splitlines() if line.lstrip().startswith("curl ")]
    for method, path in _routes(app):
        assert f"{method} {path}" in text, f"{method} {path} is not documented"
        assert any(f"$EGIS{path}" in line for line in curls), f"no curl example for {path}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_link_leaves_the_repository(doc):
    targets = re.findall(r"\]\(([^)]+)\)", doc.read_text())
    for target in targets:
        if target.startswith(("http://", "https://", "#")):
            continue
        resolved = (doc.parent / target.split("#")[0]).resolve()
        assert resolved.is_relative_to(ROOT), f"{doc.name} links outside the clone: {target}"
        assert resolved.exists(), f"{doc.name} links to a missing file: {target}"


def test_the_readme_says_which_flask_to_run():
    text = (ROOT / "README.md").read_text()
    assert ".venv/bin/flask" in text and "source .venv/bin/activate" in text


def test_nothing_cites_a_file_the_repository_does_not_have():
    """The design notes live outside the repository; the code and docs cite
    docs/ARCHITECTURE.md, docs/API.md, docs/AGENTS.md or the README instead."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, text=True,
                            check=True).stdout.split()
    citing = [name for name in listed if (ROOT / name).is_file()
              and OUTSIDE.encode() in (ROOT / name).read_bytes()]
    assert not citing
    assert (ROOT / "docs" / "ARCHITECTURE.md").is_file()
