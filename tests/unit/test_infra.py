"""The deployment's wiring checked against the code it deploys: a drift fails here.

Neither a container engine nor the Bicep CLI runs on the machines these tests run on, so the files
in `infra/`, `azure.yaml` and `.env.example` are read as text: every setting `Settings` reads is
listed in `.env.example` and set on the apps in the Bicep (or named there as deliberately not set,
with why); the image's command line and the apps' arguments are real `baton` verbs and options;
the health check and probes ask a route the app serves; `azure.yaml`, the parameters file and the
modules name things that exist.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
import yaml
from pydantic import AliasChoices

from baton.cli import main
from baton.settings import Settings
from tests.harness import Server

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
MAIN_BICEP = INFRA / "main.bicep"
APPS_BICEP = INFRA / "modules" / "apps.bicep"
DOCKERFILE = INFRA / "Dockerfile"

# Settings only the web process reads (who is calling); the worker needs every other one.
WEB_ONLY = {
    "BATON_AUTH",
    "BATON_EASYAUTH_GROUPS",
    "BATON_EASYAUTH_ADMIN_GROUP",
    "BATON_SESSION_MAX_AGE_S",
    "BATON_SESSION_IDLE_S",
    "BATON_SIGNIN_MAX_FAILURES",
    "BATON_SIGNIN_LOCKOUT_SECONDS",
    "BATON_MCP_MAX_WAIT_SECONDS",
}
# Set on the apps for libraries, not read by `Settings`.
LIBRARY_ENV = {"AZURE_CLIENT_ID"}

_TOP_LEVEL = re.compile(r"^(?:var|param|resource|module|output|targetScope|type|func|@|//)\b|^@")


def settings_env_names() -> set[str]:
    """Each environment variable `Settings` reads: its prefix and field name, or its alias."""
    prefix = str(Settings.model_config.get("env_prefix", ""))
    names = set()
    for field_name, field in Settings.model_fields.items():
        alias = field.validation_alias
        if alias is None:
            names.add(f"{prefix}{field_name}".upper())
        elif isinstance(alias, str):
            names.add(alias)
        elif isinstance(alias, AliasChoices):
            names.update(str(choice) for choice in alias.choices)
        else:
            raise AssertionError(f"Settings.{field_name}: an alias this test cannot read: {alias}")
    return names


def top_level_blocks(text: str, keyword: str) -> dict[str, str]:
    """`keyword NAME …` statements of a Bicep file by name, each up to the next statement."""
    blocks: dict[str, str] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        found = re.match(rf"{keyword} (\w+)\b", line)
        if not found:
            continue
        end = next((j for j in range(i + 1, len(lines)) if _TOP_LEVEL.match(lines[j])), len(lines))
        blocks[found.group(1)] = "\n".join(lines[i:end])
    return blocks


def env_names(blocks: dict[str, str], var: str) -> set[str]:
    """The environment variable names an `…Env` var sets, through the vars it concatenates."""
    block = blocks[var]
    names = set(re.findall(r"name:\s*'([A-Z][A-Z0-9_]*)'", block))
    for ref in set(re.findall(r"\b(\w+Env)\b", block)) & set(blocks) - {var}:
        names |= env_names(blocks, ref)
    return names


def app_env(text: str) -> dict[str, set[str]]:
    """Per azd service name, the environment variables its container app sets."""
    variables = top_level_blocks(text, "var")
    apps = {}
    for block in top_level_blocks(text, "resource").values():
        if "'Microsoft.App/containerApps@" not in block.splitlines()[0]:
            continue
        service = re.search(r"'azd-service-name':\s*'(\w+)'", block)
        env = re.search(r"^\s+env:\s*(\w+)\s*$", block, re.M)
        assert service, f"a container app without an azd-service-name tag:\n{block}"
        assert env, f"a container app whose env is not one var:\n{block}"
        apps[service.group(1)] = env_names(variables, env.group(1))
    return apps


def not_set(text: str) -> dict[str, str]:
    """The settings the Bicep says it does not set, with its reason for each."""
    return dict(re.findall(r"^// not set: ([A-Z][A-Z0-9_]*): (.*)$", text, re.M))


def bicep_params(path: Path) -> dict[str, bool]:
    """Each `param` of a Bicep file, and whether it has a default."""
    found = re.findall(r"^param (\w+) [\w.]+( =)?", path.read_text(), re.M)
    return {name: bool(default) for name, default in found}


def module_calls(path: Path) -> list[tuple[Path, set[str]]]:
    """Each `module … 'file'` a Bicep file deploys, with the parameter names it passes."""
    text = path.read_text()
    calls = []
    for found in re.finditer(r"^module \w+ '([^']+)' = (?:if \([^\n]*\) )?\{", text, re.M):
        body = _braced(text, found.end() - 1)
        params = re.search(r"\n  params: \{", body)
        assert params, f"{found.group(0)} passes no params"
        passed = _braced(body, params.end() - 1)
        names = set(re.findall(r"^    (\w+):", passed, re.M))
        calls.append(((path.parent / found.group(1)).resolve(), names))
    return calls


def _braced(text: str, start: int) -> str:
    """The text from the `{` at `start` to its matching `}`."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start : i + 1]
    raise AssertionError(f"unbalanced braces from {text[start : start + 60]!r}")


