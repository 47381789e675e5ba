"""Test support: a real gateway subprocess on a free port, JSON-RPC clients, an embedded runtime's RPC
counts, the access table of a config file, read-only access to a realm's SQLite file, and a local HTTP
server for fake endpoints."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from meta_memory.access.config import hash_token
from meta_memory.storage.layout import encode_path_segment

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The environment variable naming the LoCoMo data file (``locomo-dev.json``; not in the repository).
LOCOMO_ENV = "META_MEMORY_LOCOMO"


def locomo_data() -> Path | None:
    """The LoCoMo data file ``$META_MEMORY_LOCOMO`` names when it is a file, else ``None`` (the tests
    that read it then skip, saying so)."""
    named = os.environ.get(LOCOMO_ENV, "").strip()
    return Path(named) if named and Path(named).is_file() else None


def load_example(name: str) -> Any:
    """The module of ``examples/<name>.py`` imported from its file as ``example_<name>`` (examples are scripts, not a
    package; kept in ``sys.modules`` so its dataclasses resolve their annotations)."""
    module_name = f"example_{name}"
    spec = importlib.util.spec_from_file_location(module_name, REPO_ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def load_benchmark(name: str, module_name: str) -> Any:
    """Import ``benchmarks/<name>.py`` as ``module_name`` (kept in ``sys.modules`` so its dataclasses
    resolve their annotations) without leaving ``benchmarks/`` on ``sys.path``: left there, its
    ``agent_memory.py`` and ``recall.py`` would shadow the test packages of those names in every
    process spawned later in the run."""
    spec = importlib.util.spec_from_file_location(module_name, REPO_ROOT / "benchmarks" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    saved = list(sys.path)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    return module


def cache_bytecode_outside_the_tree(environ: Any, prefix: Callable[[], Path]) -> bool:
    """With ``PYTHONDONTWRITEBYTECODE`` set in ``environ`` (a mutable mapping: ``os.environ``) and no
    ``PYTHONPYCACHEPREFIX``, every gateway and command a test starts (over a thousand processes a run) compiles
    the package from source again, about half a CPU second each: make them cache their bytecode under
    the directory ``prefix()`` names (created) instead, which keeps the source tree free of it, as the setting asks. Returns whether
    ``environ`` was changed."""
    if not environ.get("PYTHONDONTWRITEBYTECODE") or environ.get("PYTHONPYCACHEPREFIX"):
        return False
    where = prefix()
    where.mkdir(parents=True, exist_ok=True)
    environ["PYTHONPYCACHEPREFIX"] = str(where)
    del environ["PYTHONDONTWRITEBYTECODE"]
    return True


def result_of(body: dict[str, Any]) -> Any:
    """A JSON-RPC response's ``result`` (fails the test when it is an error)."""
    assert "error" not in body, body
    return body["result"]


