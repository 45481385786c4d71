"""mypy over fastkc/ with the repository's configuration (pyproject.toml:
strict over every module; no module is exempt)."""
import tomllib

from tests.support.repo import ROOT, run_tool


def test_mypy_strict_passes():
    code, out = run_tool(["mypy", "--config-file", "pyproject.toml"])
    assert code == 0, out


def _mypy_config():
    with open(ROOT + "/pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["mypy"]


def test_no_module_is_exempt():
    # The to-do lists are gone (issue 12): no module of ours has its errors
    # ignored or its unannotated functions let through, and the only
    # overrides are for third-party packages without type information.
    mypy = _mypy_config()
    assert "untyped_calls_exclude" not in mypy
    for override in mypy.get("overrides", []):
        assert set(override) == {"module", "ignore_missing_imports"}, override
        assert [m for m in override["module"] if m.split(".")[0] in ("fastkc", "pyspark_fastkc")] == []


def test_strict_is_on_for_the_package():
    with open(ROOT + "/pyproject.toml", "rb") as f:
        mypy = tomllib.load(f)["tool"]["mypy"]
    assert mypy["strict"] is True
    assert "fastkc" in mypy["files"]


def test_strict_finds_what_it_should(tmp_path):
    # the configuration is strict where it applies: an unannotated function
    # and a wrong return type are both errors
    bad = tmp_path / "bad_module.py"
    bad.write_text("def f(x):\n    return x\n\n\ndef g() -> int:\n    return 'no'\n")
    # its own cache: the other mypy test may be running beside it (xdist),
    # and two mypy processes writing one cache can fail with exit code 2
    code, out = run_tool(["mypy", "--config-file", ROOT + "/pyproject.toml", "--no-incremental",
                          "--cache-dir", str(tmp_path / "mypy-cache"), str(bad)])
    assert code == 1, out
    assert "[no-untyped-def]" in out and "[return-value]" in out, out


def test_a_configuration_key_is_checked_by_name_and_type(tmp_path):
    # fastkc.config.Config is typed key by key (config_schema.ConsumerConfig):
    # a misspelt key, or a value used as the wrong type, is a mypy error
    bad = tmp_path / "bad_config_use.py"
    bad.write_text("from fastkc.config import Config\n\n\n"
                   "def wait(config: Config) -> int:\n    return config[\"fetch_max_wait\"]\n\n\n"
                   "def name(config: Config) -> int:\n    return config[\"client_id\"]\n")
    # the repository's incremental cache: test_mypy_strict_passes (the first
    # test of this file, same worker) has just analysed fastkc, so only this
    # file is read again
    code, out = run_tool(["mypy", "--config-file", ROOT + "/pyproject.toml", str(bad)])
    assert code == 1, out
    assert "[typeddict-item]" in out and "fetch_max_wait" in out, out
    assert "[return-value]" in out, out
