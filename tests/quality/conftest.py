"""The quality gates (tests/quality/): mypy, ruff, the compiled modules' stubs,
the import graph, `fastkc bench` outside a checkout, the tests' own layout.
They read the repository, never a broker; what they share (the repository's
root, running a tool) is in tests/support/repo.py."""
