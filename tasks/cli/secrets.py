"""``faq secret-key new`` prints a new ``FAQ_SECRET_KEY``; ``faq secret-key rotate``
re-encrypts every webhook secret under the newest key (``api/webhooks/rotation.py`` owns
the transactions; this command only reports)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tasks.cli.runner import run_with_engine

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


def new_secret_key() -> str:
    """A new Fernet key, the form of each entry of ``FAQ_SECRET_KEY``."""
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


def cmd_secret_key(args: argparse.Namespace) -> int:
    if args.action == "new":
        print(new_secret_key())
        return 0
    return cmd_rotate_secret_key()


def _report(slug: str, count: int) -> None:
    print(f"{slug}: {count} webhook secrets re-encrypted", flush=True)


def cmd_rotate_secret_key() -> int:
    """Re-encrypt every webhook secret and every reader token secret (issue 39) of every org
    under the newest ``FAQ_SECRET_KEY``."""
    from api.audiences.readers import reencrypt_reader_secrets
    from api.webhooks.rotation import reencrypt_webhook_secrets

    async def work(engine: AsyncEngine) -> int:
        return await reencrypt_webhook_secrets(engine, on_org=_report)

    total = run_with_engine(work)
    print(f"done: {total} webhook secrets now under the newest key")
    readers = run_with_engine(reencrypt_reader_secrets)
    kinds = "token keys and OpenID Connect clients"
    print(f"done: {readers} reader secrets ({kinds}) now under the newest key")
    return 0
