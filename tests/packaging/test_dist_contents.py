"""What the built distributions hold (scripts/wheels.sh build makes them).

The sdist must carry every file a build from it needs and nothing generated;
each wheel exactly the package (one interpreter's compiled core, the Python
modules, the typing stubs, the harness's resources, the license) and no junk:
no tests, no build trees, no C sources or objects, no other interpreter's
extension. Both carry PEP 639 license metadata.

The artifacts are read from FASTKC_DIST_DIR (default dist/). Without them the
tests skip; with FASTKC_REQUIRE_WHEELS set (CI, scripts/wheels.sh) they fail.
"""
import email.parser
import fnmatch
import glob
import os
import re
import subprocess
import tarfile
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIST = os.path.abspath(os.environ.get("FASTKC_DIST_DIR") or os.path.join(ROOT, "dist"))
REQUIRED = bool(os.environ.get("FASTKC_REQUIRE_WHEELS", "").strip())


def _artifacts(pattern):
    found = sorted(glob.glob(os.path.join(DIST, pattern)))
    if not found:
        message = "no {0} in {1} (scripts/wheels.sh build makes them)".format(pattern, DIST)
        if REQUIRED:
            pytest.fail(message + "; FASTKC_REQUIRE_WHEELS is set")
        pytest.skip(message)
    return found


def _source_files():
    """The repository's files, as git tracks them (a checkout's untracked
    build products are not sources)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip("not a git checkout: {0}".format(exc))
    return [name for name in out.stdout.decode().split("\0") if name]


def _metadata(text):
    return email.parser.Parser().parsestr(text)


def _check_license_metadata(meta):
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    # PEP 639: the expression replaces the free-text field and the classifiers
    assert meta["License"] is None
    assert not [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]


# --- sdist ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sdist():
    (path,) = _artifacts("fastkc-*.tar.gz")
    with tarfile.open(path) as tar:
        names = tar.getnames()
        top = names[0].split("/")[0]
        pkg_info = tar.extractfile(top + "/PKG-INFO").read().decode()
        license_text = tar.extractfile(top + "/LICENSE").read()
    return {os.path.relpath(n, top) for n in names if n != top}, pkg_info, license_text


def test_sdist_holds_every_file_the_build_reads(sdist):
    names, _, _ = sdist
    # every tracked file of the package and the C kernels (Cython's output is
    # untracked), and what setup.py and the metadata read
    needed = [f for f in _source_files()
              if f.startswith(("csrc/", "fastkc/", "fastkc_tools/"))
              or f in ("setup.py", "pyproject.toml", "MANIFEST.in", "LICENSE", "README.md",
                       "pyspark_fastkc.py")]
    assert any(f.endswith(".inc") for f in needed)  # the list really covers the tables
    assert sorted(set(needed) - names) == []


def test_sdist_ships_no_generated_or_built_files(sdist):
    names, _, _ = sdist
    junk = [n for n in names
            if fnmatch.fnmatch(n, "fastkc/_core/_*.c")  # Cython's output: regenerated at build time
            or n.endswith((".so", ".o", ".a", ".pyc"))
            or n.split("/")[0] in ("build", "dist", "tests", "benchmarks")
            or "__pycache__" in n]
    assert junk == []


def test_sdist_license_metadata(sdist):
    _, pkg_info, license_text = sdist
    _check_license_metadata(_metadata(pkg_info))
    with open(os.path.join(ROOT, "LICENSE"), "rb") as fh:
        assert license_text == fh.read()
    assert b"Apache License" in license_text and b"Version 2.0, January 2004" in license_text


# --- wheels ---------------------------------------------------------------------------------
def _wheels():
    return _artifacts(os.path.join("wheelhouse", "fastkc-*.whl"))


def _wheel_tag(path):
    # fastkc-0.1.0-cp313-cp313-manylinux_2_34_x86_64.whl
    match = re.fullmatch(r"fastkc-[^-]+-(cp3\d+)-(cp3\d+)-(manylinux_\d+_\d+_x86_64(?:\.[\w.]+)?)\.whl",
                         os.path.basename(path))
    assert match, os.path.basename(path)
    return match.group(1)


@pytest.fixture(scope="module")
def wheels():
    out = []
    for path in _wheels():
        with zipfile.ZipFile(path) as zf:
            out.append((path, zf.namelist(), zf.read("fastkc-0.1.0.dist-info/METADATA").decode()))
    return out


def test_each_wheel_holds_the_package_and_nothing_else(wheels):
    sources = _source_files()
    python_files = sorted(f for f in sources
                          if f.startswith(("fastkc/", "fastkc_tools/")) and f.endswith(".py")
                          or f == "pyspark_fastkc.py")
    data_files = sorted(f for f in sources
                        if f.startswith("fastkc/") and f.endswith((".pyi", "py.typed"))
                        or f.startswith(("fastkc_tools/broker/resources/", "fastkc_tools/bench/java/")))
    for path, names, _ in wheels:
        tag = _wheel_tag(path)
        version = "{0}{1}".format(tag[2], tag[3:])  # cp313 -> 313
        extensions = sorted(n for n in names if n.endswith(".so"))
        # one per Cython bridge (setup.py builds every fastkc/_core/*.pyx)
        assert extensions == sorted(
            "fastkc/_core/{0}.cpython-{1}-x86_64-linux-gnu.so".format(os.path.basename(pyx)[:-4], version)
            for pyx in sources if pyx.startswith("fastkc/_core/") and pyx.endswith(".pyx")), os.path.basename(path)
        assert len(extensions) == 5  # _avro, _fetch, _json, _protobuf, _records
        dist_info = sorted(n for n in names if n.startswith("fastkc-0.1.0.dist-info/") and not n.endswith("/"))
        assert dist_info == sorted("fastkc-0.1.0.dist-info/" + n for n in (
            "METADATA", "WHEEL", "RECORD", "entry_points.txt", "top_level.txt", "licenses/LICENSE"))
        files = sorted(n for n in names if not n.endswith("/"))
        expected = sorted(python_files + data_files + extensions + dist_info)
        # listed both ways so a failure names the missing and the extra files
        assert sorted(set(expected) - set(files)) == [], os.path.basename(path)
        assert sorted(set(files) - set(expected)) == [], os.path.basename(path)


def test_one_wheel_per_interpreter(wheels):
    tags = [_wheel_tag(path) for path, _, _ in wheels]
    assert len(tags) == len(set(tags))
    wanted = os.environ.get("FASTKC_REQUIRE_WHEELS", "").split()
    assert set("cp" + w.replace(".", "") for w in wanted) <= set(tags)


def test_wheel_license_metadata_and_entry_point(wheels):
    for path, _names, metadata in wheels:
        meta = _metadata(metadata)
        _check_license_metadata(meta)
        assert meta["Requires-Python"] == ">=3.11"
        with zipfile.ZipFile(path) as zf, open(os.path.join(ROOT, "LICENSE"), "rb") as fh:
            assert zf.read("fastkc-0.1.0.dist-info/licenses/LICENSE") == fh.read()
            assert "fastkc = fastkc.cli:main" in zf.read("fastkc-0.1.0.dist-info/entry_points.txt").decode()
