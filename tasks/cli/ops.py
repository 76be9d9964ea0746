"""Operations commands: ``faq migrate``, ``faq orgs create|ensure|set-plan``, ``faq keys
create|revoke`` and ``faq jobs run NAME`` (a periodic job once, in-process)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from tasks.cli.runner import run_async, run_with_engine

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from tenancy.orgs import OrgInfo
    from tenancy.schemas import SchemaReport


def cmd_migrate(_args: argparse.Namespace) -> int:
    from tenancy.schemas import failed, migrate_tenants, upgrade_shared_schema

    def report(r: SchemaReport) -> None:
        if r.error:
            print(f"tenant {r.org_slug} ({r.schema}): FAILED {r.error}", flush=True)
        else:
            print(f"tenant {r.org_slug} ({r.schema}): applied {', '.join(r.applied)}", flush=True)

    async def work(engine: AsyncEngine) -> int:
        started = time.perf_counter()
        applied = await upgrade_shared_schema(engine)
        print(f"shared: {'applied ' + ', '.join(applied) if applied else 'at head'}")
        reports = await migrate_tenants(engine, on_report=report)
        elapsed = time.perf_counter() - started
        print(f"tenants: {len(reports)} migrated, {len(failed(reports))} failed ({elapsed:.2f}s)")
        return 1 if failed(reports) else 0

    return run_with_engine(work)


def cmd_orgs_create(args: argparse.Namespace) -> int:
    from api.orgs import create_org
    from billing.plans import Plan
    from tenancy.orgs import OrgExists

    async def work(engine: AsyncEngine) -> OrgInfo:
        return await create_org(
            engine, args.slug, args.name, Plan(args.plan.upper()), locale=args.locale
        )

    try:
        org = run_with_engine(work)
    except OrgExists:
        print(f"org {args.slug!r} already exists", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(org.as_json()))
    else:
        print(f"created org {org.slug} ({org.id}) on plan {org.plan}")
    return 0


def cmd_orgs_ensure(args: argparse.Namespace) -> int:
    """The org and its first admin member, made when missing (what ``faq dev`` runs): a new
    org on ``--plan``; an org with no active admin member gets one (``--admin-email``) and
    that member an admin key, printed once. An org that has both is left as it is (its plan
    too: ``faq orgs set-plan`` changes it)."""
    from api.keys.service import check_member_key, issue
    from api.members.schemas import MemberCreate
    from api.members.service import create_member, first_admin
    from api.orgs import create_org
    from billing.plans import Plan
    from tenancy.audit import system_actor
    from tenancy.db import tenant_session
    from tenancy.errors import ServiceError
    from tenancy.orgs import OrgExists, OrgNotFound, get_org
    from tenancy.principal import system
    from tenancy.transactions import commit

    try:
        admin_data = MemberCreate(email=args.admin_email, name=args.admin_name, role="admin")
    except ValueError as exc:  # pydantic's ValidationError is one
        print(f"--admin-email: {exc}", file=sys.stderr)
        return 2

    async def work(engine: AsyncEngine) -> dict[str, Any]:
        created = False
        try:
            org = await get_org(engine, args.slug)
        except OrgNotFound:
            try:
                plan = Plan(args.plan.upper())
                org = await create_org(engine, args.slug, args.name, plan, locale=args.locale)
                created = True
            except OrgExists:  # made meanwhile by another command
                org = await get_org(engine, args.slug)
        acting = system(org.id, org.schema_name, "cli", slug=org.slug, plan=org.plan)
        issued: dict[str, Any] | None = None
        async with tenant_session(engine, org.schema_name) as session:
            admin = await first_admin(session)
            if admin is None:
                admin = await create_member(session, acting, admin_data)
                await check_member_key(session, admin["id"], ["admin"])
                issued = await issue(
                    session,
                    org.id,
                    ["admin"],
                    name="first admin",
                    allowed_origins=[],
                    expires_at=None,
                    actor=system_actor("cli"),
                    member_id=admin["id"],
                )
            await commit(session)
        return {
            "org": org.as_json(),
            "created": created,
            "admin": admin,
            "key": issued["key"] if issued else None,
            "fingerprint": issued["fingerprint"] if issued else None,
        }

    try:
        result = run_with_engine(work)
    except ValueError as exc:  # a bad slug or locale
        print(str(exc), file=sys.stderr)
        return 2
    except ServiceError as exc:  # the email taken by a member who is no admin, no seat left
        print(str(exc), file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result))
        return 0
    org, admin = result["org"], result["admin"]
    made = "created" if result["created"] else "exists"
    print(f"org {org['slug']} ({org['id']}) {made}, on plan {org['plan']}")
    print(f"first admin member: {admin['name']} <{admin['email']}> ({admin['id']})")
    if result["key"]:
        print(f"its admin key (shown once): {result['key']}\nfingerprint: {result['fingerprint']}")
    return 0


def cmd_orgs_set_plan(args: argparse.Namespace) -> int:
    from billing.plans import Plan
    from tenancy.audit import system_actor
    from tenancy.orgs import OrgNotFound, set_plan

    async def work(engine: AsyncEngine) -> OrgInfo:
        plan = Plan(args.plan.upper())
        return await set_plan(
            engine,
            args.slug,
            plan.value,
            actor={"type": "ops", "id": "cli"},
            audit_actor=system_actor("cli"),
        )

    try:
        org = run_with_engine(work)
    except OrgNotFound:
        print(f"no org {args.slug!r}", file=sys.stderr)
        return 1
    print(f"org {org.slug} is on plan {org.plan}")
    return 0


def cmd_keys_create(args: argparse.Namespace) -> int:
    from datetime import datetime

    from api.keys.service import check_member_key, issue, validated
    from tenancy.audit import system_actor
    from tenancy.db import tenant_session
    from tenancy.errors import ServiceError
    from tenancy.keys import parse_scopes
    from tenancy.orgs import OrgNotFound, get_org
    from tenancy.transactions import commit

    origins = [o.strip() for o in (args.origins or "").split(",") if o.strip()]
    try:
        expires_at = datetime.fromisoformat(args.expires) if args.expires else None
        if expires_at is not None and expires_at.tzinfo is None:
            raise ValueError("--expires needs an offset or Z (ISO 8601)")
        scopes, origins, expires_at = validated(parse_scopes(args.scopes), origins, expires_at)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except ServiceError as exc:
        print(str(exc), file=sys.stderr)
        return 2

    async def work(engine: AsyncEngine) -> dict[str, Any]:
        org = await get_org(engine, args.slug)
        # Bound to the org's schema: the creation is audited in the org (actor: the CLI).
        async with tenant_session(engine, org.schema_name) as session:
            if args.member:  # issue 30: an active member of the org, scopes within its role
                await check_member_key(session, args.member, scopes)
            created = await issue(
                session,
                org.id,
                scopes,
                name=args.name,
                allowed_origins=origins,
                expires_at=expires_at,
                actor=system_actor("cli"),
                member_id=args.member or None,
            )
            await commit(session)
        return created

    try:
        issued = run_with_engine(work)
    except OrgNotFound:
        print(f"no org {args.slug!r}", file=sys.stderr)
        return 1
    except ServiceError as exc:  # --member: no such active member, or scopes above its role
        print(str(exc), file=sys.stderr)
        return 2
    key, fingerprint = issued["key"], issued["fingerprint"]
    if args.json:
        print(json.dumps({"key": key, "fingerprint": fingerprint, "scopes": scopes}))
    else:
        print(f"key (shown once): {key}\nfingerprint: {fingerprint}")
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    from sqlalchemy import select

    from tenancy.audit import system_actor
    from tenancy.db import shared_session, tenant_session
    from tenancy.keys import revoke_key
    from tenancy.models import ApiKey, Organization
    from tenancy.transactions import commit

    async def work(engine: AsyncEngine) -> bool:
        async with shared_session(engine) as session:
            schema = await session.scalar(
                select(Organization.schema_name)
                .join(ApiKey, ApiKey.org_id == Organization.id)
                .where(ApiKey.fingerprint == args.fingerprint)
            )
        if schema is None:
            return False
        # Bound to the key's org: the revocation is audited there (actor: the CLI).
        async with tenant_session(engine, schema) as session:
            found = await revoke_key(session, args.fingerprint, actor=system_actor("cli"))
            await commit(session)
        return found

    if not run_with_engine(work):
        print(f"no key with fingerprint {args.fingerprint!r}", file=sys.stderr)
        return 1
    print(f"revoked {args.fingerprint}")
    return 0


def cmd_jobs_run(args: argparse.Namespace) -> int:
    import tasks.actors  # noqa: F401  (registers the jobs)
    from tasks.jobs import JOBS

    job = JOBS.get(args.job)
    if job is None:
        print(f"unknown job {args.job!r}; known: {', '.join(sorted(JOBS))}", file=sys.stderr)
        return 2
    result: Any = run_async(job.run)
    print(json.dumps({"job": args.job, "result": result}, default=str))
    return 0
