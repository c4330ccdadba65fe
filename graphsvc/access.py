"""Who is calling and what they may do: the principal behind a request, and the rules it obeys.

A surface resolves the caller's credential (an API key, `GRAPHSVC_API_TOKEN`, or nothing when
auth is off) to a `Principal` and sets it in `current_principal` for the call; the service reads
it there. Every service operation declares the right it needs (`graphsvc.service.operation`), so
the right is checked in one place whatever the surface, and the operation applies the principal's
scope to what it reads or writes (`Principal.fence`, `Principal.covers`). A contextvar, like the
request id, because anyio and Starlette's threadpool copy the caller's context into the worker
thread. Pure: no I/O, no web imports.

Rights are ordered: `write` implies `read`, `admin` implies both and adds the operator's routes
(export, import, migrate, verify, key management). A scope is one or more project prefixes with
SPEC §2's subtree rule (`shop` covers `shop` and `shop/x`, never `shopx`), or the whole store.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterable

from graphsvc.errors import Forbidden

RIGHTS = ("read", "write", "admin")
#: What a right lets its holder do, named for the refusal that tells a key what it may do instead.
RIGHT_MEANS = {
    "read": "read (memory_bootstrap, memory_retrieve, memory_digest, memory_get, memory_list, memory_aliases)",
    "write": "read and write capsules (ingest, relate, update, tombstone, memory_alias, memory_session_start, "
             "memory_session_finish)",
    "admin": "everything, key management, export and import included",
}


__all__ = ["Forbidden", "OPERATOR", "Principal", "covers", "current_principal", "normal_prefixes", "principal"]


def covers(prefix: str, project_id: str) -> bool:
    """SPEC §2's subtree rule: `prefix` covers itself and its sub-projects, never a sibling with a longer name."""
    return project_id == prefix or project_id.startswith(prefix + "/")


def normal_prefixes(prefixes: Iterable[str]) -> tuple[str, ...]:
    """Sorted, without duplicates and without a prefix that another one already covers, so the
    subtrees are disjoint (a sum over them counts each capsule once)."""
    unique = sorted(set(prefixes))
    return tuple(p for p in unique if not any(q != p and covers(q, p) for q in unique))


@dataclass(frozen=True)
class Principal:
    """A caller: its key id (None for GRAPHSVC_API_TOKEN or with auth off), label, right and scope.

    `prefixes` None is the whole store; otherwise the normalised prefixes (`normal_prefixes`).
    `caller` scopes idempotency keys (SPEC §5): a key id, or the hash of the env token.
    """

    key_id: str | None
    label: str
    right: str
    prefixes: tuple[str, ...] | None
    caller: str = ""

    def provenance(self) -> dict[str, str]:
        """What a write records about its writer (`written_by`, `written_by_label` on the capsule): the
        key id and label; for GRAPHSVC_API_TOKEN its name; nothing when auth is off (the operator)."""
        if self.key_id is not None:
            return {"written_by": self.key_id, "written_by_label": self.label}
        if self is OPERATOR or self.caller == "":
            return {}
        return {"written_by": self.label, "written_by_label": self.label}

    def allows(self, right: str) -> bool:
        return RIGHTS.index(self.right) >= RIGHTS.index(right)

    def require(self, right: str, operation: str, whole_store: bool = False) -> None:
        """The right `operation` needs; `whole_store`: and no scope (admin operations cannot be fenced)."""
        if not self.allows(right) or (whole_store and self.prefixes is not None):
            raise Forbidden(f"{operation} needs the '{right}' right; this key ({self.describe()}) may "
                            f"{RIGHT_MEANS[self.right]}", field="authorization")

    def describe(self) -> str:
        who = f"key {self.key_id}" if self.key_id else self.label
        return f"{who}, right '{self.right}', scope {self.scope_text()}"

    def scope_text(self) -> str:
        if self.prefixes is None:
            return "the whole store"
        return "projects " + ", ".join(repr(p) for p in self.prefixes) + " and their sub-projects"

    def covers(self, project_id: str) -> bool:
        """May this principal see (or write) a capsule of `project_id`?"""
        return self.prefixes is None or any(covers(p, project_id) for p in self.prefixes)

    def fence(self, project_id: str | None, project_prefix: str | None, field_prefix: str = "") -> tuple[str, ...] | None:
        """The scope a fenced read must add to the request's own fence (SPEC §2), or None when the
        request's fence already lies inside the scope (or the scope is the whole store).

        A request fence lies inside the scope when its `project_id` (if given, else its
        `project_prefix`) is covered; one outside is a 403 naming the scope. No fence: the scope.
        """
        if self.prefixes is None:
            return None
        for name, value in (("project_id", project_id), ("project_prefix", project_prefix)):
            if value is not None:
                if self.covers(value):
                    return None
                raise Forbidden(f"{name} '{value}' is outside this key's scope; it may read {self.scope_text()}",
                                field=field_prefix + name)
        return self.prefixes

    def check_write(self, project_id: str, field: str) -> None:
        """A write into `project_id` needs it inside the scope (403, nothing written, otherwise)."""
        if not self.covers(project_id):
            raise Forbidden(f"{field}: project '{project_id}' is outside this key's scope; it may write "
                            f"{self.scope_text()}", field=field)


#: With auth off (and on stdio, the CLI, tests that build the service directly) the caller is the operator.
OPERATOR = Principal(key_id=None, label="operator", right="admin", prefixes=None, caller="")

current_principal: ContextVar[Principal] = ContextVar("graphsvc_principal", default=OPERATOR)


def principal() -> Principal:
    return current_principal.get()
