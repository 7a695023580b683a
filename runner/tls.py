"""Serving certificates for kinrun's HTTPS servers: one mechanism for secure metrics and for
admission webhooks, as controller-runtime's ``certwatcher`` serves both.

Two sources of a key pair, behind one protocol (:class:`CertSource`):

* :class:`SelfSignedCerts`: a CA and a serving certificate for the given DNS names and IPs,
  made at start (ECDSA P-256, as cert-manager's default for new issuers is small and fast),
  valid :data:`DEFAULT_VALIDITY`; renewed once :data:`RENEW_AT` of its lifetime has passed
  (cert-manager renews at two thirds too). The CA is kept across renewals, so a client that
  trusts it (a webhook configuration's ``caBundle``) keeps trusting the new certificate.
* :class:`DirectoryCerts`: ``tls.crt`` and ``tls.key`` (and ``ca.crt`` when present), the keys
  of a ``kubernetes.io/tls`` Secret as cert-manager writes it, mounted from a folder; read
  again when a file changes (size, mtime or inode: a Secret volume swaps a symlink).

:class:`ServerTLS` turns a source into an ``ssl.SSLContext`` for a listening socket whose
handshakes always use the newest pair: the context's SNI callback checks the source (at most
once per :data:`CHECK_INTERVAL` seconds) and hands the handshake a new context when the pair
changed, so a rotation drops no connection and needs no restart (what certwatcher's
``GetCertificate`` does). Intervals are measured on the monotonic clock (``kinrun.clock``);
validity on the same clock's ``wall()`` (epoch seconds: certificates carry wall time).

Thread-safety: every method may be called from any thread (a lock guards the current pair).
Errors: :class:`TLSError` (a kinrun error) for a folder without a readable pair, or a pair that
does not match.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kinrun.clock import REAL_CLOCK, Clock, with_wall
from kinrun.errors import KinrunError

DEFAULT_VALIDITY = 90 * 24 * 3600.0
"""Seconds a self-signed serving certificate is valid (cert-manager's default duration)."""
CA_VALIDITY = 10 * 365 * 24 * 3600.0
"""Seconds the self-signed CA is valid: it outlives many serving certificates."""
RENEW_AT = 2 / 3
"""Fraction of a certificate's lifetime after which it is renewed (cert-manager's default)."""
CHECK_INTERVAL = 1.0
"""Seconds between two checks of the source by a handshake (a stat of two files at most)."""
CERT_FILE, KEY_FILE, CA_FILE = "tls.crt", "tls.key", "ca.crt"
"""The file names of a kubernetes.io/tls Secret mounted as a folder (cert-manager's)."""


class TLSError(KinrunError):
    """A key pair cannot be used: ``path`` (a folder or file, or None) and why."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


@dataclass(frozen=True)
class KeyPair:
    """PEM ``cert`` (the serving certificate, then any chain), PEM ``key``, PEM ``ca`` (what a
    client must trust; empty when unknown), ``not_after`` (epoch seconds) and ``version``
    (increases with every new pair of a source)."""

    cert: bytes
    key: bytes
    ca: bytes
    not_after: float
    version: int


class CertSource(Protocol):
    """Where a server's key pair comes from."""

    def current(self) -> KeyPair:
        """The pair to serve now (renewed or reloaded first when due)."""
        ...


class SelfSignedCerts:
    """A CA and a serving certificate for ``hosts`` (DNS names and IP addresses), made now and
    renewed after :data:`RENEW_AT` of ``validity`` seconds (see the module docstring), on
    ``clock``'s ``wall()`` (default the real one; ``wall_clock``: a deprecated callable for it)."""

    def __init__(self, hosts: Sequence[str], *, validity: float = DEFAULT_VALIDITY,
                 wall_clock: Callable[[], float] | None = None,
                 ca: tuple[bytes, bytes] | None = None, clock: Clock | None = None) -> None:
        if not hosts:
            raise TLSError("a serving certificate needs at least one DNS name or IP")
        self.hosts, self.validity = tuple(hosts), validity
        self._wall = with_wall(clock, wall_clock, where="SelfSignedCerts").wall
        self._lock = threading.Lock()
        self._ca = ca or _new_ca(self._wall())
        self._pair = self._issue(1)

    @property
    def ca_pem(self) -> bytes:
        """The CA certificate (PEM) every pair is signed by: a client's trust anchor."""
        return self._ca[0]

    @property
    def ca_key_pem(self) -> bytes:
        """The CA's private key (PEM), to share the CA between replicas (a Secret)."""
        return self._ca[1]

    def current(self) -> KeyPair:
        with self._lock:
            pair = self._pair
            issued = pair.not_after - self.validity
            if self._wall() >= issued + RENEW_AT * self.validity:
                self._pair = pair = self._issue(pair.version + 1)
            return pair

    def _issue(self, version: int) -> KeyPair:
        now = self._wall()
        cert, key = _new_leaf(self._ca, self.hosts, now, self.validity)
        return KeyPair(cert + self._ca[0], key, self._ca[0], now + self.validity, version)


class DirectoryCerts:
    """The pair in folder ``path`` (:data:`CERT_FILE`, :data:`KEY_FILE`, optional
    :data:`CA_FILE`), read again when one of them changes. Raises TLSError at construction
    when the folder has no usable pair; a later broken write keeps the last good pair."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp = self._stat()
        self._pair = self._read(1)

    def current(self) -> KeyPair:
        with self._lock:
            stamp = self._stat()
            if stamp != self._stamp:
                try:
                    self._pair = self._read(self._pair.version + 1)
                    self._stamp = stamp
                except TLSError:
                    pass  # half-written (a Secret update in flight): keep serving the last pair
            return self._pair

    def _stat(self) -> tuple[tuple[int, int, int], ...]:
        out = []
        for name in (CERT_FILE, KEY_FILE, CA_FILE):
            try:
                st = os.stat(self.path / name)
                out.append((st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                out.append((0, 0, 0))
        return tuple(out)

    def _read(self, version: int) -> KeyPair:
        try:
            cert, key = ((self.path / n).read_bytes() for n in (CERT_FILE, KEY_FILE))
        except OSError as exc:
            raise TLSError(f"cannot read {exc.filename}: {exc.strerror}", str(self.path)) from None
        ca_path = self.path / CA_FILE
        ca = ca_path.read_bytes() if ca_path.exists() else b""
        not_after = _check_pair(cert, key, str(self.path))
        return KeyPair(cert, key, ca, not_after, version)


class ServerTLS:
    """An ``ssl.SSLContext`` (``context``) for a server socket that serves ``source``'s newest
    pair at every handshake (see the module docstring)."""

    def __init__(self, source: CertSource, *, clock: Clock | None = None) -> None:
        self.source = source
        self._clock = clock or REAL_CLOCK
        self._lock = threading.Lock()
        pair = source.current()
        self._version, self._checked = pair.version, self._clock.now()
        self._latest = _context(pair)
        self.context = _context(pair)
        self.context.sni_callback = self._on_handshake

    def refresh(self) -> bool:
        """Check the source now; True when a new pair is served from the next handshake on."""
        pair = self.source.current()
        with self._lock:
            self._checked = self._clock.now()
            if pair.version == self._version:
                return False
            self._latest, self._version = _context(pair), pair.version
            return True

    def _on_handshake(self, sock: ssl.SSLObject | ssl.SSLSocket, _name: str | None,
                      _ctx: ssl.SSLContext) -> None:
        if self._clock.now() - self._checked >= CHECK_INTERVAL:
            self.refresh()
        sock.context = self._latest


def _context(pair: KeyPair) -> ssl.SSLContext:
    """A TLS 1.2+ server context holding ``pair`` (the ssl module loads keys from files only:
    a private temporary folder, removed at once)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    with tempfile.TemporaryDirectory(prefix="kinrun-tls-") as tmp:
        cert, key = Path(tmp, "c.pem"), Path(tmp, "k.pem")
        cert.write_bytes(pair.cert)
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(pair.key)
        ctx.load_cert_chain(cert, key)
    return ctx


# -- certificates (the ``cryptography`` library) ----------------------------------------------


def _new_ca(now: float) -> tuple[bytes, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kinrun-ca")])
    builder = (_builder(name, name, key.public_key(), now, CA_VALIDITY)
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                            False), critical=True))
    return _pem(builder.sign(key, _sha256()), key)