def error_of(body: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC response's ``error`` (fails the test when it is a result)."""
    assert "error" in body, body
    return body["error"]


def rpc_calls(handle: Any, method: str) -> int:
    """How many calls of ``method`` the embedded runtime behind ``handle`` has answered, refused or failed, as
    its metrics count them (``meta_memory_rpc_calls_total{method}``, what ``/metrics`` serves)."""
    from prometheus_client.parser import text_string_to_metric_families

    text = handle.runtime.observability.metrics.render().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "meta_memory_rpc_calls_total" and sample.labels.get("method") == method:
                return int(sample.value)
    return 0


@dataclass
class GatewayProcess:
    """A ``meta-memory serve`` subprocess. ``url`` is ``http://127.0.0.1:<port>``; as a context
    manager it is stopped when the block ends."""

    proc: subprocess.Popen
    url: str
    state_dir: Path
    args: list[str] = field(default_factory=list)
    _ids: int = 0

    def rpc(self, method: str, params: Any = None, *, token: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
        """POST one call; returns the whole JSON-RPC response object."""
        self._ids += 1
        payload: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": self._ids}
        if params is not None:
            payload["params"] = params
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        resp = httpx.post(self.url + "/rpc", json=payload, headers=headers, timeout=timeout)
        return resp.json()

    def result(self, method: str, params: Any = None, **kw: Any) -> Any:
        """POST one call and return its ``result`` (fails the test on an error)."""
        return result_of(self.rpc(method, params, **kw))

    def error(self, method: str, params: Any = None, **kw: Any) -> dict[str, Any]:
        """POST one call that must fail; returns its ``error`` object."""
        return error_of(self.rpc(method, params, **kw))

    def __enter__(self) -> GatewayProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def discard(self) -> None:
        """End the gateway at once (SIGKILL): a fixture's clean-up after its test has made every assertion, when
        nothing reads the state directory again. A graceful stop would cost each test about a quarter of a CPU
        second (closing the runtime, the interpreter's final collection) that no assertion reads; the tests of
        shutdown call :meth:`stop`."""
        self.kill()


def _drain(proc: subprocess.Popen) -> None:
    """Keep reading the gateway's stdout and stderr so a chatty gateway never blocks on a full pipe;
    the last lines are kept on ``proc.log_tail`` for failure messages."""
    import threading
    from collections import deque

    tail: deque[str] = deque(maxlen=5000)
    proc.log_tail = tail  # type: ignore[attr-defined]

    def pump(stream) -> None:  # noqa: ANN001
        for line in iter(stream.readline, ""):
            tail.append(line)

    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            threading.Thread(target=pump, args=(stream,), daemon=True).start()


def start_gateway(state_dir: Path, *extra: str, config: Path | None = None, env: dict[str, str] | None = None,
                  expect_failure: bool = False, timeout: float = 30.0) -> GatewayProcess:
    """Start ``meta-memory serve --port 0`` and wait for its URL line on stdout."""
    args = [sys.executable, "-m", "meta_memory.cli", "serve", "--port", "0", "--state-dir", str(state_dir), *extra]
    if config is not None:
        args += ["--config", str(config)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    line = proc.stdout.readline()
    if expect_failure:
        proc.wait(timeout=timeout)
        return GatewayProcess(proc, "", state_dir, args)
    if "listening on " not in line:
        proc.kill()
        err = proc.stderr.read() if proc.stderr else ""
        raise AssertionError(f"gateway did not start: stdout={line!r} stderr={err[-2000:]}")
    url = line.split("listening on ", 1)[1].split()[0]
    _drain(proc)
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/v1/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.05)
    return GatewayProcess(proc, url, state_dir, args)


def meta_memory_cli(*args: str, stdin: bytes | None = None, timeout: float = 300) -> subprocess.CompletedProcess[bytes]:
    """Run the installed ``meta-memory`` command (``python -m meta_memory.cli``) as a user would; output captured."""
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], input=stdin, capture_output=True,
                          timeout=timeout, env={**os.environ})


def cli_json_error(proc: subprocess.CompletedProcess[str], *, said_on_stderr: bool = True) -> dict[str, Any]:
    """The ``error`` object a ``--json`` command printed on stdout for a refusal (text-mode ``proc``: exit 1, the
    message on stderr too, prefixed ``meta-memory: ``, and, with ``said_on_stderr``, the same words there);
    fails the test when the command did not refuse so."""
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith("meta-memory: "), proc.stderr
    answer = json.loads(proc.stdout)
    assert list(answer) == ["error"], answer
    error: dict[str, Any] = answer["error"]
    if said_on_stderr:
        assert error["message"] in " ".join(proc.stderr.split()), (error, proc.stderr)
    return error


def read_until_closed(sock: Any) -> bytes:
    """Everything a server sends on ``sock`` (a ``socket.socket``) until it closes the connection (or resets it)."""
    out = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return out
        if not chunk:
            return out
        out += chunk


def write_config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


#: One grant of an access table: ``(principal, action)`` or ``(principal, action, on)`` where ``on``
#: is the grant's resource table, e.g. ``{"identity": "lead:main"}``.
Grant = tuple[str, str] | tuple[str, str, Mapping[str, str]]


