"""Issue 10, TLS parity without a broker: the SSLContext fastkc builds from the
ssl_* keys against the one kafka-python 3.0.12 builds
(kafka.net.transport.KafkaSSLTransport._build_ssl_context), and ssl_password's
failure modes. The real-broker half is tests/integration/test_tls_parity.py."""
import os
import ssl
import sys
import time

import pytest

from fastkc import errors
from fastkc.config import build_ssl_context, consumer_config


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    from fastkc_tools.broker import certs

    return certs.generate(str(tmp_path_factory.mktemp("tls-config")))


def _kafka_python_context(**configs):
    from kafka.net.transport import KafkaSSLTransport

    full = dict(KafkaSSLTransport.DEFAULT_CONFIG)
    full.update(configs)
    return KafkaSSLTransport._build_ssl_context(full)


def _fastkc_context(**configs):
    return build_ssl_context(consumer_config(dict(security_protocol="SSL", **configs)))


def _shape(context):
    return dict(minimum_version=context.minimum_version, maximum_version=context.maximum_version,
                check_hostname=context.check_hostname, verify_mode=context.verify_mode,
                verify_flags=context.verify_flags, options=context.options, protocol=context.protocol,
                store=context.cert_store_stats(), cas=context.get_ca_certs(),
                ciphers=[c["name"] for c in context.get_ciphers()])


@pytest.mark.parametrize("variant", ["system-store", "cafile", "mtls", "no-hostname-check", "encrypted-key"])
def test_context_matches_kafka_python(tls, variant):
    configs = {
        "system-store": {},
        "cafile": {"ssl_cafile": tls.ca},
        "mtls": {"ssl_cafile": tls.ca, "ssl_certfile": tls.client_cert, "ssl_keyfile": tls.client_key},
        "no-hostname-check": {"ssl_cafile": tls.ca, "ssl_check_hostname": False},
        "encrypted-key": {"ssl_cafile": tls.ca, "ssl_certfile": tls.client_cert,
                          "ssl_keyfile": tls.client_key_encrypted, "ssl_password": tls.client_key_password},
    }[variant]
    ours = _shape(_fastkc_context(**configs))
    assert ours == _shape(_kafka_python_context(**configs))
    # what that shape is, stated (so a change on both sides is noticed too)
    assert ours["minimum_version"] == ssl.TLSVersion.TLSv1_2
    assert ours["verify_mode"] == ssl.CERT_REQUIRED  # even without the host name check
    assert ours["check_hostname"] is configs.get("ssl_check_hostname", True)


def test_crlfile_checks_the_leaf(tls):
    context = _fastkc_context(ssl_cafile=tls.ca, ssl_crlfile=tls.crl_broker_revoked)
    assert context.verify_flags & ssl.VERIFY_CRL_CHECK_LEAF
    # the leaf only: CHECK_CHAIN's bits include LEAF's
    assert context.verify_flags & ssl.VERIFY_CRL_CHECK_CHAIN == ssl.VERIFY_CRL_CHECK_LEAF
    assert context.cert_store_stats()["crl"] == 1
    # kafka-python 3.0.12 documents the same but cannot do it: its call is a TypeError
    with pytest.raises(TypeError, match="crl"):
        _kafka_python_context(ssl_cafile=tls.ca, ssl_crlfile=tls.crl_broker_revoked)


def test_ciphers_are_applied(tls):
    context = _fastkc_context(ssl_cafile=tls.ca, ssl_ciphers="ECDHE-ECDSA-AES256-GCM-SHA384")
    names = {c["name"] for c in context.get_ciphers() if c["protocol"] != "TLSv1.3"}
    assert names == {"ECDHE-ECDSA-AES256-GCM-SHA384"}


def test_ssl_context_is_returned_untouched(tls, tmp_path):
    mine = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    before = _shape(mine)
    # every other ssl_* key is ignored, even ones that could not be loaded
    config = consumer_config(dict(security_protocol="SSL", ssl_context=mine, ssl_cafile=str(tmp_path / "absent.pem"),
                                  ssl_crlfile=tls.crl_broker_revoked, ssl_ciphers="NO-SUCH-CIPHER",
                                  ssl_check_hostname=False))
    assert build_ssl_context(config) is mine
    assert _shape(mine) == before


