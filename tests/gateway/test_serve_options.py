"""``serve`` terminating TLS itself, and start-up refusals that are one clear line, not a traceback:
an unreachable PostgreSQL, a bad certificate, and stdio when tokens are the only guard."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from extras import require_extra
from meta_memory.access.config import hash_token
from support import start_gateway, write_config

pytestmark = pytest.mark.gateway

TOKEN = "only-guard-token-0001"
TOKENS_ONLY = f'[access]\nenabled = false\n\n[[access.tokens]]\nsha256 = "{hash_token(TOKEN)}"\nprincipal = "ann"\n'


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A throw-away certificate for 127.0.0.1 and localhost, and its key (PEM files)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "meta-memory test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def serve_once(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def one_line_refusal(proc: subprocess.CompletedProcess[str], needle: str) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("meta-memory: ") and needle in lines[0], lines[0]
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_serve_terminates_tls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the fixture's health probe trusts the test certificate
    gw = start_gateway(tmp_path / "state", "--ssl-certfile", str(cert), "--ssl-keyfile", str(key))
    try:
        assert gw.url.startswith("https://127.0.0.1:")
        trust = ssl.create_default_context(cafile=str(cert))
        payload = {"jsonrpc": "2.0", "id": 1, "method": "meta/agent_memory/remember",
                   "params": {"identity": "lead:main", "title": "Over TLS", "body": "encrypted in transit"}}
        resp = httpx.post(gw.url + "/rpc", json=payload, verify=trust, timeout=30)
        assert resp.status_code == 200 and "result" in resp.json()
        # the own origin of a TLS gateway is https://...
        resp = httpx.post(gw.url + "/rpc", json=payload, headers={"Origin": gw.url}, verify=trust, timeout=30)
        assert resp.status_code == 200
        resp = httpx.post(gw.url + "/rpc", json=payload, headers={"Origin": gw.url.replace("https", "http")},
                          verify=trust, timeout=30)
        assert resp.status_code == 403
        # plain HTTP to the TLS port gets no answer from the application
        with pytest.raises(httpx.HTTPError):
            httpx.post(gw.url.replace("https://", "http://") + "/rpc", json=payload, timeout=10)
        assert httpx.get(gw.url + "/console/", verify=trust, timeout=30).status_code == 200
        # the command line names the likely cause: the gateway serves HTTPS (not "start a gateway")
        plain = gw.url.replace("https://", "http://")
        shown = subprocess.run([sys.executable, "-m", "meta_memory.cli", "list", "--identity", "lead:main",
                                "--url", plain], capture_output=True, text=True, timeout=60)
        assert shown.returncode == 1, shown
        assert f"the gateway may be serving HTTPS: try {gw.url}" in shown.stderr, shown.stderr
        assert "meta-memory serve" not in shown.stderr, shown.stderr
        # a certificate the client does not trust: the hint is SSL_CERT_FILE, not "start a gateway"
        untrusting = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
        for command in (["list", "--identity", "lead:main"], ["export", "-o", str(tmp_path / "x.jsonl")],
                        ["backup", str(tmp_path / "copy")]):
            shown = subprocess.run([sys.executable, "-m", "meta_memory.cli", *command, "--url", gw.url],
                                   capture_output=True, text=True, timeout=60, env=untrusting)
            assert shown.returncode == 1, shown
            said = " ".join(shown.stderr.split())
            assert "certificate this client does not trust" in said and "SSL_CERT_FILE" in said, said
            assert "meta-memory serve" not in said, said
    finally:
        gw.stop()


def test_tls_options_go_together_and_a_bad_certificate_is_one_line(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    state = str(tmp_path / "state")
    proc = serve_once("serve", "--port", "0", "--state-dir", state, "--ssl-certfile", str(cert))
    assert proc.returncode == 2 and "--ssl-certfile and --ssl-keyfile go together" in proc.stderr
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    proc = serve_once("serve", "--port", "0", "--state-dir", state, "--ssl-certfile", str(garbage),
                      "--ssl-keyfile", str(key))
    one_line_refusal(proc, "cannot load the TLS certificate or key")


def test_a_tls_refusal_names_the_option_and_what_is_wrong(tmp_path: Path) -> None:
    """Before, every bad pair said only "cannot load the TLS certificate or key: [SSL] PEM lib": not which
    file, nor why."""
    cert, key = self_signed(tmp_path)
    (tmp_path / "other").mkdir()
    _, other_key = self_signed(tmp_path / "other")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    state = str(tmp_path / "state")

    def refusal(certfile: Path, keyfile: Path) -> str:
        proc = serve_once("serve", "--port", "0", "--state-dir", state, "--ssl-certfile", str(certfile),
                          "--ssl-keyfile", str(keyfile))
        return one_line_refusal(proc, "cannot load the TLS certificate or key")

    said = refusal(garbage, key)
    assert f"--ssl-certfile {garbage}" in said and "holds no PEM certificate" in said, said
    said = refusal(cert, garbage)
    assert f"--ssl-keyfile {garbage}" in said and "holds no PEM private key" in said, said
    said = refusal(key, cert)  # swapped
    assert f"--ssl-certfile {key}" in said and "holds no PEM certificate" in said, said
    said = refusal(cert, other_key)
    assert "--ssl-keyfile" in said and "does not belong to the certificate" in said, said


@pytest.mark.parametrize("host", ["", "   ", " 127.0.0.1"])
def test_a_blank_host_is_a_usage_error_not_every_address(tmp_path: Path, host: str) -> None:
    """``--host ""`` (say ``--host "$HOST"`` with the variable unset) listened on every address, printed
    ``listening on http://:PORT`` and warned of listening "on  with no [access] configuration"."""
    state = tmp_path / "state"
    proc = serve_once("serve", "--host", host, "--port", "0", "--state-dir", str(state))
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "--host" in proc.stderr and "0.0.0.0" in proc.stderr, proc.stderr
    assert "listening on" not in proc.stdout, proc.stdout
    assert not state.exists()


