"""Neo4j Browser, driven like an operator would (SPEC §6): connect, apply the project's style,
set the fence with `:param`, paste `cypher/inspect/project_graph.cypher`, and see headlines, each
kind in its own colour (SPEC §1: kinds are labels).

Uses Debian's Chromium (`/usr/bin/chromium`, installed by `make test`) through Playwright; the
Playwright-managed browser download is never used (this machine cannot fetch it). The screenshot
lands in `tests/e2e/artifacts/browser.png` for a person to look at.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from graphsvc.store import cypher
from graphsvc.service import GraphService

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
STYLE = cypher.cypher_dir() / "inspect" / "browser-style.grass"
HEADLINES = ["Design cart API", "Ship checkout", "Never drop tables", "Use Postgres", "Use SQLite"]


@pytest.fixture(scope="module")
def chromium_path() -> str:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is absent: `make test` installs it with apt-get (needs root); "
                    "it could not be installed on this machine")
    return CHROMIUM


@pytest.fixture
def seeded(db) -> list[str]:
    service = GraphService(db)
    cart, rule, old = service.ingest({"items": [
        {"project_id": "shop", "kind": "task", "content": "Design cart API"},
        {"project_id": "shop", "kind": "constraint", "content": "Never drop tables"},
        {"project_id": "shop/db", "kind": "decision", "content": "Use Postgres"},
    ]})["ids"]
    service.ingest({"items": [
        {"project_id": "shop", "kind": "task", "content": "Ship checkout", "blocked_by": [cart]},
        {"project_id": "shop/db", "kind": "decision", "content": "Use SQLite", "supersedes": [old]},
        {"project_id": "shopx", "kind": "fact", "content": "Look-alike project, fenced out"},
    ]})
    service.claim({"agent": "agent-7", "task_id": cart})  # SPEC §12: the caption names the holder and the end
    return HEADLINES


def _paste_and_run(page, text: str) -> None:
    """Paste (not type: the editor would auto-close braces and re-indent) and press Run."""
    page.click("[data-testid=activeEditor]")
    page.evaluate("text => navigator.clipboard.writeText(text)", text)
    page.keyboard.press("Control+V")
    page.click("[data-testid=editor-Run]")


def test_browser_shows_a_project_graph_captioned_by_headline(neo4j_target, seeded, chromium_path):
    from playwright.sync_api import sync_playwright

    if not neo4j_target.http_url:
        pytest.skip("the Neo4j under test has no HTTP (Browser) URL; set NEO4J_HTTP_URL with NEO4J_URI")
    bolt = urlsplit(neo4j_target.uri)
    browser_url = neo4j_target.http_url.rstrip("/") + "/browser/"
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "browser.png"

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.grant_permissions(["clipboard-read", "clipboard-write"],
                                      origin=f"{urlsplit(browser_url).scheme}://{urlsplit(browser_url).netloc}")
            page = context.new_page()
            page.goto(browser_url, wait_until="networkidle", timeout=60_000)

            page.wait_for_selector("[data-testid=boltaddress]", timeout=30_000)
            page.select_option("[data-testid=bolt-scheme-select]", "bolt://")
            page.fill("[data-testid=boltaddress]", bolt.netloc)
            page.fill("[data-testid=username]", neo4j_target.user)
            page.fill("[data-testid=password]", neo4j_target.password)
            page.click("[data-testid=connect]")
            page.get_by_text("Connected to Neo4j").wait_for(timeout=30_000)

            _paste_and_run(page, ":style " + STYLE.read_text(encoding="utf-8"))
            _paste_and_run(page, ":param project_prefix => 'shop'")
            page.get_by_text('"project_prefix": "shop"').wait_for(timeout=15_000)
            _paste_and_run(page, cypher.load("inspect/project_graph"))

            # Captions wrap inside the node circle, one <text> per line: join them per node.
            page.wait_for_function(
                "() => [...document.querySelectorAll('svg g.node')].length >= 5", timeout=30_000)
            page.wait_for_timeout(2_000)  # let the force layout settle before the picture
            captions = page.eval_on_selector_all(
                "svg g.node",
                "nodes => nodes.map(n => [...n.querySelectorAll('text')]"
                ".map(t => t.textContent.trim()).filter(s => s).join(' '))",
            )
            # Each kind has its own colour (SPEC §1 kind labels; browser-style.grass styles each label).
            colours = page.eval_on_selector_all(
                "svg g.node",
                "nodes => nodes.map(n => { const c = n.querySelector('circle.b-outline');"
                " return c ? c.getAttribute('fill') : null; })",
            )
            relationship_types = page.eval_on_selector_all(
                "svg g.relationship text", "els => els.map(e => e.textContent.trim())")
            page.screenshot(path=str(screenshot))
        finally:
            browser.close()

    assert screenshot.stat().st_size > 10_000
    # the claimed task's caption adds its holder and lease end; the others show their headline alone
    claimed = [caption for caption in captions if caption.startswith("Design cart API ")]
    assert len(claimed) == 1 and claimed[0].split()[3] == "agent-7" and claimed[0].split()[4].startswith("\"20"), captions
    captions = ["Design cart API" if caption in claimed else caption for caption in captions]
    assert sorted(captions) == sorted(seeded), captions  # headlines, and 'shopx' is fenced out
    assert sorted(relationship_types) == ["BLOCKS", "SUPERSEDES"]
    by_caption = dict(zip(captions, colours))
    # task, constraint and decision: three kinds, three colours; two decisions share theirs.
    assert len({by_caption["Design cart API"], by_caption["Never drop tables"], by_caption["Use Postgres"]}) == 3, colours
    assert by_caption["Use Postgres"] == by_caption["Use SQLite"], colours
    assert None not in colours, colours