@pytest.mark.parametrize("form", ["str", "bytes", "callable-str", "callable-bytes"])
def test_ssl_password_forms(tls, form):
    password = tls.client_key_password
    value = {"str": password, "bytes": password.encode(), "callable-str": lambda: password,
             "callable-bytes": lambda: password.encode()}[form]
    context = _fastkc_context(ssl_cafile=tls.ca, ssl_certfile=tls.client_cert, ssl_keyfile=tls.client_key_encrypted,
                              ssl_password=value)
    assert context.cert_store_stats()["x509_ca"] == 1


class _Secret(Exception):
    pass


def _raises(exc):
    def give():
        raise exc

    return give


@pytest.mark.parametrize("password, expect", [
    ("wrong-password-1", "does not decrypt"),
    (None, "encrypted and no ssl_password"),
    (_raises(_Secret("wrong-password-1 leaked")), "callable raised _Secret"),
    (lambda: 1234, "returned int"),
], ids=["wrong", "missing", "callable-raises", "callable-returns-int"])
def test_ssl_password_failures_name_the_key_not_the_secret(tls, password, expect):
    with pytest.raises(errors.KafkaConfigurationError, match="ssl_password") as caught:
        _fastkc_context(ssl_cafile=tls.ca, ssl_certfile=tls.client_cert, ssl_keyfile=tls.client_key_encrypted,
                        ssl_password=password)
    assert expect in str(caught.value)
    assert "wrong-password-1" not in str(caught.value)
    assert tls.client_key_password not in str(caught.value)


def test_key_of_another_certificate_is_not_blamed_on_the_password(tls, tmp_path):
    from fastkc_tools.broker import certs

    other = certs.generate(str(tmp_path))
    with pytest.raises(errors.KafkaConfigurationError, match="KEY_VALUES_MISMATCH") as caught:
        _fastkc_context(ssl_cafile=tls.ca, ssl_certfile=tls.client_cert, ssl_keyfile=other.client_key_encrypted,
                        ssl_password=other.client_key_password)
    assert "does not decrypt" not in str(caught.value)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pty semantics checked on Linux")
def test_encrypted_key_without_password_never_prompts_on_a_terminal(tls):
    # Given password=None, OpenSSL asks on the controlling terminal
    # ("Enter PEM pass phrase:") and waits: a consumer constructor that
    # hangs. Run the constructor's check in a child that has a terminal.
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: its controlling terminal is the pty
        try:
            _fastkc_context(ssl_cafile=tls.ca, ssl_certfile=tls.client_cert, ssl_keyfile=tls.client_key_encrypted)
        except errors.KafkaConfigurationError as exc:
            os.write(1, ("RAISED " + str(exc) + "\n").encode())
            os._exit(0)
        except BaseException:
            os._exit(2)
        os._exit(3)
    output = b""
    deadline = time.monotonic() + 20.0
    status = None
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        try:
            import select

            if select.select([fd], [], [], 0.1)[0]:
                output += os.read(fd, 4096)
        except OSError:
            pass
        if done:
            break
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    os.close(fd)
    assert b"pass phrase" not in output, output
    assert b"RAISED" in output and b"ssl_password" in output, output
    assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, output)


def test_certfile_without_keyfile_takes_the_key_from_the_certfile(tls, tmp_path):
    # load_cert_chain(certfile, None), in kafka-python as here: the key must be in the certfile
    combined = tmp_path / "client-with-key.pem"
    combined.write_bytes(open(tls.client_key, "rb").read() + open(tls.client_cert, "rb").read())
    ours = _fastkc_context(ssl_cafile=tls.ca, ssl_certfile=str(combined))
    assert _shape(ours) == _shape(_kafka_python_context(ssl_cafile=tls.ca, ssl_certfile=str(combined)))
    with pytest.raises(errors.KafkaConfigurationError, match="ssl_certfile"):
        _fastkc_context(ssl_cafile=tls.ca, ssl_certfile=tls.client_cert)  # no key anywhere
    with pytest.raises(ssl.SSLError):
        _kafka_python_context(ssl_cafile=tls.ca, ssl_certfile=tls.client_cert)
