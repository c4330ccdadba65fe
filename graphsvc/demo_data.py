"""The sample project `graphsvc demo` loads: an online shop with an API and a web front end.

It is shaped to show every part of a pack: standing constraints (one expired, so
it drops out), decisions (one superseded by a newer one), failure patterns (one
stale, which still shows but says so), a task DAG with BLOCKS edges where some
work is done so other work becomes ready, and a few facts and procedures that
stay out of the pack but are there to browse.

Capsules refer to each other by a local `key`; ids are only known once the
service assigns them, so `ingest_waves` orders the capsules into batches where
every reference points at an earlier batch (ingest creates those edges itself).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Mapping, Sequence

from graphsvc.core.timefmt import iso_utc

DEMO_PREFIX = "shop"
DEMO_TERMS = ("refund", "stripe", "webhook")


@dataclass(frozen=True)
class DemoCapsule:
    key: str
    project_id: str
    kind: str
    content: str
    status: str | None = None
    tier: str | None = None
    blocked_by: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    expired: bool = False  # loaded with valid_to one day before the load time


C = DemoCapsule

CAPSULES: tuple[DemoCapsule, ...] = (
    # ---- constraints: what an agent must not do
    C("no-card-data", "shop", "constraint",
      "Never store or log raw card numbers\nPayments go through Stripe tokenisation only; we stay out of PCI scope."),
    C("eu-data", "shop", "constraint",
      "Customer personal data stays in the EU region (eu-west-1)\nNo cross-region replicas, no US analytics sinks."),
    C("versioned-api", "shop/api", "constraint",
      "Never break /v1 API clients\nBreaking changes go to a new versioned route (/v2/...); /v1 stays until 2027."),
    C("expand-contract", "shop/api", "constraint",
      "Migrations must be backwards compatible for one release\nExpand first, deploy, then contract in the next release."),
    C("browsers", "shop/web", "constraint",
      "Support the last two versions of Chrome, Firefox and Safari\nNo polyfills for retired browsers."),
    C("wcag", "shop/web", "constraint",
      "Checkout pages must pass WCAG 2.1 AA\nRun the axe audit in CI on every checkout change."),
    C("freeze", "shop", "constraint",
      "Code freeze for the autumn sale\nOnly hotfixes may be deployed until the sale ends.", expired=True),
    # ---- decisions: still in force unless superseded
    C("postgres", "shop/api", "decision",
      "Orders and inventory live in PostgreSQL 16\nOne database per service; no shared tables between services."),
    C("cookie-sessions", "shop/api", "decision",
      "API authentication uses signed session cookies\nSimple for the first release; revisit for mobile clients."),
    C("stripe", "shop", "decision",
      "Stripe is the payment provider\nCard payments, refunds and payouts all go through Stripe."),
    C("ssr", "shop/web", "decision",
      "Product pages are rendered on the server (Next.js SSR)\nSearch engines and slow phones get full HTML."),
    C("oidc", "shop/api", "decision",
      "API authentication uses OIDC access tokens from Keycloak\nReplaces cookie sessions so the mobile app can call the API.",
      supersedes=("cookie-sessions",)),
    # ---- failure patterns: traps seen before
    C("webhook-order", "shop/api", "failure_pattern",
      "Stripe webhooks arrive out of order and more than once\nKey every handler on the event id and check the object's "
      "current state; never assume charge.refunded follows charge.succeeded in time."),
    C("hydration", "shop/web", "failure_pattern",
      "Price hydration mismatch between server and browser\nFormat money with the shop locale on both sides, never "
      "with the browser default."),
    C("n-plus-one", "shop/api", "failure_pattern",
      "N+1 queries in order history\nLoad order lines with the joined loader; the page timed out at 200 orders."),
    C("redis-ci", "shop/api", "failure_pattern",
      "CI tests fail when Redis is not ready yet\nFixed by the compose healthcheck; kept for history.", tier="stale"),
    # ---- facts and procedures: reference material (browse with memory_list / memory_get)
    C("staging", "shop/api", "fact",
      "Staging API runs at https://api.staging.shop.example\nStripe is in test mode there; test keys are in the team vault."),
    C("tokens", "shop/web", "fact",
      "Design tokens live in packages/ui/tokens.json\nColours and spacing come from there, never hard-coded."),
    C("release", "shop", "procedure",
      "How to release\nTag vX.Y.Z on main, wait for the image build, deploy to staging, run the smoke tests, then "
      "promote the same image to production."),
    # ---- the task DAG: (a) BLOCKS (b) means b waits for a
    C("refund-model", "shop/api", "task",
      "Design the refund data model\nrefunds table with states requested, pending, succeeded, failed.", status="done"),
    C("refund-endpoint", "shop/api", "task",
      "Add POST /v2/orders/{id}/refunds\nCreates a Stripe refund and a refunds row in one unit of work.",
      blocked_by=("refund-model",)),
    C("refund-webhook", "shop/api", "task",
      "Handle the Stripe charge.refunded webhook idempotently\nUpdates the refunds row; see the webhook trap.",
      blocked_by=("refund-endpoint",)),
    C("refund-button", "shop/web", "task",
      "Refund button and confirmation dialog in order history", blocked_by=("refund-endpoint",)),
    C("refund-status", "shop/web", "task",
      "Show the refund status on the order page", blocked_by=("refund-webhook", "refund-button")),
    C("refunds-epic", "shop", "epic",
      "Epic: refunds end to end\nCustomers can request a refund and follow it until the money is back.",
      blocked_by=("refund-status",)),
    C("guest-form", "shop/web", "task",
      "Guest checkout form with address validation", status="done"),
    C("guest-customers", "shop/api", "task",
      "Create guest customer records with e-mail verification"),
    C("checkout-audit", "shop/web", "task",
      "Accessibility audit of the guest checkout (WCAG 2.1 AA)", blocked_by=("guest-form",)),
    C("guest-rate-limit", "shop/api", "task",
      "Rate-limit guest order creation per IP and e-mail", blocked_by=("guest-customers",)),
    C("guest-epic", "shop", "epic",
      "Epic: guest checkout\nBuy without an account; convert to an account after the order.",
      blocked_by=("guest-customers", "checkout-audit", "guest-rate-limit")),
    C("pg16-staging", "shop/api", "task",
      "Upgrade PostgreSQL 15 to 16 on staging", status="done"),
)


def ingest_waves(capsules: Sequence[DemoCapsule] = CAPSULES) -> list[list[DemoCapsule]]:
    """Batches in load order: a capsule goes one wave after the latest capsule it refers to."""
    by_key = {capsule.key: capsule for capsule in capsules}
    depth: dict[str, int] = {}

    def wave_of(capsule: DemoCapsule) -> int:
        if capsule.key not in depth:
            refs = capsule.blocked_by + capsule.supersedes
            depth[capsule.key] = 1 + max((wave_of(by_key[ref]) for ref in refs), default=-1)
        return depth[capsule.key]

    waves: list[list[DemoCapsule]] = []
    for capsule in capsules:
        level = wave_of(capsule)
        while len(waves) <= level:
            waves.append([])
        waves[level].append(capsule)
    return waves


def ingest_item(capsule: DemoCapsule, ids: Mapping[str, str], now: datetime) -> dict[str, Any]:
    """The ingest JSON for one capsule, its references resolved to the ids already assigned."""
    item: dict[str, Any] = {"project_id": capsule.project_id, "kind": capsule.kind, "content": capsule.content}
    if capsule.status is not None:
        item["status"] = capsule.status
    if capsule.tier is not None:
        item["tier"] = capsule.tier
    if capsule.expired:
        item["valid_to"] = iso_utc(now - timedelta(days=1))
    if capsule.blocked_by:
        item["blocked_by"] = [ids[key] for key in capsule.blocked_by]
    if capsule.supersedes:
        item["supersedes"] = [ids[key] for key in capsule.supersedes]
    return item
