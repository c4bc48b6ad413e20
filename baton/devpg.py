"""A throwaway local PostgreSQL server, for development, tests and benchmarks.

It runs the binaries of Debian's `postgresql` package (`/usr/lib/postgresql/<version>/bin`, or
`BATON_PG_BIN`) on a data directory of its own, listening on loopback only with trust auth: never
a production setup. PostgreSQL refuses to run as root, so as root the server runs as the
`postgres` user the package creates.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from baton.errors import StoreError


def bin_dir() -> Path:
    """The folder of `initdb`, `pg_ctl` and `postgres`, newest version first."""
    given = os.environ.get("BATON_PG_BIN")
    if given:
        return Path(given)
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
    )
    if versions:
        return Path(versions[-1])
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    raise StoreError(
        "no PostgreSQL server binaries: install Debian's postgresql package "
        "(apt-get install postgresql) or set BATON_PG_BIN"
    )


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# A test server whose data is thrown away with it: nothing is flushed to disk at each commit. A
# crash of PostgreSQL itself could lose or corrupt data; no test crashes it (tests kill Baton's
# processes, whose commits PostgreSQL has by then whatever these settings say).
THROWAWAY = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")


class LocalPostgres:
    """One server on `data_dir`, started with `start()` and stopped with `stop()`.

    `durable=False` starts it with `THROWAWAY` settings: for tests, never for data to keep.
    """

    def __init__(self, data_dir: Path, *, port: int | None = None, durable: bool = True) -> None:
        self.data_dir = data_dir.resolve()
        self.port = port or free_port()
        self.durable = durable
        self._as_root = os.geteuid() == 0
        self._bin = bin_dir()

    @property
    def user(self) -> str:
        """The database superuser, named after the account the server runs as."""
        return "postgres" if self._as_root else os.environ.get("USER", "postgres")

    def url(self, database: str = "postgres") -> str:
        """A `postgresql://` URL for a database on this server."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def _cmd(self, *args: str) -> list[str]:
        prefix = ["runuser", "-u", "postgres", "--"] if self._as_root else []
        return [*prefix, *args]

    def start(self) -> None:
        """Create the cluster if missing, then start the server and wait until it accepts."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self._as_root:
            shutil.chown(self.data_dir, "postgres", "postgres")
            self.data_dir.chmod(0o700)
        if not (self.data_dir / "PG_VERSION").exists():
            made = subprocess.run(
                self._cmd(
                    str(self._bin / "initdb"),
                    "-D",
                    str(self.data_dir),
                    "-U",
                    self.user,
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--no-instructions",
                ),
                capture_output=True,
                text=True,
            )
            if made.returncode != 0:
                raise StoreError(f"initdb failed: {made.stderr.strip() or made.stdout.strip()}")
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data_dir} "
            "-c max_connections=300 -c shared_buffers=128MB"
        )
        if not self.durable:
            options += "".join(f" -c {setting}" for setting in THROWAWAY)
        done = subprocess.run(
            self._cmd(
                str(self._bin / "pg_ctl"),
                "-D",
                str(self.data_dir),
                "-l",
                str(self.data_dir / "server.log"),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "start",
            ),
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            log = (self.data_dir / "server.log").read_text(errors="replace")[-2000:]
            raise StoreError(f"PostgreSQL did not start: {done.stderr.strip()}\n{log}")
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=1),
            ):
                return
            time.sleep(0.05)
        raise StoreError(f"PostgreSQL on port {self.port} did not accept connections")

    def stop(self) -> None:
        """Stop the server (fast shutdown); a stopped server stays stopped."""
        subprocess.run(
            self._cmd(str(self._bin / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "stop"),
            capture_output=True,
        )


@contextlib.contextmanager
def running(
    data_dir: Path | None = None, *, port: int | None = None, durable: bool = True
) -> Iterator[LocalPostgres]:
    """A server for the length of a `with` block, on `data_dir` or a new temporary directory.

    The temporary directory is made under the system's temporary folder, which the `postgres`
    user can reach when the caller is root (pytest's own temporary folders are private).
    """
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="baton-pg-"))
            Path(scratch).chmod(0o755)
            data_dir = Path(scratch) / "data"
        server = LocalPostgres(data_dir, port=port, durable=durable)
        server.start()
        stack.callback(server.stop)
        yield server


async def create_database(server_url: str, name: str, *, template: str | None = None) -> str:
    """Create a database on the server of `server_url` (any of its databases); its URL.

    With `template`, the new database is a copy of that one (which nobody may be connected to).
    """
    import asyncpg

    copy = f' TEMPLATE "{template}"' if template else ""
    conn = await asyncpg.connect(server_url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"{copy}')
    finally:
        await conn.close()
    return server_url.rsplit("/", 1)[0] + f"/{name}"


async def drop_database(server_url: str, name: str) -> None:
    """Drop a database of the server of `server_url`, ending the sessions still connected to it."""
    import asyncpg

    conn = await asyncpg.connect(server_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def ensure_database(server_url: str, name: str) -> str:
    """The URL of database `name` on the server of `server_url`, created if missing."""
    import asyncpg

    conn = await asyncpg.connect(server_url)
    try:
        exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
    finally:
        await conn.close()
    if exists:
        return server_url.rsplit("/", 1)[0] + f"/{name}"
    return await create_database(server_url, name)


def main(argv: list[str] | None = None) -> int:
    """`python -m baton.devpg start|stop [--data DIR] [--port N]`: a local server for `make`."""
    import argparse
    import asyncio

    parser = argparse.ArgumentParser(prog="python -m baton.devpg", description=__doc__)
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("--data", type=Path, default=Path("var/postgres"))
    parser.add_argument("--port", type=int, default=5433)
    args = parser.parse_args(argv)
    server = LocalPostgres(args.data, port=args.port)
    if args.action == "stop":
        server.stop()
        sys.stdout.write(f"stopped PostgreSQL in {server.data_dir}\n")
        return 0
    try:
        with socket.create_connection(("127.0.0.1", args.port), timeout=1):
            sys.stdout.write(f"something already listens on 127.0.0.1:{args.port}; using it\n")
    except OSError:
        server.start()
    url = asyncio.run(ensure_database(server.url(), "baton"))
    sys.stdout.write(f"PostgreSQL ready in {server.data_dir}\nBATON_DATABASE_URL={url}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