def cli_params(args: list[str]) -> dict[str, object]:
    """Parse `baton ARGS` as the CLI would, without running it; the command's parameters."""
    name, *rest = args
    command = main.get_command(click.Context(main), name)
    assert command is not None, f"`baton {name}` is not a command of baton.cli"
    with command.make_context(name, rest) as ctx:
        return dict(ctx.params)


def dockerfile_json(instruction: str) -> list[str]:
    found = re.search(rf"^{instruction} (\[.*\])$", DOCKERFILE.read_text(), re.M)
    assert found, f"no exec-form {instruction} in {DOCKERFILE}"
    value: list[str] = json.loads(found.group(1))
    return value


def ingress_port() -> int:
    """The port the web app's ingress targets (`var port` of apps.bicep)."""
    found = re.search(r"^var port = (\d+)$", APPS_BICEP.read_text(), re.M)
    assert found, "apps.bicep declares no port"
    return int(found.group(1))


async def health_statuses(paths: set[str], tmp_path: Path) -> dict[str, int]:
    """What `baton serve --no-worker` (a child process, on a new file) answers on `paths`."""
    db_url = f"sqlite:///{tmp_path / 'baton.db'}"
    server = Server(db_url, {}, tmp_path / "serve.log", {}, ["--no-worker"])
    await server.start()
    try:
        client = server.anonymous()
        return {path: (await client.get(path)).status_code for path in paths}
    finally:
        await server.stop()


# .env.example ---------------------------------------------------------------------------------


def test_env_example_lists_every_setting() -> None:
    listed = set(re.findall(r"^([A-Z][A-Z0-9_]*)=", (ROOT / ".env.example").read_text(), re.M))
    wanted = settings_env_names()

    assert {"BATON_DATABASE_URL", "OPENAI_API_KEY", "OTEL_SERVICE_NAME"} <= wanted
    assert wanted - listed == set(), "settings missing from .env.example"
    assert listed - wanted == set(), ".env.example lists what Settings does not read"


# the Bicep --------------------------------------------------------------------------------------


def test_every_setting_is_set_on_the_apps_or_said_why_not() -> None:
    text = APPS_BICEP.read_text()
    apps = app_env(text)
    unset = not_set(text)
    wanted = settings_env_names()

    assert set(apps) == {"web", "worker"}
    assert {"BATON_DATABASE_URL", "BATON_SECRET_KEY"} <= apps["web"] & apps["worker"]
    for name, reason in unset.items():
        assert name in wanted, f"{name} is listed as not set, but Settings does not read it"
        assert len(reason.split()) >= 3, f"{name}: say why it is not set"
        assert name not in apps["web"] | apps["worker"], f"{name} is set and listed as not set"
    for name in wanted - set(unset):
        assert name in apps["web"], f"{name} is not set on the web app (nor listed as not set)"
        if name not in WEB_ONLY:
            assert name in apps["worker"], f"the worker reads {name} but it is not set there"
    for service, names in apps.items():
        assert names - wanted - LIBRARY_ENV == set(), f"{service} sets what nothing reads"
        assert names >= LIBRARY_ENV, f"{service}: DefaultAzureCredential needs AZURE_CLIENT_ID"


def test_every_secret_an_app_reads_is_declared() -> None:
    text = APPS_BICEP.read_text()
    variables = top_level_blocks(text, "var")
    declared = set(re.findall(r"name:\s*'([a-z0-9-]+)'", variables["sharedSecrets"]))
    used = set(re.findall(r"secretRef:\s*'([a-z0-9-]+)'", text))

    assert {"database-url", "secret-key"} <= used
    assert used - declared == set()
    assert "env: webEnv" in text
    assert "secrets: webSecrets" in text
    assert "sharedSecrets" in variables["webSecrets"]