def test_a_refused_certificate_leaves_no_state_directory(tmp_path: Path) -> None:
    """A start refused for its certificate, like one refused for its configuration or its port, creates
    nothing: before, the state directory (databases, lock file) was made first and left behind."""
    cert, key = self_signed(tmp_path)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    for certfile, keyfile in ((garbage, key), (cert, garbage)):
        state = tmp_path / "state"
        proc = serve_once("serve", "--port", "0", "--state-dir", str(state), "--ssl-certfile", str(certfile),
                          "--ssl-keyfile", str(keyfile))
        one_line_refusal(proc, "cannot load the TLS certificate or key")
        assert not state.exists(), sorted(p.name for p in state.iterdir())


@pytest.mark.postgres
def test_unreachable_postgres_is_a_one_line_start_up_error(tmp_path: Path) -> None:
    require_extra("postgres", "psycopg")
    cfg = write_config(tmp_path / "pg.toml", '[agent_memory]\nstore = "postgres"\n'
                                             'dsn = "postgresql://nobody:hunter2-secret@127.0.0.1:1/test?connect_timeout=2"\n')
    for command in (["serve", "--port", "0"], ["gateway", "--stdio"]):
        proc = serve_once(*command, "--state-dir", str(tmp_path / "state"), "--config", str(cfg))
        line = one_line_refusal(proc, "cannot start")
        assert "agent memory database" in line
        assert "hunter2-secret" not in proc.stderr


def stdio(state: Path, cfg: Path, messages: list[Any], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", "gateway", "--stdio", "--state-dir", str(state),
                           "--config", str(cfg)], input="".join(json.dumps(m) + "\n" for m in messages),
                          capture_output=True, text=True, timeout=60, env={**os.environ, **env})


def test_stdio_when_tokens_are_the_only_guard(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "tokens.toml", TOKENS_ONLY)
    status = {"jsonrpc": "2.0", "id": 1, "method": "meta/capabilities"}
    env_without = {k: v for k, v in os.environ.items() if k != "META_MEMORY_TOKEN"}
    proc = subprocess.run([sys.executable, "-m", "meta_memory.cli", "gateway", "--stdio", "--state-dir",
                           str(tmp_path / "s"), "--config", str(cfg)], input=json.dumps(status) + "\n",
                          capture_output=True, text=True, timeout=60, env=env_without)
    line = one_line_refusal(proc, "stdio cannot serve")
    assert "META_MEMORY_TOKEN" in line and proc.stdout == ""
    proc = stdio(tmp_path / "s", cfg, [status], {"META_MEMORY_TOKEN": "wrong-token"})
    one_line_refusal(proc, "stdio cannot serve")
    assert "wrong-token" not in proc.stderr
    proc = stdio(tmp_path / "s", cfg, [status], {"META_MEMORY_TOKEN": TOKEN})
    assert proc.returncode == 0, proc.stderr
    assert "result" in json.loads(proc.stdout.splitlines()[0])


def test_a_port_in_use_is_refused_before_the_state_directory_is_made(tmp_path: Path, gateway: Any) -> None:
    """A gateway that cannot listen leaves nothing behind: no new state directory, no lock file."""
    port = gateway.url.rsplit(":", 1)[1]
    state = tmp_path / "never-made"
    proc = serve_once("serve", "--port", port, "--state-dir", str(state))
    one_line_refusal(proc, f"cannot listen on 127.0.0.1:{port}")
    assert "Address already in use" in proc.stderr
    assert not state.exists()
