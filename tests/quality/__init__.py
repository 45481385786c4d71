"""The quality gates run as tests: type checking, lint, stubs, the import graph, the bench outside a checkout."""
