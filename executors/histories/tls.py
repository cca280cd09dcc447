"""Certificates for one run: a certificate authority made for the run, and from it a certificate for every node
(server and peer, for 127.0.0.1) and one for the run's clients. Every connection to the system under test is
mutual TLS against that authority, so only this run's processes, which can read its private directory, can talk
to the nodes or to the clients' node, and a later run's nodes never accept an earlier run's."""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pair:
    """A certificate and its key, as PEM files."""

    cert: str
    key: str


@dataclass(frozen=True)
class RunCerts:
    """The authority's certificate and the pairs issued by it."""

    ca: str
    nodes: dict[str, Pair]
    client: Pair


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def make_certs(directory: str, nodes: list[str]) -> RunCerts:
    """Issue the run's certificates into `directory` (which must be private to this user)."""
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=2)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (x509.CertificateBuilder().subject_name(_name("lockstep run CA")).issuer_name(_name("lockstep run CA"))
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(end)
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                            crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
               .sign(ca_key, hashes.SHA256()))
    ca_path = os.path.join(directory, "ca.pem")
    _write(ca_path, ca_cert.public_bytes(serialization.Encoding.PEM))

    def issue(cn: str) -> Pair:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca_cert.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(end)
                .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                            x509.DNSName("localhost")]), critical=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                               critical=False)
                .sign(ca_key, hashes.SHA256()))
        pair = Pair(os.path.join(directory, f"{cn}.pem"), os.path.join(directory, f"{cn}-key.pem"))
        _write(pair.cert, cert.public_bytes(serialization.Encoding.PEM))
        _write(pair.key, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
        return pair

    return RunCerts(ca_path, {n: issue(n) for n in nodes}, issue("client"))
