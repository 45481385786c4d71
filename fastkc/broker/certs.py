"""Throw-away TLS material for the local broker's SSL / SASL_SSL listeners.

A fresh CA per start, a broker certificate for 127.0.0.1 and localhost (clients
verify the host name, so both must be in the SAN), and a client certificate
for the mTLS listener. Everything is PEM, which Kafka reads directly
(ssl.keystore.type=PEM): no keytool, no store passwords. Keys are unencrypted
PKCS#8 because Kafka's PEM keystore expects PKCS#8 and these are test keys.
"""
import datetime
import ipaddress
import os
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

    def as_dict(self):
        return {
            "ca": self.ca,
            "broker_keystore": self.broker_keystore,
            "client_cert": self.client_cert,
            "client_key": self.client_key,
        }


def _name(common_name):
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "fastkc test"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _key():
    # P-256 keys are generated in microseconds; RSA-2048 takes noticeably longer.
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key):
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _pem_cert(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


def _write(path, data):
    # Private keys too: the folder is the user's own cache; 0600 keeps other users out.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def generate(directory, *, days=30):
    """Write ca.pem, broker.pem (key + chain), client.pem, client.key into
    `directory` and return their paths."""
    os.makedirs(directory, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
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

    def leaf(common_name, usage, san):
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
    )
    _write(files.ca, _pem_cert(ca_cert))
    _write(files.broker_keystore, _pem_key(broker_key) + _pem_cert(broker_cert) + _pem_cert(ca_cert))
    _write(files.client_cert, _pem_cert(client_cert))
    _write(files.client_key, _pem_key(client_key))
    return files
