"""PostgreSQL URLs as hosted providers give them out: libpq parameters such as `sslmode`.

Against the SSL-only PostgreSQL of `.ci/ssl-postgres` (its own CA, a certificate for 127.0.0.1
and localhost; it also listens on 127.0.0.2, which the certificate does not name) and against
the plain one, through `SQLAlchemySession.from_url` and the `turnstore` command.
"""

from __future__ import annotations

import datetime
import json
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("asyncpg")

from sqlalchemy import text

from support.backends import drop_tables
from support.services import SSLPostgres
from turnstore import SessionStorageError
from turnstore.cli import main
from turnstore.extensions.memory import SQLAlchemySession


def _with(url: str, query: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{query}"


def _moved(url: str, host: str) -> str:
    return url.replace("@127.0.0.1:", f"@{host}:", 1)


class Tables:
    """A test's own two tables, dropped afterwards on every server a session created them on."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:10]
        self.names = (f"ssl{tag}_s", f"ssl{tag}_m")
        self.used_on: set[str] = set()


@pytest.fixture
async def tables() -> AsyncIterator[Tables]:
    made = Tables()
    yield made
    from turnstore.memory.sqlalchemy.engine import create_engine_for_url

    for url in made.used_on:
        engine = create_engine_for_url(url)
        try:
            await drop_tables(engine, made.names)
        finally:
            await engine.dispose()


async def _round_trip(url: str, tables: Tables) -> tuple[bool, str, str]:
    """Write and read an item through a session on `url`; return what the connection was."""
    session = SQLAlchemySession.from_url(
        "ssl-test",
        url,
        create_tables=True,
        sessions_table=tables.names[0],
        messages_table=tables.names[1],
    )
    try:
        await session.add_items([{"role": "user", "content": "hello over TLS?"}])
        tables.used_on.add(url)
        assert await session.get_items() == [{"role": "user", "content": "hello over TLS?"}]
        async with session.engine.connect() as conn:
            row = (
                await conn.execute(
                    text(
                        "SELECT ssl, current_setting('application_name'), "
                        "current_setting('search_path') "
                        "FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
                    )
                )
            ).one()
        return bool(row[0]), str(row[1]), str(row[2])
    finally:
        await session.aclose()


@pytest.fixture
def ssl_url(ssl_postgres: SSLPostgres) -> str:
    return ssl_postgres.url


@pytest.mark.parametrize("mode", ["require", "allow", "prefer"])
async def test_sslmodes_that_do_not_verify_connect_over_tls(
    ssl_url: str, tables: Tables, mode: str
) -> None:
    is_ssl, _, _ = await _round_trip(_with(ssl_url, f"sslmode={mode}"), tables)
    assert is_ssl


@pytest.mark.parametrize("mode", ["verify-ca", "verify-full"])
async def test_verifying_sslmodes_accept_the_server_signed_by_sslrootcert(
    ssl_url: str, ssl_postgres: SSLPostgres, tables: Tables, mode: str
) -> None:
    url = _with(ssl_url, f"sslmode={mode}&sslrootcert={quote(ssl_postgres.ca)}")
    is_ssl, _, _ = await _round_trip(url, tables)
    assert is_ssl


async def test_verify_full_refuses_a_host_the_certificate_does_not_name(
    ssl_url: str, ssl_postgres: SSLPostgres, tables: Tables
) -> None:
    query = f"sslmode=verify-full&sslrootcert={quote(ssl_postgres.ca)}"
    wrong_host = _with(_moved(ssl_url, "127.0.0.2"), query)
    with pytest.raises(SessionStorageError, match=re.escape("not valid for '127.0.0.2'")):
        await _round_trip(wrong_host, tables)
    # verify-ca checks the CA only: the same host is accepted.
    verify_ca = _with(_moved(ssl_url, "127.0.0.2"), query.replace("verify-full", "verify-ca"))
    assert (await _round_trip(verify_ca, tables))[0]


async def test_verify_full_refuses_a_server_signed_by_another_ca(
    ssl_url: str, tables: Tables, tmp_path: Path
) -> None:
    other_ca = tmp_path / "other-ca.crt"
    other_ca.write_bytes(_self_signed_ca())
    url = _with(ssl_url, f"sslmode=verify-full&sslrootcert={quote(str(other_ca))}")
    with pytest.raises(SessionStorageError, match="certificate verify failed"):
        await _round_trip(url, tables)


async def test_sslmode_disable_really_disables_tls(ssl_url: str, tables: Tables) -> None:
    # The SSL server rejects plain connections: disable must not have sneaked TLS in.
    with pytest.raises(SessionStorageError, match="no encryption"):
        await _round_trip(_with(ssl_url, "sslmode=disable"), tables)


@pytest.mark.parametrize("mode", ["prefer", "allow", "disable"])
async def test_sslmodes_that_fall_back_work_on_a_server_without_ssl(
    postgres_url: str, tables: Tables, mode: str
) -> None:
    is_ssl, _, _ = await _round_trip(_with(postgres_url, f"sslmode={mode}"), tables)
    assert not is_ssl


async def test_application_name_options_and_connect_timeout_reach_the_server(
    postgres_url: str, tables: Tables
) -> None:
    query = "application_name=nightly-job&options=-c%20search_path%3Dpublic&connect_timeout=10"
    _, name, search_path = await _round_trip(_with(postgres_url, query), tables)
    assert (name, search_path) == ("nightly-job", "public")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("sslmode=on", "sslmode must be one of disable, allow, prefer, require, verify-ca"),
        ("gssencmode=disable", "gssencmode is a libpq parameter that asyncpg"),
        ("sslsni=1", "sslsni is a libpq parameter that asyncpg"),
        ("colour=blue", "colour is neither a libpq parameter"),
        ("sslmode=require&ssl=true", "both sslmode"),
        ("connect_timeout=soon", "connect_timeout must be a whole number of seconds"),
        ("sslmode=require&sslmode=disable", "sslmode is given 2 times"),
        ("target_session_attrs=writable", "target_session_attrs must be one of"),
    ],
)
def test_a_url_parameter_asyncpg_cannot_honour_is_refused_up_front(
    query: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        SQLAlchemySession.from_url("s", f"postgresql://u@127.0.0.1:1/db?{query}")


def test_the_cli_exports_and_imports_over_verify_full(
    ssl_url: str,
    ssl_postgres: SSLPostgres,
    tables: Tables,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = _with(ssl_url, f"sslmode=verify-full&sslrootcert={quote(ssl_postgres.ca)}")
    url = url.replace("postgresql+asyncpg://", "postgresql://", 1)  # as a provider hands it out
    tables.used_on.add(_with(ssl_url, "sslmode=require"))
    names = ["--sessions-table", tables.names[0], "--messages-table", tables.names[1]]
    storage = ["--db", url, *names]
    export = tmp_path / "in.jsonl"
    record = {"session_id": "hosted", "created_at": None, "item": {"role": "user", "content": "x"}}
    export.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert main([*storage, "import", str(export)]) == 0, capsys.readouterr().err
    assert main([*storage, "show", "hosted"]) == 0
    assert json.loads(capsys.readouterr().out) == record["item"]
    wrong = _moved(url, "127.0.0.2")
    code = main(["--db", wrong, *names, "stats"])
    err = capsys.readouterr().err
    assert code == 1
    assert "certificate" in err
    assert "127.0.0.2" in err
    assert "Traceback" not in err


def _self_signed_ca() -> bytes:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "another CA")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)