def access_toml(tokens: Mapping[str, str], grants: Iterable[Grant], *, header: bool = True,
                denies: Iterable[Grant] = ()) -> str:
    """The ``[access]`` table of a config file: ``tokens`` maps each bearer token to its principal
    (stored as its SHA-256, as an operator would write it); each grant gives the principal an action,
    on a resource when the grant names one, and each of ``denies`` (the same shape) takes it away.
    ``header=False`` leaves out ``[access] enabled = true``."""
    parts = ["[access]\nenabled = true\n"] if header else []
    parts += [f'[[access.tokens]]\nsha256 = "{hash_token(token)}"\nprincipal = "{who}"\n'
              for token, who in tokens.items()]
    for table, rules in (("grants", grants), ("denies", denies)):
        for rule in rules:
            who, action = rule[0], rule[1]
            text = f'[[access.{table}]]\naction = "{action}"\nwho = {{ principal = "{who}" }}\n'
            if len(rule) == 3:
                on = ", ".join(f'{k} = "{v}"' for k, v in rule[2].items())
                text += f"on = {{ {on} }}\n"
            parts.append(text)
    return "\n".join(parts)


class RpcClient:
    """JSON-RPC over HTTP to one gateway: one keep-alive connection per thread, an optional bearer
    token, the whole response object (``rpc``), its ``result`` or its ``error``."""

    def __init__(self, gw: GatewayProcess, token: str | None = None, *, timeout: float = 30.0) -> None:
        self.gw = gw
        self.url = gw.url + "/rpc"
        self.token = token
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._local = threading.local()

    @property
    def http(self) -> httpx.Client:
        """This thread's client (created on first use)."""
        client = getattr(self._local, "client", None)
        if client is None:
            headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
            client = self._local.client = httpx.Client(timeout=self.timeout, headers=headers)
        return client

    def rpc(self, method: str, params: Any = None) -> dict[str, Any]:
        payload: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": next(self._ids)}
        if params is not None:
            payload["params"] = params
        return self.http.post(self.url, json=payload).json()

    def result(self, method: str, params: Any = None) -> Any:
        """One call's ``result`` (fails the test on an error)."""
        return result_of(self.rpc(method, params))

    def error(self, method: str, params: Any = None) -> dict[str, Any]:
        """One call that must fail: its ``error`` object."""
        return error_of(self.rpc(method, params))

    def close(self) -> None:
        client = getattr(self._local, "client", None)
        if client is not None:
            client.close()


@contextmanager
def serving(state_dir: Path, client: type[RpcClient] = RpcClient, **kw: Any) -> Iterator[Any]:
    """A gateway on ``state_dir`` (``start_gateway`` keywords) and a ``client`` on it; both stopped after."""
    gw = start_gateway(state_dir, **kw)
    c = client(gw)
    try:
        yield c
    finally:
        c.close()
        gw.stop()


#: A build's index is left out when its manifest read misses the time box: room for a loaded machine, and a miss
#: is an error rather than a block without its index (the gateways of tests that read a build block).
BUILD_INDEX_CONFIG = '[agent_memory]\nrecall_timeout_ms = 20000\nrecall_failure_policy = "fail"\n'


def module_gateway(tmp_path_factory: Any, name: str, config_text: str | None = None) -> Iterator[GatewayProcess]:
    """A gateway for a test module (``yield from`` it in a module-scoped fixture): its own state directory under
    ``tmp_path_factory``, configured by ``config_text`` when given; stopped after."""
    tmp = tmp_path_factory.mktemp(name)
    config = write_config(tmp / "meta.toml", config_text) if config_text is not None else None
    gw = start_gateway(tmp / "state", config=config)
    try:
        yield gw
    finally:
        gw.stop()


def memory_id_of(tool_text: str) -> str:
    """The record id in a ``memory`` tool text (``Stored memory <id>...``, ``Updated: new record memory <id>...``)."""
    return tool_text.split("memory ", 1)[1].split(" ", 1)[0].rstrip(".")


