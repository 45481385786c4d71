"""pytest imports test modules of folders without __init__.py by their
basename (rootdir-relative "rootdir" import mode), so two such modules with
one name stop the whole session at collection ("import file mismatch") -- a
CI run died of it once already. Fail here, with the names, instead."""
import collections
import pathlib

TESTS = pathlib.Path(__file__).resolve().parents[1]


def test_test_module_basenames_are_unique_outside_packages():
    by_name = collections.defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if not (path.parent / "__init__.py").exists():
            by_name[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not clashes, clashes