def _new_leaf(ca: tuple[bytes, bytes], hosts: Sequence[str], now: float,
              validity: float) -> tuple[bytes, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_cert = x509.load_pem_x509_certificate(ca[0])
    ca_key = serialization.load_pem_private_key(ca[1], password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.IPAddress(ipaddress.ip_address(h)) if _is_ip(h) else x509.DNSName(h)
             for h in hosts]
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0][:64])])  # X.509's
    # upper bound; clients check the SANs, so a long name (SVC.NS.svc.cluster.local) is cut
    builder = (_builder(subject, ca_cert.subject, key.public_key(), now, validity)
               .add_extension(x509.SubjectAlternativeName(names), critical=False)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                              critical=False))
    return _pem(builder.sign(ca_key, _sha256()), key)  # type: ignore[arg-type]


def _builder(subject: object, issuer: object, public_key: object, now: float,
             validity: float) -> object:
    from cryptography import x509

    start = dt.datetime.fromtimestamp(now - 300, dt.timezone.utc)  # 5 min of clock skew
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
            .public_key(public_key).serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(dt.datetime.fromtimestamp(now + validity, dt.timezone.utc)))


def _sha256() -> object:
    from cryptography.hazmat.primitives import hashes

    return hashes.SHA256()


def _pem(cert: object, key: object) -> tuple[bytes, bytes]:
    from cryptography.hazmat.primitives import serialization

    return (cert.public_bytes(serialization.Encoding.PEM),  # type: ignore[attr-defined]
            key.private_bytes(serialization.Encoding.PEM,  # type: ignore[attr-defined]
                              serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def _check_pair(cert: bytes, key: bytes, where: str) -> float:
    """The certificate's notAfter (epoch seconds); TLSError when the two do not load or do not
    belong together."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        leaf = x509.load_pem_x509_certificate(cert)
        private = serialization.load_pem_private_key(key, password=None)
    except (ValueError, TypeError) as exc:
        raise TLSError(f"not a PEM certificate and key: {type(exc).__name__}", where) from None
    if leaf.public_key().public_bytes(serialization.Encoding.DER,
                                      serialization.PublicFormat.SubjectPublicKeyInfo) != \
            private.public_key().public_bytes(serialization.Encoding.DER,
                                              serialization.PublicFormat.SubjectPublicKeyInfo):
        raise TLSError(f"{KEY_FILE} is not the key of {CERT_FILE}", where)
    return leaf.not_valid_after_utc.timestamp()


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
