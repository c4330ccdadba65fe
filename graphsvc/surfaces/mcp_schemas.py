"""Tool schemas that every MCP client and model provider accepts.

The tools' inputs are validated by the pydantic models of graphsvc.models (the HTTP API's), but the
JSON Schema pydantic writes for them is not what clients can use as it is:

* Model providers refuse a tool whose `input_schema` has `anyOf`/`oneOf`/`allOf` (or `not`, `if`)
  at its root, and refuse the whole request, so one such tool breaks every call of an agent that
  has graphsvc configured. The root is always `{"type": "object", "properties": …}`.
* `str | None = None` comes out as `anyOf [{type: string}, {type: null}]`. Generic clients read a
  property's `type` to convert what a user typed (the Inspector CLI sends `terms='["x"]'` as a
  string when it finds no `type: array`), so an optional field is its plain type, left out of
  `required`; the server still treats an explicit null as "not given".
* `$ref` into `$defs` is resolved by some clients and not by others: definitions are inlined (the
  models have no recursive types, so inlining terminates).

`outputSchema`s are declared for every tool so clients can validate `structuredContent`. A tool
error carries the HTTP error body (`{"error": {...}}`) as its structured content, so each output
schema lists `error` beside the result's fields and requires none at the root: an object that is
a result or an error meets it, and every field that is present is checked strictly.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from graphsvc.models import Kind, Status, Tier

#: Keywords a provider refuses at the root of a tool's input schema.
ROOT_COMBINATORS = ("anyOf", "oneOf", "allOf", "not", "if", "then", "else")


def _resolve(node: Any, defs: dict[str, Any], nullable: bool) -> Any:
    if isinstance(node, list):
        return [_resolve(item, defs, nullable) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        merged = {**copy.deepcopy(defs[name]), **{k: v for k, v in node.items() if k != "$ref"}}
        return _resolve(merged, defs, nullable)
    node = {key: _resolve(value, defs, nullable) for key, value in node.items()}
    if nullable:
        return node
    members = node.get("anyOf")
    if isinstance(members, list) and any(member == {"type": "null"} for member in members):
        kept = [member for member in members if member != {"type": "null"}]
        if len(kept) == 1:  # T | None: the plain T, its own keywords kept beside the annotations
            node = {**{k: v for k, v in node.items() if k != "anyOf"}, **kept[0]}
            if node.get("default", 0) is None:
                del node["default"]
    return node


def plain_schema(schema: dict[str, Any], *, nullable: bool = False) -> dict[str, Any]:
    """`schema` with every `$ref` inlined and, unless `nullable`, every nullable `anyOf` reduced to
    its plain type (inputs: null means "not given" anyway; outputs keep null where a result sends it,
    such as the last page's `next_cursor`)."""
    schema = copy.deepcopy(schema)
    defs = schema.pop("$defs", {})
    return _resolve(schema, defs, nullable)


def model_input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The input schema of a tool whose arguments are `model` (by alias, as the HTTP API reads them)."""
    return plain_schema(model.model_json_schema(by_alias=True))


# ---------------------------------------------------------------- results
# Shapes the service returns (graphsvc.core.pack, graphsvc.store.records, graphsvc.service), written
# as models so their schema comes out of the same generator as the inputs'. The tests validate real
# results of every tool against them, so a new field in a result fails there first.


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorDetail(_Out):
    field: str | None = Field(description="null when the rule is about the request as a whole")
    rule: str


class ErrorInfo(_Out):
    code: str = Field(description="machine-readable: bad_request, invalid, not_found, conflict, "
                                  "idempotency_key_reused, neo4j_unavailable, internal, …")
    message: str = Field(description="what was wrong and how to correct the call")
    field: str | None = Field(default=None, description="the argument that broke a rule, e.g. items[1].kind")
    details: list[ErrorDetail] | None = Field(default=None, description="every field that broke a rule")
    request_id: str | None = Field(default=None, description="quote it to an operator; it is in the server's log")
    retry_after: int | None = Field(default=None, description="seconds to wait before retrying (unavailable)")


class Held(_Out):
    lease_until: str = Field(description="when your claim on it ends unless you claim it again (memory_claim)")


class PackRow(_Out):
    id: str
    headline: str
    project_id: str
    excerpt: str | None = Field(default=None, description="the content on one line, when it adds to the headline")
    held: Held | None = Field(default=None, description="you (the request's agent) hold this ready task")


class TrapRow(PackRow):
    tier: Tier
    superseded: bool


class ReadySection(_Out):
    state: Literal["next_action", "nothing_ready", "cycle"]
    next_action: PackRow | None = Field(default=None, description="the ONE thing to do next (state next_action)")
    ready: list[PackRow] | None = Field(default=None, description="the other ready tasks, at most 10")
    cycle: list[str] | None = Field(default=None, description="one concrete BLOCKS cycle to repair (state cycle)")
    message: str | None = None
    held_by_others: int | None = Field(default=None, description="ready tasks other agents hold (claimed): left "
                                       "out of the ready set and ready_total")


class Scope(_Out):
    project_id: str | None = None
    project_prefix: str | None = None
    terms: list[str] | None = None
    key_prefixes: list[str] | None = Field(default=None, description="a scoped API key's prefixes, when the "
                                           "request had no fence: the pack covers their union (docs/keys.md)")


class Budget(_Out):
    token_budget: int
    used_tokens: int
    floor_tokens: int
    trimmed_by_budget: int


class PackResult(_Out):
    advisory: Literal["ADVISORY_NOT_AUTHORITY"]
    notice: str
    as_of: str
    scope: Scope | None = Field(default=None, description="the fences and terms of the request, when any")
    constraints: list[PackRow] | None = None
    constraints_total: int
    ready: ReadySection | None = Field(default=None, description="always present unless token_budget is 0")
    ready_total: int
    decisions: list[PackRow] | None = None
    decisions_total: int
    traps: list[TrapRow] | None = None
    traps_total: int
    handles: list[str] | None = None
    budget: Budget


class EdgeOut(_Out):
    type: Literal["BLOCKS", "SUPERSEDES"]
    to: str


class EdgeIn(_Out):
    type: Literal["BLOCKS", "SUPERSEDES"]
    from_: str = Field(alias="from")


class HiddenEdges(_Out):
    out: int
    in_: int = Field(alias="in")


class Edges(_Out):
    out: list[EdgeOut]
    in_: list[EdgeIn] = Field(alias="in")
    hidden: HiddenEdges | None = Field(default=None, description="edges to capsules outside your API key's "
                                       "scope: counted, not listed (present only when there are some)")


class Capsule(BaseModel):
    """A stored capsule as memory_get returns it. Open: a property an operator set in Neo4j Browser
    is returned too, and a client validating the result must not refuse it."""

    model_config = ConfigDict(extra="allow")

    id: str
    project_id: str
    kind: Kind
    tier: Tier
    headline: str
    content: str
    status: Status | None = Field(default=None, description="tasks and epics only")
    created_at: str
    updated_at: str
    valid_to: str | None = None
    tombstoned_at: str | None = None
    written_by: str | None = Field(default=None, description="the API key (id) that last wrote this capsule")
    written_by_label: str | None = Field(default=None, description="that key's label")
    agent: str | None = Field(default=None, description="handoffs only: the agent whose session left it")
    lease_agent: str | None = Field(default=None, description="the agent that claimed this task (memory_claim)")
    lease_until: str | None = Field(default=None, description="when that claim ends (live while in the future)")
    lease_key: str | None = Field(default=None, description="the API key (id) that took the claim")
    tombstoned: bool
    superseded: bool
    expired: bool
    edges: Edges


class CapsulesResult(_Out):
    capsules: list[Capsule]


class CapsulePage(_Out):
    capsules: list[Capsule]
    next_cursor: str | None = Field(default=None, description="pass it back for the next page; absent on the last")


class IdsResult(_Out):
    ids: list[str] = Field(description="the new capsules' ids, in item order")


class EdgeRef(_Out):
    type: Literal["BLOCKS", "SUPERSEDES"]
    from_: str = Field(alias="from")
    to: str


class RelateResult(_Out):
    added: int
    already_present: list[EdgeRef]
    removed: int
    not_present: list[EdgeRef]


class TombstoneResult(_Out):
    tombstoned: list[str]
    already_tombstoned: list[str]


class RetrieveRow(PackRow):
    kind: Kind
    matched_terms: list[str] = Field(description="your terms this row covers, in request order; 'alias:<term>' "
                                     "when only a taught alias of the term matched")
    tier: Tier
    updated_at: str


class RetrieveResult(_Out):
    advisory: Literal["ADVISORY_NOT_AUTHORITY"]
    notice: str
    as_of: str
    scope: Scope | None = Field(default=None, description="the fences of the request, when any")
    outcome: Literal["grounded", "missing_evidence", "abstain"]
    results: list[RetrieveRow] | None = Field(default=None, description="eligible matches, best first")
    results_total: int
    excluded: dict[str, int] | None = Field(default=None, description="excluded matches per reason: superseded, "
                                            "expired, archived, tombstoned")
    handles: list[str] | None = None
    budget: Budget


class KindCounts(_Out):
    live: int
    superseded: int
    expired: int
    tombstoned: int


class BlockedRow(_Out):
    id: str
    headline: str
    project_id: str
    blockers: int = Field(description="open blockers: BLOCKS sources not done, tombstoned or superseded")


class NewestRow(_Out):
    id: str
    kind: Kind
    headline: str
    project_id: str
    updated_at: str


class HandoffRow(_Out):
    id: str
    agent: str | None = None
    headline: str
    content: str
    project_id: str
    session_id: str | None = None
    updated_at: str


class DigestResult(_Out):
    advisory: Literal["ADVISORY_NOT_AUTHORITY"]
    notice: str
    as_of: str
    scope: Scope | None = Field(default=None, description="the fences of the request, when any")
    handoff: HandoffRow | None = Field(default=None, description="the newest live handoff in scope, when any")
    counts: dict[str, KindCounts] = Field(description="per kind present in scope")
    ready: ReadySection | None = Field(default=None, description="memory_bootstrap's ready section; absent at budget 0")
    ready_total: int
    blocked: list[BlockedRow] | None = None
    blocked_total: int
    newest: list[NewestRow] | None = None
    handles: list[str] | None = None
    budget: Budget


class SessionStarted(_Out):
    session_id: str
    digest: DigestResult


class SessionFinished(_Out):
    session_id: str
    handoff_id: str = Field(description="the handoff capsule's id")


class AliasSetOut(_Out):
    term: str
    aliases: list[str]
    project_prefix: str | None = Field(default=None, description="absent: the aliases hold store-wide")


class AliasList(_Out):
    aliases: list[AliasSetOut]


def output_schema(model: type[BaseModel], *, bookmark: bool) -> dict[str, Any]:
    """A tool's outputSchema: the result's fields and the error body's, none required at the root."""
    schema = plain_schema(model.model_json_schema(by_alias=True), nullable=True)
    properties = dict(schema["properties"])
    extra = schema.get("additionalProperties", False)
    if bookmark:
        properties["bookmark"] = {"type": "string",
                                  "description": "pass it to a later read tool call to read this write"}
    properties["error"] = plain_schema(ErrorInfo.model_json_schema(), nullable=True)
    properties["error"]["description"] = "present only on a tool error (isError true): what to correct"
    return {"type": "object", "title": schema.get("title", model.__name__), "properties": properties,
            "additionalProperties": extra}


__all__ = ["ROOT_COMBINATORS", "model_input_schema", "output_schema", "plain_schema"]


class ClaimedTask(_Out):
    id: str
    headline: str
    project_id: str
    lease_until: str = Field(description="the lease's end: claim again before it to keep the task")


class ClaimResult(_Out):
    claimed: ClaimedTask | None = Field(default=None, description="the task you now hold, or null (see reason)")
    renewed: bool | None = Field(default=None, description="you already held it: the lease was extended")
    reason: Literal["nothing_ready", "all_held", "cycle"] | None = Field(
        default=None, description="why nothing was claimed")
    cycle: list[str] | None = Field(default=None, description="the live BLOCKS cycle to repair (reason cycle)")


class ReleaseResult(_Out):
    task_id: str
    released: bool = Field(description="true when your live lease ended now; false when you held none")
