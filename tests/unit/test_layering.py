"""The package's three parts stay layered: core <- store <- service <- surfaces.

Parsed from the source (no import runs), so a violation names the file and the import.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "graphsvc"

#: What each part may never import (its own layer and those below it are fine).
FORBIDDEN = {
    "core": ("graphsvc.store", "graphsvc.surfaces", "graphsvc.service", "graphsvc.factory", "neo4j",
             "starlette", "mcp", "graphsvc.neo4j_local"),
    "store": ("graphsvc.surfaces", "graphsvc.service", "graphsvc.factory", "starlette", "mcp"),
}


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def _violations(part: str) -> list[str]:
    found = []
    for path in sorted((PACKAGE / part).rglob("*.py")):
        for name in _imports(path):
            if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN[part]):
                found.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    return found


def test_the_pure_core_imports_no_store_driver_or_web_layer() -> None:
    assert _violations("core") == []


def test_the_store_never_imports_a_surface() -> None:
    assert _violations("store") == []


def test_no_relative_import_hides_a_layer_crossing() -> None:
    relative = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                relative.append(str(path.relative_to(PACKAGE.parent)))
    assert relative == []
