"""Smoke test of an INSTALLED fastkc (a wheel or an sdist build in a venv).

    <venv>/bin/python scripts/wheel_smoke.py tests/corpus/fetch

Run it from outside the repository: a script's own folder (scripts/) goes on
sys.path, never the current directory, so the repository's fastkc/ (with its
in-place build) cannot answer for the installed one -- and the first check
makes sure of it. Then: the compiled core is the backend, a Fetch response a
real broker sent (tests/corpus) parses in C and every partition decodes to
exactly the records its producer wrote (all five codecs), and the `fastkc`
entry point the wheel installed answers --help.
"""
import base64
import json
import os
import subprocess
import sys
import sysconfig

# The capture read: Fetch v4, read_uncommitted, every codec's topic complete.
CAPTURE = "fetch-v04-uncommitted-full.bin"


def fail(message):
    print("wheel smoke: FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def check_installed():
    import fastkc

    if sys.prefix == sys.base_prefix:
        fail("not running in a virtual environment ({0})".format(sys.executable))
    installed_in = os.path.realpath(sysconfig.get_paths()["platlib"])
    where = os.path.realpath(fastkc.__file__)
    if not where.startswith(installed_in + os.sep):
        fail("fastkc imported from {0}, not from the venv's {1}".format(where, installed_in))
    if fastkc.backend != "c":
        fail("fastkc.backend is {0!r}, not 'c'".format(fastkc.backend))
    return fastkc


def check_corpus(corpus_dir):
    from fastkc import records
    from fastkc._core.fetch import parse_fetch_response

    with open(os.path.join(corpus_dir, "manifest.json"), encoding="utf-8") as fh:
        manifest = json.load(fh)
    capture = next(c for c in manifest["captures"] if c["file"] == CAPTURE)
    with open(os.path.join(corpus_dir, CAPTURE), "rb") as fh:
        response = parse_fetch_response(fh.read(), capture["api_version"])

    def unb64(text):
        return None if text is None else base64.b64decode(text)

    decoded_total = 0
    codecs = set()
    for topic in response.topics:
        produced = manifest["topics"][topic.topic]
        for part in topic.partitions:
            params = capture["partitions"][topic.topic][str(part.partition)]
            got = records.decode_partition(part.records or b"", topic=topic.topic,
                                           partition=part.partition,
                                           fetch_offset=params["fetch_offset"]).records
            want = [r for r in produced["records"]
                    if r["partition"] == part.partition
                    and params["fetch_offset"] <= r["offset"] <= params["complete_through"]]
            if [(r.offset, r.key, r.value) for r in got] != [
                    (r["offset"], unb64(r["key"]), unb64(r["value"])) for r in want]:
                fail("{0}[{1}] did not decode to the produced records".format(topic.topic, part.partition))
            decoded_total += len(got)
            codecs.add(produced["codec"])
    if codecs != {"none", "gzip", "snappy", "lz4", "zstd"} or decoded_total == 0:
        fail("the capture covered codecs {0} and {1} records".format(sorted(codecs), decoded_total))
    return decoded_total, codecs


def check_entry_point():
    # the console script pip generated in this venv, not one on PATH
    script = os.path.join(sysconfig.get_paths()["scripts"], "fastkc")
    run = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=120)
    if run.returncode != 0 or "usage" not in run.stdout.lower():
        fail("`{0} --help` exited {1}: {2}{3}".format(script, run.returncode, run.stdout, run.stderr))


def main():
    if len(sys.argv) != 2:
        fail("usage: wheel_smoke.py CORPUS_DIR (tests/corpus/fetch)")
    fastkc = check_installed()
    decoded_total, codecs = check_corpus(sys.argv[1])
    check_entry_point()
    print("wheel smoke: ok: python {0}, fastkc from {1}, backend c, {2} records of a captured "
          "Fetch response decoded ({3}), `fastkc --help` answered".format(
              sys.version.split()[0], os.path.dirname(fastkc.__file__), decoded_total,
              ", ".join(sorted(codecs))))


if __name__ == "__main__":
    main()
