"""Every MCP tool's schemas, linted against what model providers and generic clients accept.

The rules (each one, broken, makes a real client refuse the tools or mistype an argument):
* input: `type: object` at the root, no `anyOf`/`oneOf`/`allOf`/`not`/`if` there (the Anthropic API,
  Bedrock, Vertex and Azure OpenAI refuse the WHOLE request otherwise, so one tool breaks them all);
* input: every property declares a plain `type` (no `anyOf [T, null]`, no `$ref`), so a client that
  converts typed-in text by type (the Inspector CLI) sends arrays and integers, not strings;
* output: every tool declares an `outputSchema`, an object at the root, that its results AND its
  tool errors meet.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import jsonschema
import pytest

from graphsvc.errors import InvalidInput, NotFound, Unavailable
from graphsvc.models import BootstrapRequest, CapsuleUpdate, RelateRequest
from graphsvc.validation import parse
from graphsvc.surfaces.mcp import TOOLS, tool_error
from graphsvc.surfaces.mcp_schemas import ROOT_COMBINATORS, plain_schema

LISTED = [spec.to_tool() for spec in TOOLS]


def walk(node: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object below `node` (properties, items, nested definitions), with its path."""
    if isinstance(node, dict):
        yield path, node
        for name, child in node.get("properties", {}).items():
            yield from walk(child, f"{path}.{name}")
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                yield from walk(node[key], f"{path}[{key}]")
        for key in ("anyOf", "oneOf", "allOf"):
            for i, child in enumerate(node.get(key, [])):
                yield from walk(child, f"{path}.{key}[{i}]")


def input_problems(schema: dict[str, Any]) -> list[str]:
    problems = []
    if schema.get("type") != "object":
        problems.append("root: type must be object")
    problems += [f"root: {word} is refused by model providers" for word in ROOT_COMBINATORS if word in schema]
    text = json.dumps(schema)
    if "$ref" in text or "$defs" in text:
        problems.append("references: inline them, not every client resolves $ref")
    for path, node in walk(schema):
        if path == "$":
            continue
        if "type" not in node and "enum" not in node and "const" not in node:
            problems.append(f"{path}: declares no type")
        if {"type": "null"} in node.get("anyOf", []) or node.get("type") == "null":
            problems.append(f"{path}: optional fields are their plain type, left out of required")
        if "default" in node and node["default"] is None:
            problems.append(f"{path}: default null says nothing; document the default or leave it out")
    for name in schema.get("required", []):
        if name not in schema.get("properties", {}):
            problems.append(f"root: required {name} is no property")
    return problems


def output_problems(schema: dict[str, Any] | None) -> list[str]:
    if schema is None:
        return ["no outputSchema"]
    problems = [] if schema.get("type") == "object" else ["root: type must be object"]
    problems += [f"root: {word}" for word in ROOT_COMBINATORS if word in schema]
    if "error" not in schema.get("properties", {}):
        problems.append("a tool error's body {error: ...} must meet it too")
    return problems


@pytest.mark.parametrize("tool", LISTED, ids=lambda tool: tool.name)
def test_input_schema_is_one_every_provider_and_client_accepts(tool):
    assert input_problems(tool.input_schema) == []


@pytest.mark.parametrize("tool", LISTED, ids=lambda tool: tool.name)
def test_output_schema_is_declared_and_admits_the_tool_errors(tool):
    assert output_problems(tool.output_schema) == []
    errors = [
        InvalidInput("kind: must be one of constraint, …", field="items[1].kind",
                     details=[{"field": "items[1].kind", "rule": "must be one of constraint, …"}]),
        NotFound("no capsule with id cap-9", field="ids[0]"),
    ]
    for model in (RelateRequest, CapsuleUpdate, BootstrapRequest):  # rules about the whole request included
        for bad in ({}, {"nonsense": 1}, []):
            try:
                parse(model, bad, InvalidInput)
            except InvalidInput as exc:
                errors.append(exc)
    assert any(detail["field"] is None for exc in errors for detail in exc.details or [])
    for exc in errors:
        jsonschema.validate(tool_error(exc.to_body()).structured_content, tool.output_schema)
    unavailable = Unavailable("Neo4j did not answer")
    body = unavailable.to_body()
    body["error"]["retry_after"] = unavailable.retry_after
    jsonschema.validate(body, tool.output_schema)


def test_the_lint_catches_what_broke_clients():
    """The rules are not vacuous: each known bad shape is reported."""
    root_any_of = {"type": "object", "anyOf": [{"$ref": "#/$defs/A"}], "$defs": {"A": {"type": "object"}}}
    assert "root: anyOf is refused by model providers" in input_problems(root_any_of)
    nullable = {"type": "object", "properties": {"terms": {"anyOf": [{"type": "array"}, {"type": "null"}],
                                                           "default": None}}}
    assert "$.terms: optional fields are their plain type, left out of required" in input_problems(nullable)
    assert "$.terms: declares no type" in input_problems(nullable)
    assert output_problems(None) == ["no outputSchema"]


def test_plain_schema_inlines_definitions_and_reduces_nullable_members():
    schema = {"type": "object", "properties": {
        "edge": {"$ref": "#/$defs/Edge"},
        "terms": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}], "default": None,
                  "description": "kept"},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    }, "$defs": {"Edge": {"type": "object", "properties": {"to": {"type": "string"}}}}}
    plain = plain_schema(schema)
    assert plain["properties"]["edge"] == {"type": "object", "properties": {"to": {"type": "string"}}}
    assert plain["properties"]["terms"] == {"type": "array", "items": {"type": "string"}, "description": "kept"}
    assert plain["properties"]["either"] == schema["properties"]["either"]  # a real choice stays one
    assert "$defs" not in plain
    # outputs keep null where a result sends it
    assert plain_schema(schema, nullable=True)["properties"]["terms"]["anyOf"][1] == {"type": "null"}
