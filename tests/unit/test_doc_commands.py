"""Every command the README and the docs show works on a fresh clone, and every link resolves.

No Neo4j and nothing is run: each shown command is checked against what it names.
* `make T`: T is a target of the Makefile.
* `graphsvc ...` (or `.venv/bin/graphsvc ...`) in a shell block: the CLI's own parser accepts the whole
  line, verbs, flags and values; in running text (`graphsvc verify [--repair]`), every verb and flag
  named exists.
* `python -m bench.X --flag`: the module exists and defines the flag.
* `curl` and `METHOD /path` in running text: the app mounts that route for that method.
* `docker compose -f FILE`, `docker/engine.sh VERB`: the file exists, the script handles the verb.
A shell line whose command is none of these fails, so a new kind of command gets a check of its own.
The README's Python example must compile and call a mounted route; its relative links must resolve.
"""

from __future__ import annotations

import argparse
import ast
import re
import shlex
from functools import lru_cache
from pathlib import Path

import pytest

from graphsvc.surfaces.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: The README and every docs page; docs/mcp-clients.md's client commands are run by test_mcp_configs.
PAGES = [README] + sorted(page for page in (ROOT / "docs").glob("*.md") if page.name != "mcp-clients.md")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`([^`]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
ROUTE_TEXT = re.compile(r"\b(GET|POST|PATCH|PUT|DELETE) (/[^\s`,;)]*)")
ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")


def blocks(page: Path, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(page.read_text()) if lang == language]


def shell_lines(page: Path) -> list[str]:
    """The commands of a page's `sh` blocks: continuations joined, comments dropped."""
    lines = []
    for body in blocks(page, "sh"):
        for line in body.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                lines.append(shlex.join(words))
    return lines


def running_text(page: Path) -> str:
    """The page without its fenced blocks (their commands are checked whole), on one line: a code span
    may wrap."""
    return " ".join(FENCE.sub("", page.read_text()).split())


@lru_cache(maxsize=1)
def make_targets() -> frozenset[str]:
    text = (ROOT / "Makefile").read_text()
    return frozenset(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", text, re.M))


@lru_cache(maxsize=1)
def mounted_routes() -> list[tuple[frozenset[str], re.Pattern[str]]]:
    """(methods, path pattern) of every route the HTTP app mounts. The driver connects lazily: no Neo4j."""
    from graphsvc.service import GraphService
    from graphsvc.store.db import Database
    from graphsvc.surfaces.http.app import create_app

    app = create_app(GraphService(Database("bolt://127.0.0.1:9", "neo4j", "unused")))
    found = []
    for route in app.routes:
        pattern = re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(route.path))
        found.append((frozenset(route.methods or {"GET", "POST", "DELETE"}), re.compile(pattern + "$")))
    return found


def route_problem(method: str, path: str) -> str | None:
    path = path.split("?")[0].replace("…", "x")
    for methods, pattern in mounted_routes():
        if pattern.match(path) and method in methods:
            return None
    return f"the app mounts no {method} {path}"


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_problem(words: list[str]) -> str | None:
    """None when graphsvc's parser accepts the line as a user would type it."""
    try:
        build_parser().parse_args(words)
    except SystemExit as exc:
        return f"graphsvc {shlex.join(words)}: the CLI refuses it (exit {exc.code})"
    return None


def mentioned_cli_problem(text: str) -> str | None:
    """`graphsvc VERB [--flag VALUE] ...` in running text: each verb (or `a|b` alternatives), flag and choice exists."""
    parser = build_parser()
    words = [w.strip("[]()…,.") for w in text.split()[1:]]
    expects_value = None
    for word in words:
        verbs = subcommands(parser)
        if expects_value is not None:
            choices, expects_value = expects_value.choices, None
            unknown = [c for c in word.split("|") if choices and c not in choices and not c.isupper()]
            if unknown:
                return f"`{text}`: {unknown} not among {sorted(choices)}"
        elif word.startswith("-"):
            actions = {option: action for action in parser._actions for option in action.option_strings}
            flag = word.split("=")[0]
            if flag not in actions:
                return f"`{text}`: `{parser.prog}` has no {flag}"
            if actions[flag].nargs != 0 and "=" not in word:
                expects_value = actions[flag]
        elif verbs:
            choices = word.split("|")
            if all(choice in verbs for choice in choices):
                parser = verbs[choices[0]]
            elif not (word.isupper() or not word):
                return f"`{text}`: no graphsvc verb {word}"
        else:
            for action in parser._actions:
                if action.choices and not action.option_strings:
                    unknown = [c for c in word.split("|") if c not in action.choices]
                    if unknown and not word.isupper() and all(c.isidentifier() for c in word.split("|")):
                        return f"`{text}`: {unknown} not among {sorted(action.choices)}"
    return None


