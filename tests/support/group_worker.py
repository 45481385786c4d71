"""The group member process now lives in the package, fastkc_tools/bench/group_worker.py
(`fastkc bench-rebalance` spawns it from an installed fastkc); this name stays
for the group tests, which spawn `python -m tests.support.group_worker`."""
import sys

from fastkc_tools.bench.group_worker import main, read_events

__all__ = ["main", "read_events"]

if __name__ == "__main__":
    sys.exit(main())
