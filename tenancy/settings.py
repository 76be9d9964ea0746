"""One Settings object, read from the environment (12-factor)."""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def trusted_networks(text: str) -> tuple[Network, ...]:
    """Addresses and networks separated by commas or spaces; a bare address is a network of
    one, host bits are allowed (``10.1.2.3/8`` is ``10.0.0.0/8``). ValueError on any other
    entry."""
    networks = []
    for entry in re.split(r"[\s,]+", text.strip()):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or network") from None
    return tuple(networks)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore")

    database_url: str | None = None
    redis_url: str | None = None
    faq_env: str = "production"
    faq_secret_key: SecretStr | None = None

    stripe_api_key: SecretStr | None = None
    stripe_webhook_secret: SecretStr | None = None
    stripe_api_base: str | None = None
    # Where Stripe Checkout and the Customer Portal send the customer back (optional).
    faq_billing_return_url: str | None = None

    faq_publish_sweep_seconds: float = Field(default=300, gt=0)
    faq_outbox_sweep_seconds: float = Field(default=5, gt=0)
    faq_scheduler_lock_ttl_seconds: int = Field(default=15, ge=2)
    faq_webhook_timeout_seconds: float = Field(default=10, gt=0)
    faq_webhook_retry_base_seconds: float = Field(default=30, ge=0)
    faq_webhook_allow_private_networks: bool = False
    faq_webhook_ca_bundle: str | None = None
    # A pending delivery this late is re-sent by the re-drive job (lost message, dead worker).
    faq_webhook_redrive_after_seconds: float = Field(default=60, gt=0)
    # Deliveries in flight to one webhook at once, across workers (fairness between receivers).
    faq_webhook_max_in_flight: int = Field(default=4, ge=1)
    # Delivery history (attempts included) kept this long; at least the 14 days recover reaches.
    faq_delivery_retention_days: int = Field(default=30, ge=14)
    # Audit entries kept this long; each org always keeps its newest 100 (the audit endpoint's).
    faq_audit_retention_days: int = Field(default=365, ge=1)

    # PostgreSQL statement_timeout (ms, 0: none) of each org transaction: API requests get the
    # first (a timeout is a 503), the worker's jobs the second. Migrations and provisioning none.
    faq_request_statement_timeout_ms: int = Field(default=5_000, ge=0)
    faq_job_statement_timeout_ms: int = Field(default=60_000, ge=0)
    faq_db_pool_size: int = Field(default=10, ge=1)
    faq_db_max_overflow: int = Field(default=10, ge=0)
    # Short on purpose: a backend caches the catalog of every schema it touches (about 40 kB
    # each, never freed); recycling bounds that to what one connection touches in this time.
    faq_db_pool_recycle_seconds: int = Field(default=120, ge=60)
    # Cached bodies of question/category reads per API process (0: off); see
    # tenancy/response_cache.py. Entries also expire after FAQ_RESPONSE_CACHE_SECONDS.
    faq_response_cache_mb: int = Field(default=128, ge=0)
    faq_response_cache_seconds: float = Field(default=300, gt=0)
    faq_max_body_bytes: int = Field(default=1_048_576, ge=1024)
    faq_rate_limits: str | None = None  # e.g. "FREE=300,STARTER=1200" (per key per minute)
    faq_rate_limit_window_seconds: int = Field(default=60, ge=1)
    # Requests of one org in progress at once per API process (a write weighs 2, a read 1);
    # past it a request waits (up to 2 s) in the org's FIFO, then 429 rate_limited. 0: no cap.
    faq_org_max_inflight: int = Field(default=4, ge=0)
    # Failed authentications (a key presented but unknown or revoked) per client address per
    # minute; past it, 429 rate_limited instead of 401 (valid keys keep working).
    faq_auth_failures_per_minute: int = Field(default=300, ge=1)
    # Requests per minute of one client address with one publishable (``public``) key, on top
    # of the key's own plan limit: one visitor cannot use up a site's budget (issue 16).
    faq_public_key_per_address_per_minute: int = Field(default=120, ge=1)
    # Proxies in front of the API whose X-Forwarded-For is believed: addresses or networks
    # ("10.0.0.0/8,fd00::/8", commas or spaces). The client is the right-most X-Forwarded-For
    # hop not in one of them, walked from the peer (``api.http.client_addresses``); empty (the
    # default): nobody is trusted, the client is the peer.
    faq_trusted_proxies: str = ""
    # Deprecated (use FAQ_TRUSTED_PROXIES): true trusts any peer for one hop, the last
    # X-Forwarded-For entry. Ignored once FAQ_TRUSTED_PROXIES is set.
    faq_trust_forwarded_for: bool = False
    # Help-center requests per minute (issue 26): every page of one client address (IPv6: its
    # /64) and of one org, and of those the searches, tighter; past one, 429 with Retry-After.
    # A request over its address's budget does not count against its org's. 0: no limit.
    faq_hc_pages_per_address_per_minute: int = Field(default=600, ge=0)
    faq_hc_searches_per_address_per_minute: int = Field(default=30, ge=0)
    faq_hc_pages_per_org_per_minute: int = Field(default=6_000, ge=0)
    faq_hc_searches_per_org_per_minute: int = Field(default=600, ge=0)
    # Of those budgets, this many seconds' worth may be spent at once; past it, requests are
    # admitted at the budget's rate, evenly (a token bucket), never a minute's worth at once.
    faq_hc_burst_seconds: int = Field(default=10, ge=1, le=3600)
    # Hypercorn keeps an idle client connection this long (``faq serve``): longer than any
    # proxy in front keeps idle upstream connections (ingress-nginx: 60 s), so the proxy never
    # reuses a connection the API is closing.
    faq_keep_alive_seconds: float = Field(default=75, gt=0)
    # Record readers' searches, clicks and help-center page views (content analytics,
    # issue 17); false records none of them (votes are still kept).
    faq_content_analytics: bool = True
    # Semantic search (issue 28, docs/answers.md "Embeddings"): false runs lexical only.
    faq_semantic_search: bool = True
    # An OpenAI-compatible ``/v1/embeddings`` endpoint (base URL, e.g. https://host/v1) with
    # its model and vector size; unset: the WordLlama model shipped in its wheel (256).
    faq_embeddings_url: str | None = None
    faq_embeddings_model: str | None = None
    faq_embeddings_dimensions: int | None = Field(default=None, ge=1, le=16_000)
    faq_embeddings_api_key: SecretStr | None = None
    faq_embeddings_timeout_seconds: float = Field(default=10, gt=0)
    # Languages the endpoint embeds ("en,de"; empty: every locale); WordLlama: English only.
    faq_embeddings_languages: str = ""
    # Query embeddings kept per process (bytes bound, LRU); 0: off.
    faq_embeddings_query_cache_mb: int = Field(default=16, ge=0)
    faq_log_level: str = "INFO"
    # Long jobs (imports, embeddings backfills): seconds between two progress lines, at least.
    faq_progress_log_seconds: float = Field(default=10, ge=0)

    @field_validator("faq_trusted_proxies")
    @classmethod
    def _valid_networks(cls, value: str) -> str:
        trusted_networks(value)  # a ValueError naming the bad entry
        return value

    def trusted_proxy_networks(self) -> tuple[Network, ...]:
        """``FAQ_TRUSTED_PROXIES`` parsed (once per distinct value)."""
        return trusted_networks(self.faq_trusted_proxies)

    @property
    def is_dev(self) -> bool:
        return self.faq_env in {"dev", "test"}

    def require_database_url(self) -> str:
        if not self.database_url:
            raise RuntimeError("DATABASE_URL is not set (only `faq dev` starts an embedded one)")
        return self.database_url

    def require_redis_url(self) -> str:
        if not self.redis_url:
            raise RuntimeError("REDIS_URL is not set (only `faq dev` starts an embedded one)")
        return self.redis_url

    def require_secret_key(self) -> str:
        """The current key: the first of ``FAQ_SECRET_KEY`` (``new,old`` during a rotation)."""
        return self.secret_keys()[0]

    def secret_keys(self) -> list[str]:
        """Every key of ``FAQ_SECRET_KEY``, newest first: the first encrypts and signs, all of
        them decrypt and verify, so a key can be rotated without downtime."""
        raw = self.faq_secret_key.get_secret_value() if self.faq_secret_key else ""
        keys = [k.strip() for k in raw.split(",") if k.strip()]
        if not keys:
            raise RuntimeError("FAQ_SECRET_KEY is not set: generate one with `faq secret-key`")
        return keys


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
