"""EnvtestServer: a real kube-apiserver + etcd on loopback ports, for the envtest tier.

The binaries come from a ``KUBEBUILDER_ASSETS`` folder (the controller-runtime envtest
convention: a folder holding ``kube-apiserver`` and ``etcd``); ``scripts/envtest-assets.sh``
builds one on Debian 12. The server is started the way controller-runtime's envtest starts its
control plane, with the flags that work for kube-apiserver v1.20 (docs/architecture.md, tiers):
token authentication (one admin token in ``system:masters``), RBAC, service-account keys made
with the ``openssl`` CLI, the ServiceAccount admission plugin disabled, a self-signed serving
certificate (the kubeconfig sets ``insecure-skip-tls-verify``). No controller-manager runs:
deleted namespaces stay Terminating and owner references are never garbage-collected.

Typical use::

    with EnvtestServer() as srv:          # KUBEBUILDER_ASSETS from the environment
        srv.url                           # "https://127.0.0.1:PORT"
        srv.kubeconfig_path               # kubeconfig with the admin token
        srv.restart_apiserver()           # same port, same etcd: clients see a brief outage
        srv.stop_apiserver(); srv.start_apiserver()   # the same, with an outage you control
        srv.compact_etcd()                # expire every resourceVersion handed out so far
        srv.wipe_etcd()                   # etcd emptied, kube-apiserver restarted over it:
                                          # every object gone, resourceVersions go backwards
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from kinrun.clock import REAL_CLOCK
from kinrun.errors import KinrunError

ASSETS_ENV = "KUBEBUILDER_ASSETS"
BINARIES = ("kube-apiserver", "etcd")
ADMIN_TOKEN = "kinrun-envtest-admin-token"
LOG_TAIL_LINES = 40
_PR_SET_PDEATHSIG = 1  # prctl(2) option


def _insecure_tls() -> ssl.SSLContext:
    """TLS without verification: kube-apiserver serves a self-signed certificate here."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _b64(text: str) -> str:
    """Base64 of ``text``: etcd's JSON gateway takes keys and values in base64."""
    return base64.b64encode(text.encode()).decode()


class EnvtestError(KinrunError):
    """The envtest control plane could not be found, started, or reached.

    ``str()`` says what failed; when a process failed, the tail of its log is appended.
    """


