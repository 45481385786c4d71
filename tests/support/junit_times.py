"""Where a pytest session's time went, file by file, from its junit XML
(scripts/test.sh prints it after the broker session, so the scheduling of
tests/support/xdist_affinity.py is chosen on measured times).

    python -m tests.support.junit_times build/ci/brokers.xml [TOP]

Each line: the summed test time of one scope (a folder or shared-broker group
of xdist_affinity, else a file), then its files. Setup time of a session
fixture is counted in the test that first asked for it, as junit reports it.
"""
import collections
import os
import sys
import xml.etree.ElementTree as ET

from tests.support.xdist_affinity import scope_of


def file_seconds(junit_path):
    """{test file path: summed seconds} from a junit XML written by pytest."""
    seconds = collections.Counter()
    for case in ET.parse(junit_path).getroot().iter("testcase"):
        # classname is the dotted module path (plus a class): tests.faults.test_soak
        parts = case.get("classname", "").split(".")
        while parts and not parts[-1].startswith("test_"):
            parts.pop()
        path = "/".join(parts) + ".py" if parts else case.get("file", "?")
        seconds[path] += float(case.get("time") or 0.0)
    return seconds


def main(argv):
    junit_path = argv[1]
    top = int(argv[2]) if len(argv) > 2 else 25
    per_file = file_seconds(junit_path)
    scopes = collections.defaultdict(list)
    for path, secs in per_file.items():
        scopes[scope_of(path, os.getcwd())].append((secs, path))
    ranked = sorted(scopes.items(), key=lambda item: -sum(s for s, _ in item[1]))
    total = sum(per_file.values())
    print("== test time by scope ({0:.0f} s in all, summed over the workers):".format(total))
    for scope, files in ranked[:top]:
        files.sort(reverse=True)
        shown = ", ".join("{0} {1:.0f}s".format(os.path.basename(p), s) for s, p in files[:6])
        print("==   {0:7.0f}s  {1}: {2}".format(sum(s for s, _ in files), scope, shown))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