def poisoned_write(call: Callable[[str, dict[str, Any]], Any], identity: str, title: str, body: str, *,
                   session: str | None = None) -> str:
    """The poisoned-write recipe through ``call`` (method, params) -> result: a ``web_fetch`` result
    taints the session, then the model's ``memory`` remember lands quarantined. Returns its id."""
    session = session or f"sess:{uuid.uuid4().hex[:12]}"
    verdict = call("meta/turn/tool_result", {"identity": identity, "session_key": session, "tool_name": "web_fetch"})
    assert verdict["trusted"] is False and verdict["session_tainted"] is True, verdict
    out = call("meta/agent_memory/tool", {"identity": identity, "session_key": session,
                                          "arguments": {"action": "remember", "title": title, "body": body}})
    assert out["is_error"] is False and "QUARANTINED" in out["text"], out
    return memory_id_of(out["text"])


# --------------------------------------------------------------------------- the realm file


def realm_db(state_dir: Path, realm: str = "default") -> Path:
    """``<state>/agent-memory/<encoded realm>.sqlite3``: one realm's SQLite file."""
    return state_dir / "agent-memory" / f"{encode_path_segment(realm)}.sqlite3"


@contextmanager
def open_ro(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection with ``Row`` rows (WAL readers see committed transactions only)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    conn.row_factory = sqlite3.Row
    try:
        yield conn
    finally:
        conn.close()


def corrupt_table_pages(db: Path, *tables: str) -> int:
    """Overwrite every page of ``tables`` but their root pages with random bytes (the header, the schema page and
    the root pages stay whole, so the realm still opens): damage deeper than a header check sees. Checkpoint
    the WAL first (``PRAGMA wal_checkpoint(TRUNCATE)``) with the store closed. Returns how many pages; skips
    the test when this SQLite has no ``dbstat`` table."""
    import pytest

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        try:
            pages = [int(r[0]) for t in tables for r in conn.execute(
                "SELECT pageno FROM dbstat WHERE name = ? AND path != '/'", (t,))]
        except sqlite3.OperationalError:
            pytest.skip("this SQLite has no dbstat table")
        size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    with db.open("r+b") as f:
        for page in pages:
            f.seek((page - 1) * size)
            f.write(os.urandom(size))
    return len(pages)


def markdown_record(memory_id: str, title: str, body: str, *, tags: list[str] | None = None,
                    created: Any = 1_700_000_000_000, updated: Any = 1_700_000_000_500) -> str:
    """One record of a legacy markdown memory file, as the import reads it (``created`` and
    ``updated`` go into the metadata as given, so a test can write any value)."""
    meta = json.dumps({"memory_id": memory_id, "tags": tags or [], "created_at_ms": created, "updated_at_ms": updated},
                      ensure_ascii=False)
    return f"## {title}\n<!-- meta-agent-memory {meta} -->\n{body}\n<!-- /meta-agent-memory -->\n\n"


def legacy_markdown_file(state_dir: Path, identity: str, realm: str = "default") -> Path:
    """Where a gateway on ``state_dir`` looks for ``identity``'s legacy markdown memory (its folder is created)."""
    folder = state_dir / "agent-memory" / encode_path_segment(realm)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{encode_path_segment(identity)}.md"


# --------------------------------------------------------------------------- local HTTP endpoints


class LocalServer:
    """A threaded HTTP server on a free loopback port running ``handler`` until :meth:`close`."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], poll_interval: float = 0.05) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": poll_interval},
                                       daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing and answers with :meth:`send_body`."""

    def send_body(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def read_json(self) -> Any:
        """The request body decoded as JSON (``{}`` when empty)."""
        length = int(self.headers.get("Content-Length", "0"))
        return json.loads(self.rfile.read(length) or b"{}")

    def log_message(self, *args: Any) -> None:
        pass


def chat_completion(content: str) -> bytes:
    """An OpenAI-compatible chat-completions response body whose one choice says ``content``."""
    return json.dumps({"id": "fake", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content}}]}).encode()


def jsonrpc_lines(proc: subprocess.Popen, messages: list[Any]) -> list[Any]:
    """Write messages (one per line) to a stdio gateway and read one line back per message."""
    assert proc.stdin is not None and proc.stdout is not None
    out = []
    for m in messages:
        proc.stdin.write((json.dumps(m) + "\n").encode())
        proc.stdin.flush()
        out.append(json.loads(proc.stdout.readline()))
    return out


