"""Request and response models (pydantic v2): every rule of SPEC §1, §2, §4, §5 in one place.

Every write is validated here before any Cypher runs. Models forbid unknown
fields so a typo is a teaching error, not a silently ignored option.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BeforeValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

KINDS = (
    "constraint", "decision", "failure_pattern", "task", "epic",
    "fact", "procedure", "doc", "capability", "brainstorm", "handoff",
)
DAG_KINDS = ("task", "epic")
TIERS = ("active", "archived", "stale")
STATUSES = ("open", "done")

Kind = Literal[
    "constraint", "decision", "failure_pattern", "task", "epic",
    "fact", "procedure", "doc", "capability", "brainstorm", "handoff",
]
Tier = Literal["active", "archived", "stale"]
Status = Literal["open", "done"]

MAX_CONTENT_BYTES = 64 * 1024
MAX_HEADLINE_CHARS = 120
MAX_BATCH = 1000
MAX_TERMS = 64
MAX_TERM_CHARS = 200

_CAPSULE_ID = re.compile(r"^cap-[1-9][0-9]*$")


def check_unicode(value: str) -> str:
    """JSON can carry a lone UTF-16 surrogate ("\\ud800") that Python accepts but the driver cannot send."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None
    return value


def check_unicode_if_str(value: object) -> object:
    """Before a length constraint, which would otherwise refuse a surrogate with pydantic's vaguer message."""
    return check_unicode(value) if isinstance(value, str) else value


def check_project_id(value: str) -> str:
    """SPEC §1: 1–200 chars, `/` separates levels, no leading/trailing `/`, no empty segment."""
    check_unicode(value)
    if not 1 <= len(value) <= 200:
        raise ValueError("must be 1-200 characters")
    if value != value.strip():
        raise ValueError("must not start or end with whitespace")
    if value.startswith("/") or value.endswith("/"):
        raise ValueError("must not start or end with '/' (use 'team/project', not '/team/project/')")
    if "//" in value:
        raise ValueError("must not contain an empty segment ('//')")
    return value


def check_project_prefix(value: str) -> str:
    """SPEC §2: a prefix that can match nothing is a mistake, so say so instead of answering empty."""
    check_unicode(value)  # first: the messages below quote the value
    if not value.strip():
        raise ValueError(
            "an empty project_prefix matches nothing; omit project_prefix to read the whole store, "
            "or send a prefix such as 'nott'"
        )
    if value.endswith("/"):
        raise ValueError(
            f"a project_prefix ending in '/' matches nothing (project ids never end in '/'); "
            f"send '{value.rstrip('/') or 'nott'}' to cover it and its sub-projects"
        )
    return check_project_id(value)


def check_capsule_id(value: str) -> str:
    if not _CAPSULE_ID.match(value):
        raise ValueError("must look like 'cap-<n>' with n >= 1 (ids are assigned by the service)")
    return value


