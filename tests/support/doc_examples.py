"""The docs site's Python examples, found and run against a real broker.

Every ```python block under docs/ is an example. A block runs unless the
line before it is a marker comment:

    <!-- example: not run: REASON -->   shown, never run (REASON says what covers it)
    <!-- example: spark -->            run by tests/spark/ with its SparkSession as `spark`

An example runs as written but for the names the test must own: the
bootstrap address ("localhost:9092", "broker:9092") becomes the test
broker's, the topics "events" and "jobs" get the test's unique suffix, and
every `group_id="..."` the example's own too (so no example starts where
another committed, and a rerun against the same broker starts clean), and
relative output paths resolve in a temporary folder. The namespace gives it
`handle(*values)` (records each call, so the test can demand that the
example handled records) and `blob` (one magic-2 record batch) for the
decoding page.
"""
import dataclasses
import os
import re

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs")

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_MARKER = re.compile(r"<!--\s*example:\s*(.*?)\s*-->\s*$")
_GROUP_ID = re.compile(r'group_id="([^"]+)"')


@dataclasses.dataclass(frozen=True)
class Example:
    page: str        # path under docs/
    line: int        # line of the opening fence
    code: str
    marker: str      # "" (run), "spark", or "not run: ..."

    @property
    def name(self):
        return "{0}:{1}".format(self.page, self.line)


def examples():
    found = []
    for folder, _, files in os.walk(DOCS):
        for file in sorted(files):
            if not file.endswith(".md"):
                continue
            path = os.path.join(folder, file)
            text = open(path, encoding="utf-8").read()
            for match in _BLOCK.finditer(text):
                before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
                marker = _MARKER.search(before)
                found.append(Example(page=os.path.relpath(path, DOCS), line=text.count("\n", 0, match.start()) + 1,
                                     code=match.group(1), marker=marker.group(1) if marker else ""))
    return sorted(found, key=lambda e: (e.page, e.line))


def localise(code, *, bootstrap, suffix, group_suffix=None):
    """The example with the test's broker, topics and groups in place of the docs' names."""
    code = code.replace('"localhost:9092"', repr(bootstrap)).replace('"broker:9092"', repr(bootstrap))
    for topic in ("events", "jobs"):
        code = code.replace('"{0}"'.format(topic), repr(topic_name(topic, suffix)))
        code = code.replace("[{0!r}]".format(topic), repr([topic_name(topic, suffix)]))
    return _GROUP_ID.sub(lambda m: "group_id={0!r}".format(group_name(m.group(1), group_suffix or suffix)), code)


def topic_name(topic, suffix):
    return "{0}-{1}".format(topic, suffix)


def group_name(group, suffix):
    return "{0}-{1}".format(group, suffix)


def group_ids(code):
    return _GROUP_ID.findall(code)


class Handled:
    """`handle` for the examples: counts calls, returns True (a handler that succeeded)."""

    def __init__(self):
        self.calls = []

    def __call__(self, *values):
        self.calls.append(values)
        return True


def example_suffix(example, suffix):
    """The suffix of an example's group ids: two pages may name the same group."""
    return "{0}-{1}-{2}".format(suffix, example.page.replace("/", "-").replace(".md", ""), example.line)


def run(example, *, bootstrap, suffix, workdir, extra=None, replace=()):
    """Run one example inside `workdir` in the namespace `extra` (fresh when
    None), after the (old, new) text replacements `replace` (for what
    localise cannot know, such as paths a JVM resolves against its own
    working directory); returns its Handled."""
    handled = Handled()
    # `extra` is the example's namespace itself, so the caller can read what it made
    namespace = extra if extra is not None else {}
    namespace.update({"__name__": "__doc_example__", "handle": handled})
    source = localise(example.code, bootstrap=bootstrap, suffix=suffix, group_suffix=example_suffix(example, suffix))
    for old, new in replace:
        assert old in source, "{0} no longer holds {1!r}".format(example.name, old)
        source = source.replace(old, new)
    code = compile(source, example.name, "exec")
    previous = os.getcwd()
    os.chdir(workdir)
    try:
        exec(code, namespace)
    finally:
        os.chdir(previous)
    return handled
