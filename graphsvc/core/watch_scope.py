"""Which changed projects concern a watcher (SPEC §13), by SPEC §2's fence rules. Pure."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["WatchScope"]


def _covers(prefix: str, project_id: str) -> bool:
    return project_id == prefix or project_id.startswith(prefix + "/")


@dataclass(frozen=True)
class WatchScope:
    """A watched pack's fence: the request's `project_id` and `project_prefix` (AND), and the
    caller's key scope (`key_prefixes`, any of them; None: the whole store). All None: every project."""

    project_id: str | None = None
    project_prefix: str | None = None
    key_prefixes: tuple[str, ...] | None = None

    def matches(self, project_id: str) -> bool:
        """Could a write to `project_id` change this watcher's pack?"""
        return ((self.project_id is None or project_id == self.project_id)
                and (self.project_prefix is None or _covers(self.project_prefix, project_id))
                and (self.key_prefixes is None or any(_covers(p, project_id) for p in self.key_prefixes)))

    def seek_prefixes(self) -> list[str] | None:
        """Where to look for the next expiry: prefixes whose subtrees cover the fence (None: the whole store)."""
        if self.project_id is not None:
            return [self.project_id]
        if self.project_prefix is not None:
            return [self.project_prefix]
        if self.key_prefixes is not None:
            return list(self.key_prefixes)
        return None