def raw_write(store: Any, realm: str, sql: str, params: tuple[Any, ...] = ()) -> int:
    """Run one statement (``?`` placeholders) in a write transaction of ``realm``; returns its row count.

    Tests only: it seeds or damages rows the store's public contract never writes that way.
    """
    with store.transaction(realm) as tx:
        return int(tx._sql.run(sql, params).rowcount)


def raw_rows(store: Any, realm: str, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """The rows of one statement (``?`` placeholders) read from a snapshot of ``realm`` (tests only)."""
    with store.snapshot(realm) as tx:
        return list(tx._sql.rows(sql, params))


def run_together(work: Callable[[int], Any], count: int, *, timeout_s: float = 60.0) -> list[Any]:
    """Call ``work(0)`` .. ``work(count - 1)`` in ``count`` threads released at once by a barrier and
    return their results in index order. Raises the first error a thread raised (after all have
    ended) and ``AssertionError`` when one is still running after ``timeout_s`` seconds."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as exc:  # noqa: BLE001 - re-raised below, in the calling thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s)
    assert not any(t.is_alive() for t in threads), f"a thread still runs after {timeout_s} s"
    if errors:
        raise errors[0]
    return results


# --------------------------------------------------------------------------- a runtime served in this process


class ServedRuntime:
    """A runtime of this process (``Meta.builder()``'s, so a test can reach its parts: hold a provider,
    stop a worker) served over HTTP on a real loopback socket by uvicorn in a thread. ``url`` is
    ``http://127.0.0.1:<port>``; :meth:`close` stops the server (the handle is the caller's)."""

    def __init__(self, runtime: Any) -> None:
        import socket

        import uvicorn

        from meta_memory.server.gateway import Gateway
        from meta_memory.server.http import create_app

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(create_app(Gateway.for_runtime(runtime)), log_level="warning",
                                                    lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.01)

    def rpc(self, method: str, params: Any = None, *, timeout: float = 60.0) -> httpx.Response:
        """POST one call; the whole HTTP response (status, headers, JSON body)."""
        return httpx.post(self.url + "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}},
                          timeout=timeout)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def refused_as_erased(store: Any, realm: str, identity: str, title: str, body: str) -> bool:
    """Whether ``remember`` of ``(title, body)`` into ``identity``'s scope is refused ``erased`` (asserting
    the refusal does not repeat the body); ``False`` when it is written."""
    from meta_memory.agent_memory import record_writes
    from meta_memory.errors import AgentMemoryError

    try:
        record_writes.remember(store, realm, identity, title, body)
    except AgentMemoryError as exc:
        assert exc.data["reason"] == "erased" and " ".join(body.split()) not in " ".join(exc.message.split()), exc.message
        return True
    return False


class DroppingFront:
    """A gateway's address (``url``) that forwards each call to a real gateway (``upstream``) and answers it,
    until ``drop`` is set: then it forwards the next call (of ``method`` only, when given; a batch holding
    one), so it is applied,
    and closes the connection without answering, as a gateway killed or restarted in the middle of a call
    does; with ``gone`` it stops listening first (the gateway is down, nothing accepts any more)."""

    def __init__(self, upstream: str, method: str | None = None) -> None:
        self.upstream = upstream
        self.method = method
        self.drop = self.gone = False
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen()
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        self.server.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                piece = conn.recv(65536)
                if not piece:
                    return
                data += piece
            head, body = data.split(b"\r\n\r\n", 1)
            length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            while len(body) < length:
                body += conn.recv(65536)
            answer = httpx.post(self.upstream + "/rpc", content=body, headers={"Content-Type": "application/json"},
                                timeout=30)
            calls = json.loads(body)
            methods = {c.get("method") for c in (calls if isinstance(calls, list) else [calls])}
            if self.drop and (self.method is None or self.method in methods):
                if self.gone:
                    self.close()
                return  # the connection closes unanswered
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                         + f"Content-Length: {len(answer.content)}\r\n\r\n".encode() + answer.content)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.server.close()
