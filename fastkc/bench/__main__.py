"""`fastkc bench` (also `python -m fastkc.bench`): one point of every client
(driver.py) or, with --curve, several datasets (curves.py)."""
import argparse
import sys
from collections.abc import Callable, Sequence

from fastkc.bench import curves, driver


def _quiet(message: str) -> None:
    pass


def run(args: argparse.Namespace, log: Callable[[str], None] = driver.log_to_stderr) -> int:
    if args.quiet:
        log = _quiet
    if args.curve:
        return curves.run(args, log)
    return driver.run(args, log)


def main(argv: Sequence[str] | None = None) -> int:
    return run(driver.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
