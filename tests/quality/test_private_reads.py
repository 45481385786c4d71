"""No module reads another module's private names (the rule and how they
are found: tests/support/private_names.py).

The reads that were there when this test was written (issue 22: the front-ends
reaching into KafkaConsumer, the fetcher and the client) were KNOWN, grouped by
the module that reads, with how many times it reads each name; each has since
been replaced by a public API of the owning module, and KNOWN is now empty.
The mechanism stays: a new read fails, and so does an entry that no longer
matches (KNOWN only shrinks; it is not the place to allow a new read).
"""
from tests.support import private_names
from tests.support.repo import ROOT

# reading module -> {private name read from another module: how many reads}
KNOWN: dict[str, dict[str, int]] = {}


def test_no_new_private_read_and_no_stale_entry(capsys):
    found = private_names.counts(private_names.find(ROOT))
    with capsys.disabled():
        print("\ncross-module private reads: {0} (allowed today: {1})".format(
            sum(sum(n.values()) for n in found.values()), sum(sum(n.values()) for n in KNOWN.values())))
    new, stale = [], []
    for module in sorted(set(found) | set(KNOWN)):
        for name in sorted(set(found.get(module, {})) | set(KNOWN.get(module, {}))):
            now, allowed = found.get(module, {}).get(name, 0), KNOWN.get(module, {}).get(name, 0)
            if now > allowed:
                uses = [u.line for u in private_names.find(ROOT) if u.module == module and u.name == name]
                new.append("{0} reads {1} {2}x (allowed {3}), lines {4}".format(module, name, now, allowed, uses))
            elif now < allowed:
                stale.append("{0}: {1} read {2}x, KNOWN says {3}".format(module, name, now, allowed))
    assert not new, "private names read across modules (use a public API):\n" + "\n".join(new)
    assert not stale, "KNOWN is stale (reads removed: shrink it):\n" + "\n".join(stale)


def _uses(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return [(u.module, u.name) for u in private_names.find(str(tmp_path))]


def test_the_rule_on_a_small_package(tmp_path):
    # the check itself can fail: each kind of read is found, the module's own use is not
    found = _uses(tmp_path, {
        "fastkc/__init__.py": "",
        "fastkc/_core.py": "def f():\n    pass\n",
        "fastkc/a.py": "class A:\n    def __init__(self):\n        self._x = 1\n"
                       "    def _m(self):\n        return self._x\n_LIMIT = 3\n",
        "fastkc/b.py": "from fastkc import _core\nfrom fastkc.a import A, _LIMIT\n"
                       "def g(a):\n    return a._x + a._m() + _LIMIT\n",
        "pyspark_fastkc.py": "from fastkc import _core\nimport sys\nsys._getframe()\n",
    })
    assert sorted(found) == [("fastkc.b", "_LIMIT"), ("fastkc.b", "_m"), ("fastkc.b", "_x"),
                             ("pyspark_fastkc", "_core")]


def test_a_name_the_module_also_defines_is_resolved_by_the_receivers_type(tmp_path):
    # module c has its own self._x; reading _x of an object whose class lives
    # in module a is still a read of a's private name, when the type is known
    _uses(tmp_path, {
        "fastkc/__init__.py": "",
        "fastkc/a.py": "class A:\n    def __init__(self):\n        self._x = 1\n",
        "fastkc/c.py": "from typing import TypeVar\nfrom fastkc.a import A\n"
                       "T = TypeVar('T', 'A', 'A')\n"
                       "class C:\n"
                       "    def __init__(self, a: A, t: T):\n"
                       "        self._x = 2\n        self.a = a\n        self.made = A()\n        self.t = t\n"
                       "    def reads(self, other: 'A | None', peer: 'C', anything):\n"
                       "        mine = C(self.a, self.t)\n        held = self.made\n"
                       "        return (other._x, self.a._x, self.made._x, held._x, self.t._x,\n"
                       "                peer._x, mine._x, anything._x, self._x)\n",
    })
    found = [(u.module, u.name, u.line) for u in private_names.find(str(tmp_path))]
    assert found == [("fastkc.c", "_x", 13)] * 5  # the five foreign receivers; line 14's are c's own or unknown
