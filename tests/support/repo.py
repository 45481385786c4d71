"""Where the repository is, and running its tools, for tests that read the
repository itself (tests/quality/, the layout checks)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_tool(args, timeout=600):
    """`python -m <args>` from the repository root; (returncode, combined output)."""
    proc = subprocess.run([sys.executable, "-m"] + list(args), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def load_script(name):
    """scripts/<name>.py as a module (the generators are scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "scripts", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
