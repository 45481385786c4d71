"""`fastkc bench` (also `python -m fastkc_tools.bench`): one point of every client
(driver.py) or, with --curve, several datasets (curves.py);
`python -m fastkc_tools.bench report [--quick]` regenerates every table README
quotes, with the commit, machine, load and date beside each (report.py)."""
import argparse
import sys
from collections.abc import Callable, Sequence

from fastkc_tools.bench import curves, driver, report


def _quiet(message: str) -> None:
    pass


def run(args: argparse.Namespace, log: Callable[[str], None] = driver.log_to_stderr) -> int:
    if args.quiet:
        log = _quiet
    if args.curve:
        return curves.run(args, log)
    return driver.run(args, log)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["report"]:
        return report.main(argv[1:])
    return run(driver.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