def check_content(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or only whitespace")
    if len(check_unicode(value).encode("utf-8")) > MAX_CONTENT_BYTES:
        raise ValueError(f"must be at most {MAX_CONTENT_BYTES} bytes of UTF-8 (64 KiB)")
    return value


def check_headline(value: str) -> str:
    check_unicode(value)
    if not value.strip():
        raise ValueError("must not be empty; omit it to derive it from the content's first line")
    if len(value) > MAX_HEADLINE_CHARS:
        raise ValueError(f"must be at most {MAX_HEADLINE_CHARS} characters")
    return value


def as_utc(value: datetime) -> datetime:
    """Store UTC; an offset that pushes the instant past year 1 or 9999 is a 422, not an OverflowError (500)."""
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError(
            "is outside the supported date range once converted to UTC "
            "(0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z)"
        ) from None


def derive_headline(content: str) -> str:
    """The first non-empty line of the content, trimmed to 120 characters."""
    for line in content.splitlines():
        line = line.strip()
        if line:
            return line[:MAX_HEADLINE_CHARS]
    return content.strip()[:MAX_HEADLINE_CHARS]


_AGENT = re.compile(r"[A-Za-z0-9._:@/-]{1,100}")


def check_agent(value: str) -> str:
    if not _AGENT.fullmatch(value):
        raise ValueError("must be 1-100 characters from A-Z a-z 0-9 and . _ : @ / - (it names the worker, "
                         "e.g. 'billing-agent-2')")
    return value


ProjectId = Annotated[str, AfterValidator(check_project_id)]
ProjectPrefix = Annotated[str, AfterValidator(check_project_prefix)]
CapsuleId = Annotated[str, AfterValidator(check_capsule_id)]
Content = Annotated[str, AfterValidator(check_content)]
Headline = Annotated[str, AfterValidator(check_headline)]
UtcDatetime = Annotated[AwareDatetime, AfterValidator(as_utc)]
CapsuleIds = Annotated[list[CapsuleId], Field(max_length=MAX_BATCH)]
#: SPEC §12: the worker's name (never a secret): sessions, claims, and the packs that honour claims.
Agent = Annotated[str, AfterValidator(check_agent)]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


# ---------------------------------------------------------------- writes


class CapsuleIn(StrictModel):
    """One capsule to ingest; edges to existing capsules are created in the same transaction."""

    project_id: ProjectId
    kind: Kind
    content: Content
    headline: Headline | None = None
    tier: Tier = "active"
    status: Status | None = Field(default=None, description="task/epic only; default 'open'")
    valid_to: UtcDatetime | None = Field(default=None, description="expiry; expired when valid_to <= now")
    supersedes: CapsuleIds = Field(default_factory=list, description="ids this capsule supersedes")
    blocks: CapsuleIds = Field(default_factory=list, description="task/epic ids that cannot start until this is done")
    blocked_by: CapsuleIds = Field(default_factory=list, description="task/epic ids that must be done first")

    # Field validators (not one model validator) so a 422 names `items[i].status`, not just `items[i]`.
    # `kind` is declared before these fields, so it is in info.data once it has validated.

    @field_validator("status")
    @classmethod
    def _status_only_for_dag_kinds(cls, value: Status | None, info: ValidationInfo) -> Status | None:
        kind = info.data.get("kind")
        if value is not None and kind is not None and kind not in DAG_KINDS:
            raise ValueError(f"status is only for task and epic capsules, not kind '{kind}'")
        return value

    @field_validator("blocks", "blocked_by")
    @classmethod
    def _blocks_only_for_dag_kinds(cls, value: list[str], info: ValidationInfo) -> list[str]:
        kind = info.data.get("kind")
        if value and kind is not None and kind not in DAG_KINDS:
            raise ValueError(f"BLOCKS edges join task/epic capsules only; kind '{kind}' cannot block or be blocked")
        return value

    @model_validator(mode="after")
    def _defaults(self) -> "CapsuleIn":
        if self.kind in DAG_KINDS and self.status is None:
            self.status = "open"
        if self.headline is None:
            self.headline = derive_headline(self.content)
        return self


class IngestBatch(StrictModel):
    items: Annotated[list[CapsuleIn], Field(min_length=1, max_length=MAX_BATCH)]


class Edge(StrictModel):
    type: Literal["BLOCKS", "SUPERSEDES"]
    from_id: CapsuleId = Field(alias="from")
    to_id: CapsuleId = Field(alias="to")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _no_self_loop(self) -> "Edge":
        if self.from_id == self.to_id:
            raise ValueError(f"a capsule cannot {self.type} itself ({self.from_id})")
        return self


class RelateRequest(StrictModel):
    """Add and/or remove edges between existing capsules, all in one transaction."""

    add: Annotated[list[Edge], Field(max_length=MAX_BATCH)] = Field(default_factory=list)
    remove: Annotated[list[Edge], Field(max_length=MAX_BATCH)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _something(self) -> "RelateRequest":
        if not self.add and not self.remove:
            raise ValueError("send at least one edge in 'add' or 'remove'")
        return self


class CapsuleUpdate(StrictModel):
    """Fields an agent may change after ingest; `updated_at` is bumped by the service."""

    status: Status | None = None
    tier: Tier | None = None
    valid_to: UtcDatetime | None = None
    clear_valid_to: bool = False
    headline: Headline | None = None
    content: Content | None = None

    @model_validator(mode="after")
    def _something(self) -> "CapsuleUpdate":
        if not self.model_fields_set - {"clear_valid_to"} and not self.clear_valid_to:
            raise ValueError("send at least one of status, tier, valid_to, clear_valid_to, headline, content")
        if self.clear_valid_to and self.valid_to is not None:
            raise ValueError("send either valid_to or clear_valid_to, not both")
        return self


# ---------------------------------------------------------------- reads


class Fence(StrictModel):
    """SPEC §2 scope fences; both given → AND; neither → the whole store."""

    project_id: ProjectId | None = None
    project_prefix: ProjectPrefix | None = None


class BootstrapRequest(Fence):
    """SPEC §4 input."""

    terms: Annotated[
        list[Annotated[str, Field(max_length=MAX_TERM_CHARS), BeforeValidator(check_unicode_if_str)]],
        Field(max_length=MAX_TERMS),
    ] | None = Field(default=None, description="caller-expanded terms; raw, re-rank only, never filter")
    token_budget: Annotated[StrictInt, Field(ge=0)] = Field(
        default=1500, description="token budget for the whole pack; 0 returns an empty pack"
    )
    agent: Agent | None = Field(
        default=None, description="who asks (SPEC §12): its own claimed work comes first, marked held; work other "
        "agents hold is left out and counted in ready.held_by_others. Omitted: every claimed node counts as held "
        "by others")


# ---------------------------------------------------------------- §5 reads (store/reads.py)

MAX_LIST_LIMIT = 500


class CapsuleIdList(StrictModel):
    """One or many capsule ids (memory_get, tombstone); at most one batch worth."""

    ids: Annotated[list[CapsuleId], Field(min_length=1, max_length=MAX_BATCH)]


class ListRequest(Fence):
    """SPEC §5 list: fenced (§2), filtered, paginated by an opaque cursor over `seq`."""

    kind: Kind | None = None
    tier: Tier | None = None
    status: Status | None = Field(default=None, description="task/epic status; other kinds never match")
    limit: Annotated[int, Field(ge=1, le=MAX_LIST_LIMIT)] = Field(default=50, description="page size, at most 500")
    cursor: str | None = Field(default=None, description="next_cursor of the previous page; omit for the first")


# ---------------------------------------------------------------- §8 retrieve, §10 aliases

MAX_RETRIEVE_LIMIT = 50
MAX_ALIASES = 32

TermText = Annotated[str, Field(max_length=MAX_TERM_CHARS), BeforeValidator(check_unicode_if_str)]


class RetrieveRequest(Fence):
    """SPEC §8 input: the caller's own terms (plus taught aliases), kinds, a result limit and §4's budget."""

    terms: Annotated[list[TermText], Field(min_length=1, max_length=MAX_TERMS)] = Field(
        description="caller-expanded terms (1-64, each at most 200 characters); a capsule matches a term when its "
        "text holds every token of the term or of one of its taught aliases")
    kinds: Annotated[list[Kind], Field(min_length=1)] | None = Field(
        default=None, description="only these kinds (default: every kind)")
    limit: Annotated[StrictInt, Field(ge=1, le=MAX_RETRIEVE_LIMIT)] = Field(
        default=10, description="at most this many results (1-50, default 10)")
    token_budget: Annotated[StrictInt, Field(ge=0)] = Field(
        default=1500, description="token budget for the whole answer (§4's contract; the floor is the first result)")


def check_alias_text(value: str) -> str:
    """A term or alias must hold a token: one without letters or digits could never match anything."""
    from graphsvc.core.textmatch import tokenize

    check_unicode(value)
    if not tokenize(value):
        raise ValueError("must contain at least one letter or digit (terms are matched by their alphanumeric tokens)")
    return value


AliasText = Annotated[str, Field(max_length=MAX_TERM_CHARS), AfterValidator(check_alias_text)]


class AliasSet(StrictModel):
    """A term's taught aliases in one scope (SPEC §10): store-wide without a prefix, else for retrieves
    whose fence lies inside that subtree. Also the form export writes an alias line in."""

    term: AliasText = Field(description="the term, e.g. 'postgres' (at most 200 characters)")
    aliases: Annotated[list[AliasText], Field(max_length=MAX_ALIASES)] = Field(
        description="its synonyms, e.g. ['pg'] (at most 32, each at most 200 characters)")
    project_prefix: ProjectPrefix | None = Field(
        default=None, description="only for retrieves fenced inside this subtree; omit for the whole store")


class AliasRequest(AliasSet):
    """memory_alias: teach (add) or, with forget, remove aliases of a term in one scope."""

    aliases: Annotated[list[AliasText], Field(max_length=MAX_ALIASES)] = Field(
        default_factory=list,
        description="synonyms to teach (1-32), or with forget: those to forget (none: forget every alias of the term)")
    forget: bool = Field(default=False, description="remove the listed aliases instead of adding them")

    @model_validator(mode="after")
    def _something(self) -> "AliasRequest":
        if not self.forget and not self.aliases:
            raise ValueError("send at least one alias to teach (or forget: true to forget the term's aliases)")
        return self


class AliasListRequest(Fence):
    """The aliases a retrieve with this fence would use (store-wide ones and those of enclosing prefixes)."""


# ---------------------------------------------------------------- §9 digest

MAX_NEWEST = 20


class DigestRequest(Fence):
    """SPEC §9 input: a scope, how many newest capsules, and §4's budget."""

    newest: Annotated[StrictInt, Field(ge=0, le=MAX_NEWEST)] = Field(
        default=5, description="how many of the most recently updated live capsules to show (0-20, default 5)")
    token_budget: Annotated[StrictInt, Field(ge=0)] = Field(
        default=1500, description="token budget for the whole digest (§4's contract; the floor is the handoff and "
        "the ready head)")
    agent: Agent | None = Field(
        default=None, description="who asks (SPEC §12): the ready section as this agent's pack shows it (its claimed "
        "work first, others' claimed work left out)")


# ---------------------------------------------------------------- §11 sessions

_SESSION_ID = re.compile(r"ses-[1-9][0-9]*")
MAX_NEXT_STEPS = 50


def check_session_id(value: str) -> str:
    if not _SESSION_ID.fullmatch(value):
        raise ValueError("must look like 'ses-<n>' (the id memory_session_start returned)")
    return value


class SessionStart(StrictModel):
    """memory_session_start: open a session for one agent in one project."""

    agent: Agent = Field(description="the worker's name, e.g. 'billing-agent-2'")
    project_id: ProjectId = Field(description="the project the session works in; its handoffs live there")
    newest: Annotated[StrictInt, Field(ge=0, le=MAX_NEWEST)] = Field(
        default=5, description="the digest's newest count (0-20, default 5)")
    token_budget: Annotated[StrictInt, Field(ge=0)] = Field(default=1500, description="the digest's token budget")


class SessionFinish(StrictModel):
    """memory_session_finish: close a session and leave a handoff for the next one."""

    session_id: Annotated[str, AfterValidator(check_session_id)] = Field(description="memory_session_start's id")
    handoff: Content = Field(description="what the next session must know: state, open questions, where you stopped")
    next_steps: Annotated[list[Annotated[str, Field(min_length=1, max_length=MAX_HEADLINE_CHARS * 4),
                                         BeforeValidator(check_unicode_if_str)]],
                          Field(max_length=MAX_NEXT_STEPS)] = Field(
        default_factory=list, description="the next steps, in order (at most 50)")

    def handoff_text(self) -> str:
        """The handoff capsule's content: the handoff, then the next steps as a list."""
        if not self.next_steps:
            return self.handoff
        return self.handoff.rstrip() + "\n\nNext steps:\n" + "\n".join(f"- {step}" for step in self.next_steps)

    @model_validator(mode="after")
    def _fits_one_capsule(self) -> "SessionFinish":
        if len(self.handoff_text().encode("utf-8")) > MAX_CONTENT_BYTES:
            raise ValueError(f"handoff and next_steps together must fit one capsule's content ({MAX_CONTENT_BYTES} "
                             "bytes of UTF-8): shorten the handoff or move detail into capsules of their own")
        return self
# ---------------------------------------------------------------- API keys (issue 27, graphsvc.store.keys)

MAX_KEY_PREFIXES = 32


class KeyCreate(StrictModel):
    """A new API key: a label for people, its right, and its scope (prefixes, or the whole store)."""

    label: Annotated[str, BeforeValidator(check_unicode_if_str), Field(min_length=1, max_length=100)] = Field(
        description="who or what holds the key, e.g. billing-agent")
    rights: Literal["read", "write", "admin"] = Field(
        description="read; write (implies read); admin (everything, key management included)")
    prefixes: Annotated[list[ProjectPrefix], Field(min_length=1, max_length=MAX_KEY_PREFIXES)] | None = Field(
        default=None, description="project prefixes the key may use, each with its sub-projects "
        "('shop' covers 'shop' and 'shop/x', never 'shopx'); omitted or null: the whole store")

    @model_validator(mode="after")
    def _admin_is_whole_store(self) -> "KeyCreate":
        # admin reaches export, import and key management, which no prefix can fence
        if self.rights == "admin" and self.prefixes is not None:
            raise ValueError("an admin key covers the whole store (export, import and key management have no "
                             "scope): leave prefixes out, or give a scoped key 'read' or 'write'")
        return self


# ---------------------------------------------------------------- §12 claims (graphsvc.store.claims)

MIN_LEASE_S = 10
MAX_LEASE_S = 86_400
DEFAULT_LEASE_S = 900


class ClaimRequest(Fence):
    """memory_claim: lease one ready task or epic to an agent (the first of its own pack's ready order, or
    `task_id`); claiming a node the agent already holds renews the lease."""

    agent: Agent = Field(description="the worker's name, e.g. 'billing-agent-2' (1-100 of A-Z a-z 0-9 . _ : @ / -)")
    terms: Annotated[
        list[Annotated[str, Field(max_length=MAX_TERM_CHARS), BeforeValidator(check_unicode_if_str)]],
        Field(max_length=MAX_TERMS),
    ] | None = Field(default=None, description="the terms of the agent's pack (§4): they order the ready work")
    task_id: CapsuleId | None = Field(
        default=None, description="claim this task or epic (it must be in the fence, live and ready); omit to claim "
        "the first ready node the agent's own pack would show")
    lease_s: Annotated[StrictInt, Field(ge=MIN_LEASE_S, le=MAX_LEASE_S)] = Field(
        default=DEFAULT_LEASE_S, description="seconds the lease lasts from now (10-86400, default 900); claim again "
        "before it ends to renew it")


class ReleaseRequest(StrictModel):
    """memory_release: end the agent's lease on a node (idempotent)."""

    agent: Agent = Field(description="the worker that holds the lease")
    task_id: CapsuleId = Field(description="the claimed task or epic")