def find_assets(assets_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return the folder holding executable ``kube-apiserver`` and ``etcd``.

    ``assets_dir`` defaults to ``$KUBEBUILDER_ASSETS``. Raises EnvtestError naming what is
    missing (unset variable, missing binary) and how to get the assets.
    """
    raw = os.fspath(assets_dir) if assets_dir is not None else os.environ.get(ASSETS_ENV, "")
    if not raw:
        raise EnvtestError(f"{ASSETS_ENV} not set; run scripts/envtest-assets.sh")
    folder = Path(raw)
    missing = [b for b in BINARIES if not os.access(folder / b, os.X_OK)]
    if missing:
        raise EnvtestError(f"{ASSETS_ENV}={raw} lacks {', '.join(missing)}; "
                           "run scripts/envtest-assets.sh")
    return folder


def unique_namespace_name(test_name: str, prefix: str = "t") -> str:
    """A DNS-label namespace name: ``prefix-<slug of test_name>-<6 hex>``, at most 63 chars."""
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")
    suffix = uuid.uuid4().hex[:6]
    room = 63 - len(prefix) - len(suffix) - 2
    return f"{prefix}-{slug[:room].strip('-') or 'x'}-{suffix}"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the usual bind-to-0 probe)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _die_with_parent() -> None:
    """In the child before exec: ask Linux to SIGTERM it when the parent goes away, so a
    killed test run leaves no kube-apiserver or etcd behind (best effort; Linux only).

    The signal follows the *thread* that started the child: start EnvtestServer from a
    thread that outlives it (a pytest fixture runs on the main thread)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def _stop_process(proc: subprocess.Popen[bytes] | None, timeout: float = 10.0) -> None:
    """Terminate ``proc``, kill it if it has not exited within ``timeout`` seconds, reap it."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


class _Process:
    """One child process with its log file. Not thread-safe: owned by one EnvtestServer."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> None:
        """Start the process, appending its stdout and stderr to ``log_path``."""
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(self.argv, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=_die_with_parent)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Terminate then kill; safe to call twice."""
        _stop_process(self.proc)
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def failure(self, what: str) -> EnvtestError:
        """An EnvtestError for ``what``, with the exit code and the tail of the log."""
        code = self.proc.poll() if self.proc is not None else None
        state = f"exited with {code}" if code is not None else "still running"
        return EnvtestError(f"{self.name}: {what} ({state}); log tail:\n{_log_tail(self.log_path)}")


class EnvtestServer:
    """A kube-apiserver and its etcd, started on free loopback ports, as a context manager.

    Args:
        assets_dir: folder with ``kube-apiserver`` and ``etcd``; default ``$KUBEBUILDER_ASSETS``.
        ready_timeout: seconds to wait for etcd ``/health`` and then for apiserver ``/readyz``.
        apiserver_flags: extra kube-apiserver flags, appended after the defaults.

    Attributes (valid between start and stop): ``url`` (``https://127.0.0.1:PORT``),
    ``kubeconfig_path`` (str; context ``envtest``, user with ``token``), ``token`` (admin
    bearer token, group ``system:masters``), ``etcd_url`` (``http://127.0.0.1:PORT``),
    ``work_dir`` (temp folder with logs, certs, keys; removed by stop()).

    Errors: start() raises EnvtestError when the assets are missing, a process exits early, or
    readiness is not reached within ``ready_timeout`` (the message carries the log tail).

    Concurrency: not thread-safe; start/stop/restart from one thread (a pytest fixture). The
    servers themselves serve any number of concurrent clients.
    """

    def __init__(self, assets_dir: str | os.PathLike[str] | None = None, *,
                 ready_timeout: float = 90.0, apiserver_flags: Sequence[str] = ()) -> None:
        self.assets_dir = find_assets(assets_dir)
        self.ready_timeout = ready_timeout
        self.apiserver_flags = list(apiserver_flags)
        self.token = ADMIN_TOKEN
        self.work_dir: Path | None = None
        self.url = ""
        self.etcd_url = ""
        self.kubeconfig_path = ""
        self._etcd: _Process | None = None
        self._apiserver: _Process | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> EnvtestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> EnvtestServer:
        """Start etcd, then kube-apiserver; return when ``/readyz`` says ok. Raises EnvtestError."""
        self.work_dir = Path(tempfile.mkdtemp(prefix="kinrun-envtest-"))
        try:
            self._start_etcd()
            self._write_auth_files()
            self._start_apiserver()
            self._write_kubeconfig()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop kube-apiserver, then etcd (terminate, then kill), and remove the work dir."""
        for proc in (self._apiserver, self._etcd):
            if proc is not None:
                proc.stop()
        self._apiserver = self._etcd = None
        if self.work_dir is not None:
            link = self.work_dir / "etcd-data"
            if link.is_symlink():
                shutil.rmtree(link.resolve(), ignore_errors=True)
            shutil.rmtree(self.work_dir, ignore_errors=True)
            self.work_dir = None

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same port over the same etcd.

        Returns when the new process answers ``/readyz`` ok. Clients with open watches see
        their streams end and connections refused meanwhile. Raises EnvtestError.
        """
        self.stop_apiserver()
        self.start_apiserver()

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver only (etcd keeps running); clients get connection refused
        until ``start_apiserver()``. Raises EnvtestError when the server was never started."""
        if self._apiserver is None:
            raise EnvtestError("kube-apiserver was not started")
        self._apiserver.stop()

    def start_apiserver(self) -> None:
        """Start a stopped kube-apiserver again with the same flags and port; return when
        ``/readyz`` says ok. No-op when it is running. Raises EnvtestError."""
        if self._apiserver is None:
            raise EnvtestError("kube-apiserver was not started")
        if self._apiserver.alive():
            return
        self._apiserver.start()
        self._wait_apiserver_ready()

    def wipe_etcd(self) -> None:
        """Stop kube-apiserver and etcd, delete etcd's data, start both again on the same
        ports; return when ``/readyz`` says ok. Raises EnvtestError.

        What a cluster restored from an empty (or an old) etcd backup looks like to clients:
        every object and namespace is gone (kube-apiserver re-creates only its bootstrap
        objects: default namespaces, RBAC roles), and resourceVersions start again from a low
        etcd revision, so the ones clients hold are now *ahead* of the server. kube-apiserver
        1.20 answers a watch from such a version with a stream that stays silent (its watch
        cache waits for that revision), and a LIST at it with "Too large resource version"
        (504 Timeout, cause ResourceVersionTooLarge) after about 3 s.
        """
        if self._apiserver is None or self._etcd is None:
            raise EnvtestError("not started")
        self._apiserver.stop()
        self._etcd.stop()
        data = Path(self._etcd.argv[self._etcd.argv.index("--data-dir") + 1])
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(mode=0o700)
        self._etcd.start()
        self._wait(self._etcd, "etcd /health", self._etcd_healthy)
        self._apiserver.start()
        self._wait_apiserver_ready()

    # -- etcd ------------------------------------------------------------------------------

    def _start_etcd(self) -> None:
        assert self.work_dir is not None
        client_port = free_port()
        peer_port = free_port()
        while peer_port == client_port:  # two probes may hand out the same port
            peer_port = free_port()
        self.etcd_url = f"http://127.0.0.1:{client_port}"
        self._etcd = _Process("etcd", [
            str(self.assets_dir / "etcd"),
            "--data-dir", str(self._etcd_data_dir()),
            "--listen-client-urls", self.etcd_url,
            "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-cluster", f"default=http://127.0.0.1:{peer_port}",
        ], self.work_dir / "etcd.log")
        self._etcd.start()
        self._wait(self._etcd, "etcd /health", self._etcd_healthy)

    def _etcd_data_dir(self) -> Path:
        """etcd's data dir: in RAM (/dev/shm) when possible, since etcd 3.4 fsyncs every write."""
        assert self.work_dir is not None
        shm = Path("/dev/shm")
        if shm.is_dir() and os.access(shm, os.W_OK):
            data = Path(tempfile.mkdtemp(prefix="kinrun-envtest-etcd-", dir=shm))
            (self.work_dir / "etcd-data").symlink_to(data)  # stop() removes the target too
            return data
        return self.work_dir / "etcd-data"

    def _etcd_healthy(self) -> bool:
        body = self._http_get(f"{self.etcd_url}/health", None)
        return body is not None and json.loads(body).get("health") == "true"

    def etcd_call(self, path: str, body: dict) -> dict:
        """POST ``body`` to etcd's v3 JSON gateway (``/v3/...``) and return the decoded answer.

        Raises EnvtestError on an HTTP error from etcd.
        """
        req = urllib.request.Request(f"{self.etcd_url}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            raise EnvtestError(f"etcd {path}: HTTP {err.code}: {err.read()[:500]!r}") from err

    def etcd_revision(self) -> int:
        """etcd's current revision (the newest resourceVersion kube-apiserver has written)."""
        return int(self.etcd_call("/v3/maintenance/status", {})["header"]["revision"])

    def compact_etcd(self) -> int:
        """Expire every resourceVersion handed out so far; return the compaction revision.

        Writes a scratch key outside kube-apiserver's ``/registry`` prefix to advance etcd's
        revision past every existing resourceVersion, then compacts at that revision (etcd
        keeps the compaction revision itself readable, so compacting "at the current
        revision" alone would spare the newest one). Afterwards whatever kube-apiserver must
        read from etcd at an older revision answers 410 Expired: continue tokens, lists with
        an exact resourceVersion, and watches of resources without a watch cache (core and
        events.k8s.io Events). Watches of cached resources (ConfigMaps, Pods, ...) are served
        from kube-apiserver's watch cache, whose window starts when kube-apiserver starts: a
        resourceVersion from before ``restart_apiserver()`` is too old for those.
        Raises EnvtestError.
        """
        put = self.etcd_call("/v3/kv/put", {"key": _b64("/kinrun-envtest/compaction-bump"),
                                            "value": _b64(str(REAL_CLOCK.wall()))})
        rev = int(put["header"]["revision"])
        self.etcd_call("/v3/kv/compaction", {"revision": str(rev), "physical": True})
        return rev

    # -- kube-apiserver ----------------------------------------------------------------------

    def _write_auth_files(self) -> None:
        assert self.work_dir is not None
        (self.work_dir / "tokens.csv").write_text(f"{self.token},admin,admin-uid,system:masters\n")
        key, pub = self.work_dir / "sa.key", self.work_dir / "sa.pub"
        for argv in (["openssl", "genrsa", "-out", str(key), "2048"],
                     ["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(pub)]):
            done = subprocess.run(argv, capture_output=True, check=False)
            if done.returncode != 0:
                raise EnvtestError(f"{' '.join(argv)} failed: {done.stderr.decode()[-500:]}")

    def _apiserver_argv(self, port: int) -> list[str]:
        assert self.work_dir is not None
        wd = self.work_dir
        return [
            str(self.assets_dir / "kube-apiserver"),
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            "--insecure-port=0",
            f"--cert-dir={wd / 'certs'}",
            f"--token-auth-file={wd / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={wd / 'sa.pub'}",
            f"--service-account-signing-key-file={wd / 'sa.key'}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--disable-admission-plugins=ServiceAccount",
            "--allow-privileged=true",
            *self.apiserver_flags,
        ]

    def _start_apiserver(self) -> None:
        assert self.work_dir is not None
        port = free_port()
        self.url = f"https://127.0.0.1:{port}"
        self._apiserver = _Process("kube-apiserver", self._apiserver_argv(port),
                                   self.work_dir / "kube-apiserver.log")
        self._apiserver.start()
        self._wait_apiserver_ready()

    def _wait_apiserver_ready(self) -> None:
        assert self._apiserver is not None
        self._wait(self._apiserver, "kube-apiserver /readyz",
                   lambda: self._http_get(f"{self.url}/readyz", self.token) == b"ok")

    def _write_kubeconfig(self) -> None:
        assert self.work_dir is not None
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "envtest",
            "clusters": [{"name": "envtest",
                          "cluster": {"server": self.url, "insecure-skip-tls-verify": True}}],
            "users": [{"name": "admin", "user": {"token": self.token}}],
            "contexts": [{"name": "envtest",
                          "context": {"cluster": "envtest", "user": "admin",
                                      "namespace": "default"}}],
        }
        path = self.work_dir / "kubeconfig"
        path.write_text(json.dumps(config, indent=2))  # JSON is YAML
        self.kubeconfig_path = str(path)

    def create_namespace(self, name: str) -> None:
        """Create namespace ``name`` (as the admin). Raises EnvtestError unless the server says 201.

        Namespaces never finish deleting here (no controller-manager), so tests create one
        namespace each and delete the objects inside, not the namespace.
        """
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        req = urllib.request.Request(f"{self.url}/api/v1/namespaces", method="POST",
                                     data=json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {self.token}",
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30, context=_insecure_tls()) as resp:
                resp.read()
        except urllib.error.HTTPError as err:
            raise EnvtestError(f"create namespace {name}: HTTP {err.code}: "
                               f"{err.read()[:300]!r}") from err

    # -- helpers ---------------------------------------------------------------------------

    @staticmethod
    def _http_get(url: str, token: str | None) -> bytes | None:
        """GET ``url`` (TLS unverified); the body on 200, None on any error or other status."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        try:
            req = urllib.request.Request(url, headers=headers)
            with urllib.request.urlopen(req, timeout=5, context=_insecure_tls()) as resp:
                return resp.read() if resp.status == 200 else None
        except (OSError, ValueError):
            return None

    def _wait(self, proc: _Process, what: str, ready: Callable[[], bool]) -> None:
        """Poll ``ready()`` every 0.2 s until true; EnvtestError if ``proc`` dies or time runs out."""
        deadline = REAL_CLOCK.now() + self.ready_timeout
        while REAL_CLOCK.now() < deadline:
            if not proc.alive():
                raise proc.failure(f"exited before {what} answered ok")
            if ready():
                return
            REAL_CLOCK.sleep(0.2)
        raise proc.failure(f"{what} not ok after {self.ready_timeout:.0f}s")

