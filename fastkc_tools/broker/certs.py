"""Throw-away TLS material for the local broker's SSL / SASL_SSL listeners.

A fresh CA per start, a broker certificate for 127.0.0.1 and localhost (clients
verify the host name, so both must be in the SAN), and a client certificate
for the mTLS listener. Everything is PEM, which Kafka reads directly
(ssl.keystore.type=PEM): no keytool, no store passwords. Keys are unencrypted
PKCS#8 because Kafka's PEM keystore expects PKCS#8 and these are test keys.

For the client's TLS options (ssl_password, ssl_crlfile) the same run also
writes the client key again, PKCS#8-encrypted under a random password, and
two CRLs signed by the CA: one empty, one revoking the broker's certificate.
The CA's key is never written, so they must be made here.
"""
import datetime
import ipaddress
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class TlsFiles:
    ca: str  # CA certificate: the clients' and the broker's truststore
    broker_keystore: str  # broker key + certificate chain (Kafka's PEM keystore)
    client_cert: str  # client certificate (for the SSL listener, which requires one)
    client_key: str  # its PKCS#8 private key
    # the same key, PKCS#8 encrypted (AES-256-CBC, PBKDF2) under client_key_password
    client_key_encrypted: str = ""
    client_key_password: str = ""  # random per start: the test's ssl_password
    crl_empty: str = ""  # a CRL from the CA revoking nothing
    crl_broker_revoked: str = ""  # a CRL from the CA listing the broker's certificate

    def as_dict(self) -> dict[str, str]:
        return {
            "ca": self.ca,
            "broker_keystore": self.broker_keystore,
            "client_cert": self.client_cert,
            "client_key": self.client_key,
            "client_key_encrypted": self.client_key_encrypted,
            "client_key_password": self.client_key_password,
            "crl_empty": self.crl_empty,
            "crl_broker_revoked": self.crl_broker_revoked,
        }


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "fastkc test"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _key() -> ec.EllipticCurvePrivateKey:
    # P-256 keys are generated in microseconds; RSA-2048 takes noticeably longer.
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _pem_key_encrypted(key: ec.EllipticCurvePrivateKey, password: str) -> bytes:
    # BestAvailableEncryption writes PKCS#8 "ENCRYPTED PRIVATE KEY" (PBES2),
    # which OpenSSL, Java and librdkafka all read.
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(password.encode("ascii")),
    )


def _crl(ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, revoked: Sequence[x509.Certificate],
         now: datetime.datetime, days: int) -> bytes:
    builder = (
        x509.CertificateRevocationListBuilder()
        .issuer_name(ca_cert.subject)
        .last_update(now - datetime.timedelta(hours=1))
        .next_update(now + datetime.timedelta(days=days))
    )
    for cert in revoked:
        builder = builder.add_revoked_certificate(
            x509.RevokedCertificateBuilder()
            .serial_number(cert.serial_number)
            .revocation_date(now - datetime.timedelta(minutes=5))
            .build()
        )
    return builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _write(path: str, data: bytes) -> None:
    # Private keys too: the folder is the user's own cache; 0600 keeps other users out.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def generate(directory: str, *, days: int = 30) -> TlsFiles:
    """Write ca.pem, broker.pem (key + chain), client.pem, client.key,
    client-encrypted.key, crl-empty.pem and crl-broker-revoked.pem into
    `directory` and return their paths (and the encrypted key's password)."""
    os.makedirs(directory, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    # Back-dated by an hour so a small clock skew does not make them "not yet valid".
    not_before = now - datetime.timedelta(hours=1)
    not_after = now + datetime.timedelta(days=days)

    ca_key = _key()
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("fastkc test CA"))
        .issuer_name(_name("fastkc test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(common_name: str, usage: x509.ObjectIdentifier,
             san: list[x509.GeneralName] | None) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        key = _key()
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before)
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                critical=False,
            )
        )
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return key, builder.sign(ca_key, hashes.SHA256())

    broker_key, broker_cert = leaf(
        "localhost",
        ExtendedKeyUsageOID.SERVER_AUTH,
        [x509.DNSName("localhost"), x509.IPAddress(ipaddress.IPv4Address("127.0.0.1"))],
    )
    client_key, client_cert = leaf("fastkc-client", ExtendedKeyUsageOID.CLIENT_AUTH, None)

    files = TlsFiles(
        ca=os.path.join(directory, "ca.pem"),
        broker_keystore=os.path.join(directory, "broker.pem"),
        client_cert=os.path.join(directory, "client.pem"),
        client_key=os.path.join(directory, "client.key"),
        client_key_encrypted=os.path.join(directory, "client-encrypted.key"),
        client_key_password=secrets.token_urlsafe(12),
        crl_empty=os.path.join(directory, "crl-empty.pem"),
        crl_broker_revoked=os.path.join(directory, "crl-broker-revoked.pem"),
    )
    _write(files.ca, _pem_cert(ca_cert))
    _write(files.broker_keystore, _pem_key(broker_key) + _pem_cert(broker_cert) + _pem_cert(ca_cert))
    _write(files.client_cert, _pem_cert(client_cert))
    _write(files.client_key, _pem_key(client_key))
    _write(files.client_key_encrypted, _pem_key_encrypted(client_key, files.client_key_password))
    _write(files.crl_empty, _crl(ca_cert, ca_key, [], now, days))
    _write(files.crl_broker_revoked, _crl(ca_cert, ca_key, [broker_cert], now, days))
    return files