def test_modules_exist_and_get_the_parameters_they_declare() -> None:
    calls = module_calls(MAIN_BICEP) + module_calls(APPS_BICEP)

    assert len(calls) >= 8
    for module, passed in calls:
        assert module.is_file(), f"no module {module}"
        declared = bicep_params(module)
        assert passed - set(declared) == set(), f"{module.name} has no such params"
        required = {name for name, has_default in declared.items() if not has_default}
        assert required - passed == set(), f"{module.name} is not given its required params"


def test_parameters_file_and_readme_cover_main_bicep() -> None:
    declared = bicep_params(MAIN_BICEP)
    given = json.loads((INFRA / "main.parameters.json").read_text())["parameters"]
    generated = set(
        re.findall(r"type: 'generate'\n(?:(?!param ).*\n)*?param (\w+)", MAIN_BICEP.read_text())
    )
    readme = (INFRA / "README.md").read_text()

    assert {"postgresAdminPassword", "secretKey"} <= generated
    assert set(given) - set(declared) == set(), "parameters the Bicep does not declare"
    for name, has_default in declared.items():
        assert has_default or name in given or name in generated, f"{name} has no value"
        assert f"`{name}`" in readme, f"infra/README.md does not document {name}"


# the image ------------------------------------------------------------------------------------


def test_image_runs_baton_serve_without_a_worker_on_the_ingress_port() -> None:
    port = ingress_port()

    assert dockerfile_json("ENTRYPOINT") == ["baton"]
    params = cli_params(dockerfile_json("CMD"))
    assert params == {"host": "0.0.0.0", "port": port, "no_worker": True}
    assert re.search(rf"^EXPOSE {port}$", DOCKERFILE.read_text(), re.M)
    assert re.search(r"^USER (?!root|0\b)\S+", DOCKERFILE.read_text(), re.M), "runs as root"
    assert "targetPort: port" in APPS_BICEP.read_text()


def test_the_apps_arguments_are_baton_commands() -> None:
    text = APPS_BICEP.read_text()
    port = str(ingress_port())
    argv = {
        name: [a.strip().strip("'") for a in args.replace("string(port)", port).split(",")]
        for name, args in re.findall(r"name: '(\w+)'\n\s+image: .*\n\s+args: \[(.*)\]", text)
    }

    assert set(argv) == {"web", "worker"}
    assert cli_params(argv["web"]) == {"host": "0.0.0.0", "port": int(port), "no_worker": True}
    assert cli_params(argv["worker"]) == {}
    assert argv["worker"] == ["worker"]
    with pytest.raises(click.UsageError):
        cli_params(["serve", "--no-such-option"])


async def test_health_check_and_probes_ask_a_route_the_app_serves(tmp_path: Path) -> None:
    healthcheck = re.search(r"^HEALTHCHECK .*\n(?:.*\\\n)*.*$", DOCKERFILE.read_text(), re.M)
    assert healthcheck
    url = re.search(r"'http://127\.0\.0\.1:(\d+)(/[^']*)'", healthcheck.group(0))
    assert url, healthcheck.group(0)
    probes = set(re.findall(r"path: '(/[^']*)'", APPS_BICEP.read_text()))
    assert probes

    answers = await health_statuses({url.group(2), *probes, "/no-such-route"}, tmp_path)

    assert answers.pop("/no-such-route") == 404
    assert answers == dict.fromkeys({url.group(2), *probes}, 200)
    assert int(url.group(1)) == cli_params(dockerfile_json("CMD"))["port"]
    # Container Apps refuses probes outside these ranges.
    for field, low, high in [
        ("failureThreshold", 1, 10),
        ("periodSeconds", 1, 240),
        ("initialDelaySeconds", 0, 60),
    ]:
        values = [int(v) for v in re.findall(rf"{field}: (\d+)", APPS_BICEP.read_text())]
        assert values, field
        assert all(low <= v <= high for v in values), (field, values)


# azure.yaml -----------------------------------------------------------------------------------


def test_azure_yaml_deploys_both_apps_from_the_dockerfile() -> None:
    spec = yaml.safe_load((ROOT / "azure.yaml").read_text())
    tags = re.findall(r"'azd-service-name':\s*'(\w+)'", APPS_BICEP.read_text())

    assert spec["infra"]["provider"] == "bicep"
    assert (ROOT / spec["infra"]["path"] / f"{spec['infra']['module']}.bicep") == MAIN_BICEP
    assert set(spec["services"]) == {"web", "worker"}
    assert sorted(tags) == sorted(spec["services"])
    for name, service in spec["services"].items():
        project = ROOT / service["project"]
        assert service["host"] == "containerapp", name
        assert (project / service["docker"]["path"]).resolve() == DOCKERFILE, name
        assert (project / service["docker"]["context"]).resolve() == ROOT, name
        assert (project / "pyproject.toml").is_file(), name