def command_problem(line: str) -> str | None:
    words = shlex.split(line)
    while words and ASSIGNMENT.match(words[0]):
        words = words[1:]
    command, args = words[0], words[1:]
    if command == "make":
        missing = [t for t in args if not ASSIGNMENT.match(t) and t not in make_targets()]
        return f"{line}: no make target {missing}" if missing else None
    if command in ("graphsvc", ".venv/bin/graphsvc"):
        return cli_problem(args)
    if command in ("python", "python3", ".venv/bin/python") and args[:1] == ["-m"]:
        module = ROOT / (args[1].replace(".", "/") + ".py")
        if not module.is_file():
            return f"{line}: no module {args[1]}"
        source = module.read_text()
        missing = [a for a in args[2:] if a.startswith("--") and f'"{a.split("=")[0]}"' not in source]
        return f"{line}: {args[1]} defines no {missing}" if missing else None
    if command == "curl":
        method = args[args.index("-X") + 1] if "-X" in args else "GET"
        urls = [a for a in args if re.match(r"(https?://)?(localhost|127\.0\.0\.1)(:\d+)?/", a)]
        if len(urls) != 1:
            return f"{line}: expected one URL of the local service"
        return route_problem(method, "/" + urls[0].split("/", 3 if urls[0].startswith("http") else 1)[-1])
    if command == "docker" and args[:1] == ["compose"]:
        files = [args[i + 1] for i, a in enumerate(args) if a == "-f"]
        missing = [f for f in files if not (ROOT / f).is_file()]
        return f"{line}: no {missing}" if missing or not files else None
    if command == "eval":
        inner = re.fullmatch(r'"?\$\((\S+) (\w+)\)"?', " ".join(args))
        if not inner:
            return f"{line}: an eval this test cannot check"
        script = ROOT / inner.group(1)
        if not script.is_file() or not script.stat().st_mode & 0o111:
            return f"{line}: {inner.group(1)} is not an executable file"
        return None if re.search(rf"^\s*{inner.group(2)}\)", script.read_text(), re.M) else f"{line}: no verb {inner.group(2)}"
    return f"{line}: {command} is a command this test has no check for; add one"


SHOWN = [(page.name, line) for page in PAGES for line in shell_lines(page)]


def test_the_pages_show_commands():
    assert any(line.startswith("make demo") for _, line in SHOWN)
    assert any(line.startswith("make test") for _, line in SHOWN)
    assert any("graphsvc" in line for page, line in SHOWN if page == "operations.md")


@pytest.mark.parametrize("page,line", SHOWN, ids=[f"{p}:{line[:40]}" for p, line in SHOWN])
def test_every_shown_command_exists(page, line):
    assert command_problem(line) is None, command_problem(line)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_commands_and_routes_named_in_running_text_exist(page):
    text = running_text(page)
    problems = []
    for span in INLINE.findall(text):
        if re.match(r"graphsvc [a-z]", span):
            problems.append(mentioned_cli_problem(span))
        elif re.match(r"make [a-z]", span):
            problems.append(command_problem(span))
    for method, path in ROUTE_TEXT.findall(text):
        problems.append(route_problem(method, path.rstrip(".")))
    assert [p for p in problems if p] == []


def test_the_readme_python_example_compiles_and_calls_a_route():
    (example,) = blocks(README, "python")
    tree = ast.parse(example)
    paths = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and str(n.value).startswith("/v1/")]
    assert paths and all(route_problem("POST", p) is None for p in paths)
    assert len(example.strip().splitlines()) <= 15


def pending_pages() -> set[str]:
    """Pages mkdocs.yml's nav holds as commented placeholders: they land from other branches."""
    return set(re.findall(r"^\s*#\s*- [^:\n]+: (\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M))


@pytest.mark.parametrize("page", PAGES + [ROOT / "bench" / "RESULTS.md"], ids=lambda p: p.name)
def test_relative_links_resolve(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        pending = path.parent == ROOT / "docs" and path.name in pending_pages()
        if not path.exists() and not pending:
            broken.append(target)
    assert broken == []


def test_a_pending_page_is_not_there_yet():
    """Once a placeholder's page exists, its nav line must be uncommented (mkdocs --strict checks the rest)."""
    landed = [name for name in pending_pages() if (ROOT / "docs" / name).exists()]
    assert landed == [], f"uncomment {landed} in mkdocs.yml's nav"


def test_the_readme_stays_short():
    assert len(README.read_text().splitlines()) <= 250
