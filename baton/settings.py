"""Settings: the only reader of the environment and `.env`."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEV_SECRET = "dev-only-insecure-secret-change-me"

SHIPPED_WORKFLOWS = "workflows.shipped"
"""The package of the workflows Baton ships (refund, support, purchase), loaded by name."""


class Settings(BaseSettings):
    """Everything Baton reads from the environment or `.env` (SPEC §5)."""

    model_config = SettingsConfigDict(
        env_prefix="BATON_", env_file=".env", extra="ignore", populate_by_name=True
    )

    database_url: str = "sqlite:///var/baton.db"
    model: Literal["scripted", "azure-openai", "openai", "ollama"] = "scripted"
    secret_key: SecretStr = SecretStr(DEV_SECRET)
    base_url: str = "http://127.0.0.1:8000"
    auth: Literal["local", "easyauth"] = "local"
    host: str = "127.0.0.1"
    port: int = 8000

    azure_openai_endpoint: str | None = Field(None, validation_alias="AZURE_OPENAI_ENDPOINT")
    azure_openai_deployment: str | None = Field(None, validation_alias="AZURE_OPENAI_DEPLOYMENT")
    azure_openai_api_key: SecretStr | None = Field(None, validation_alias="AZURE_OPENAI_API_KEY")
    openai_api_key: SecretStr | None = Field(None, validation_alias="OPENAI_API_KEY")
    openai_base_url: str | None = Field(None, validation_alias="OPENAI_BASE_URL")

    otel_exporter_otlp_endpoint: str | None = Field(
        None, validation_alias="OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    otel_service_name: str = Field("baton", min_length=1, validation_alias="OTEL_SERVICE_NAME")
    applicationinsights_connection_string: SecretStr | None = Field(
        None, validation_alias="APPLICATIONINSIGHTS_CONNECTION_STRING"
    )

    easyauth_groups: dict[str, str] = Field(
        default_factory=dict,
        description="Entra group object id -> Baton team, as a JSON object (BATON_AUTH=easyauth).",
    )
    easyauth_admin_group: str | None = Field(
        None, description="Entra group object id whose members are Baton admins (easyauth)."
    )

    slack_webhook_url: str | None = None
    slack_signing_secret: SecretStr | None = None
    slack_bot_token: SecretStr | None = Field(
        None, description="A bot token (xoxb-…, views:write): Reject asks for a reason in a modal."
    )
    slack_api_url: str = Field(
        "https://slack.com/api/", description="Slack's Web API (tests point it at a stand-in)."
    )
    teams_webhook_url: str | None = Field(
        None, description="A Teams incoming webhook or Workflows URL: cards with signed links."
    )
    teams_app_id: str | None = Field(
        None, description="Baton's bot: its Microsoft app id (the Azure Bot's; the JWT audience)."
    )
    teams_app_password: SecretStr | None = Field(
        None, description="The bot's client secret; unset with an app id: its managed identity."
    )
    teams_tenant_id: str | None = Field(
        None, description="The Entra tenant the bot's app registration lives in (single-tenant)."
    )
    teams_openid_metadata_url: str = Field(
        "https://login.botframework.com/v1/.well-known/openidconfiguration",
        description="Where the Bot Connector's signing keys are found (tests: a stand-in).",
    )
    smtp_url: str | None = None
    webhook_url: str | None = None
    webhook_secret: SecretStr | None = None

    workflows: str = Field(
        "", description="Extra modules that register workflows, comma-separated."
    )
    worker_concurrency: int = Field(4, ge=1, le=64)
    worker_poll_ms: int = Field(500, ge=10)
    job_lease_seconds: float = Field(30.0, gt=0)
    shutdown_grace_seconds: float = Field(
        20.0,
        ge=0,
        description="How long a stopping process lets its drives under way reach their next "
        "commit before it cancels them.",
    )
    log_level: str = "INFO"
    failpoints: str = ""
    bench_postgres_url: str | None = Field(
        None, description="PostgreSQL server for `baton bench` (a database is made per figure)."
    )

    policies: str | None = Field(
        None, description="The policies file (YAML); unset: the rules shipped with Baton."
    )
    openai_model: str = Field(
        "gpt-4o-mini",
        min_length=1,
        validation_alias="OPENAI_MODEL",
        description="BATON_MODEL=openai",
    )
    azure_openai_api_version: str | None = Field(
        None, validation_alias="AZURE_OPENAI_API_VERSION", description="unset: MAF's default"
    )
    ollama_base_url: str = Field(
        "http://127.0.0.1:11434/v1", description="Ollama's OpenAI-compatible endpoint."
    )
    ollama_model: str = Field("llama3.1", min_length=1, description="BATON_MODEL=ollama")
    session_max_age_s: int = Field(
        8 * 3600, ge=60, description="How long a browser sign-in lasts, in seconds."
    )
    session_idle_s: int = Field(
        3600,
        ge=60,
        description="How long a browser sign-in lasts unused, in seconds (live updates of an "
        "open page are not use).",
    )
    signin_max_failures: int = Field(
        5, ge=1, le=1000, description="Failed sign-ins in a row that lock a name for a while."
    )
    signin_lockout_seconds: int = Field(
        300, ge=1, description="How long a locked name waits; also how long a streak is kept."
    )

    # claims, notifications (channels above), and the clock deadlines are measured by
    claim_seconds: float = Field(900.0, gt=0, description="How long a claim is exclusive.")
    max_body_bytes: int = Field(
        262_144, ge=1024, description="The largest request body accepted (413 beyond it)."
    )
    smtp_from: str = "baton@localhost"
    notify_max_attempts: int = Field(6, ge=1, le=50)
    notify_backoff_seconds: float = Field(
        5.0, gt=0, description="First retry delay of a notification; doubles each attempt."
    )
    notify_concurrency: int = Field(
        4,
        ge=1,
        le=64,
        description="Deliveries at once per worker, in slots of their own (drives never wait).",
    )
    notify_timeout_seconds: float = Field(
        10.0,
        gt=0,
        description="The deadline of one delivery attempt as a whole (connect, send, answer).",
    )
    # MCP (`/mcp` and `baton mcp`)
    mcp_max_wait_seconds: float = Field(
        900.0,
        gt=0,
        le=86_400,
        description="The longest an MCP call may wait for a person's answer (its wait_seconds).",
    )
    mcp_token: SecretStr | None = Field(
        None,
        validation_alias="BATON_TOKEN",
        description="`baton mcp` (stdio) only: the API token of whoever the agent asks for.",
    )
    clock_file: str | None = Field(
        None, description="Tests only: a file holding an offset in seconds added to the clock."
    )

    @field_validator("database_url")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        if not value.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise ValueError("BATON_DATABASE_URL must start with sqlite:/// or postgresql://")
        return value

    def workflow_modules(self) -> tuple[str, ...]:
        """The modules whose workflows this Baton runs: the shipped ones, then `BATON_WORKFLOWS`."""
        extra = (m.strip() for m in self.workflows.split(","))
        return (SHIPPED_WORKFLOWS, *(m for m in extra if m))

    def dev_secret_refused(self, host: str) -> bool:
        """Whether serving on `host` must be refused: the development secret beyond loopback.

        Sessions are signed with `BATON_SECRET_KEY`; the default is public (it is in this file),
        so anyone could forge a session on a Baton reachable from other machines.
        """
        if self.secret_key.get_secret_value() != DEV_SECRET:
            return False
        if host == "localhost":
            return False
        try:
            return not ipaddress.ip_address(host).is_loopback
        except ValueError:  # a host name other than localhost: assume it is reachable
            return True
