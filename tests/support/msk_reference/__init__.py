"""AWS's reference AWS_MSK_IAM signer, for the payload comparison test.

`pom.xml` names AWS's library (software.amazon.msk:aws-msk-iam-auth) from
Maven Central; `MskPayload.java` runs its payload generator with a fixed
clock. `ensure()` resolves the jars once with mvn into
<fastkc cache>/msk-iam-auth-<version>/lib (~50 jars, ~10 s the first time,
offline afterwards) and compiles MskPayload.java with javac there;
`payload(...)` runs it. scripts/setup.sh calls `python3 -m
tests.support.msk_reference` so CI resolves it up front.
"""
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

from fastkc_tools.broker.resolve import _DEPENDENCY_PLUGIN, cache_root

HERE = os.path.dirname(os.path.abspath(__file__))
POM = os.path.join(HERE, "pom.xml")
SOURCE = os.path.join(HERE, "MskPayload.java")
_MARKER = ".resolved"


class ReferenceUnavailable(Exception):
    """No mvn / java / javac, or Maven Central unreachable on the first run."""


def library_version():
    with open(POM, encoding="utf-8") as fh:
        pom = fh.read()
    match = re.search(r"<artifactId>aws-msk-iam-auth</artifactId>\s*<version>([^<]+)</version>", pom)
    return match.group(1)


def _digest(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()[:16]


def ensure():
    """The classpath of the compiled reference program (resolving and
    compiling on first use); ReferenceUnavailable says why not."""
    home = os.path.join(cache_root(), "msk-iam-auth-" + library_version())
    lib = os.path.join(home, "lib")
    classes = os.path.join(home, "classes-" + _digest(SOURCE))
    for tool in ("java", "javac", "mvn"):
        if shutil.which(tool) is None and not (tool == "mvn" and os.path.exists(os.path.join(lib, _MARKER))):
            raise ReferenceUnavailable("no `{0}` on PATH".format(tool))
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, ".lock"), "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)  # several pytest processes may arrive at once
        marker = os.path.join(lib, _MARKER)
        if not (os.path.exists(marker) and open(marker).read().strip() == _digest(POM)):
            staging = "{0}.tmp-{1}".format(lib, os.getpid())
            shutil.rmtree(staging, ignore_errors=True)
            proc = subprocess.run(
                ["mvn", "-q", "-B", "-f", POM, _DEPENDENCY_PLUGIN + ":copy-dependencies", "-DincludeScope=runtime",
                 "-DoutputDirectory=" + staging], capture_output=True, text=True, timeout=900)
            if proc.returncode != 0 or not any(n.startswith("aws-msk-iam-auth-") for n in os.listdir(staging)):
                shutil.rmtree(staging, ignore_errors=True)
                tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
                raise ReferenceUnavailable("mvn could not resolve aws-msk-iam-auth (exit {0}):\n{1}".format(
                    proc.returncode, tail))
            with open(os.path.join(staging, _MARKER), "w") as fh:
                fh.write(_digest(POM) + "\n")
            shutil.rmtree(lib, ignore_errors=True)
            os.rename(staging, lib)
        if not os.path.exists(os.path.join(classes, "MskPayload.class")):
            staging = "{0}.tmp-{1}".format(classes, os.getpid())
            shutil.rmtree(staging, ignore_errors=True)
            proc = subprocess.run(["javac", "-nowarn", "-d", staging, "-cp", os.path.join(lib, "*"), SOURCE],
                                  capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                shutil.rmtree(staging, ignore_errors=True)
                raise ReferenceUnavailable("javac MskPayload.java failed:\n" + proc.stderr[-2000:])
            os.rename(staging, classes)
    return os.path.join(lib, "*") + os.pathsep + classes


AGENT_SOURCE = os.path.join(HERE, "MskIamBrokerAgent.java")


def broker_agent(kafka_lib):
    """(the -javaagent jar of MskIamBrokerAgent.java, the SDK jar folder it
    loads): an AWS_MSK_IAM server side for a real Kafka broker, built once
    against Kafka's jars (`kafka_lib`) and the AWS SDK resolved by ensure()."""
    ensure()
    home = os.path.join(cache_root(), "msk-iam-auth-" + library_version())
    lib = os.path.join(home, "lib")
    agent = os.path.join(home, "broker-agent-{0}.jar".format(_digest(AGENT_SOURCE)))
    with open(os.path.join(home, ".lock"), "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        if not os.path.exists(agent):
            build = "{0}.build-{1}".format(agent, os.getpid())
            shutil.rmtree(build, ignore_errors=True)
            os.makedirs(build)
            classpath = os.pathsep.join((os.path.join(kafka_lib, "*"), os.path.join(lib, "*")))
            proc = subprocess.run(["javac", "-nowarn", "-d", os.path.join(build, "classes"), "-cp", classpath,
                                   AGENT_SOURCE], capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                shutil.rmtree(build, ignore_errors=True)
                raise ReferenceUnavailable("javac MskIamBrokerAgent.java failed:\n" + proc.stderr[-2000:])
            with open(os.path.join(build, "manifest.txt"), "w") as fh:
                fh.write("Premain-Class: MskIamBrokerAgent\n")
            proc = subprocess.run(["jar", "cfm", agent + ".tmp", os.path.join(build, "manifest.txt"),
                                   "-C", os.path.join(build, "classes"), "."], capture_output=True, text=True,
                                  timeout=120)
            shutil.rmtree(build, ignore_errors=True)
            if proc.returncode != 0:
                raise ReferenceUnavailable("jar failed: " + proc.stderr[-2000:])
            os.rename(agent + ".tmp", agent)
    return agent, lib


def payload(classpath, host, access_key, secret_key, token, epoch_seconds, user_agent, region=None):
    """(the payload's bytes signed at epoch_seconds, the payload of the
    library's untouched public path signed now, parsed). The library takes
    the region from an MSK host name; for other hosts from AWS_REGION
    (`region`, its DefaultAwsRegionProviderChain)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    if region is not None:
        env["AWS_REGION"] = region
    proc = subprocess.run(
        ["java", "-cp", classpath, "MskPayload", host, access_key, secret_key, token if token else "-",
         str(int(epoch_seconds)), user_agent], capture_output=True, timeout=120, env=env)
    if proc.returncode != 0:
        raise AssertionError("MskPayload failed (exit {0}): {1}".format(proc.returncode, proc.stderr[-2000:]))
    lines = proc.stdout.decode("utf-8").splitlines()
    assert len(lines) == 2, proc.stdout
    return lines[0].encode("utf-8"), json.loads(lines[1])



def main():
    try:
        ensure()
    except ReferenceUnavailable as exc:
        print("setup: warning: aws-msk-iam-auth reference signer unavailable (tests/unit/test_msk_iam_reference.py "
              "will skip): {0}".format(exc), file=sys.stderr)
        return 1
    return 0
