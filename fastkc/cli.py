"""The `fastkc` command.

    fastkc broker start [--nodes 3] [--security] [--proxied] [--kafka-version 3.9.x] [--name N | --data-dir D]
                        [--port P]
    fastkc broker stop  [--name N | --data-dir D] [--timeout S]
    fastkc broker status [--name N | --data-dir D] [--json]
    fastkc broker resolve [--kafka-version V ...]
    fastkc demo [--records N] [--record-size B] [--partitions P] [--compression C]
    fastkc bench [--records N] [--record-size B] [--partitions P] [--compression C] [--repeat R] [--clients ...]
    fastkc bench --curve value-size|partitions|codecs|headers|all [--max-records N] [--max-value-bytes B] [--points ...]
    fastkc consume -b HOST:PORT -t TOPIC [-p N] [-o OFFSET] [-G GROUP] [-c N] [-e]
                   [-f FMT | -J | --arrow-ipc F | --parquet F] ...
    fastkc bench-rebalance [--bootstrap HOST:PORT] [--repeat N] [--rate R] [--only fastkc,confluent]

Subcommands are argparse subparsers, each with its own handler, so later
commands (consume, bench) plug in beside `broker`.
"""
import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict


def _add_location_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", default="default",
                        help="broker name; its data folder is ~/.cache/fastkc/run/<name> (default: default)")
    parser.add_argument("--data-dir", default=None,
                        help="data folder to use instead of the one derived from --name")


def _broker_start(args: argparse.Namespace) -> int:
    from fastkc_tools import broker

    def progress(message: str) -> None:
        print("fastkc: " + message, file=sys.stderr, flush=True)

    info = broker.start(
        name=args.name,
        data_dir=args.data_dir,
        nodes=args.nodes,
        security=args.security,
        proxied=args.proxied,
        kafka_version=args.kafka_version,
        port=args.port,
        timeout=args.timeout,
        log=progress,
    )
    progress("ready in {0:.1f}s".format(info.startup_seconds))
    broker.describe(info)
    return 0


def _broker_stop(args: argparse.Namespace) -> int:
    from fastkc_tools import broker

    info = broker.stop(name=args.name, data_dir=args.data_dir, timeout=args.timeout)
    if info is None:
        print("no broker was running")
    else:
        print("stopped {0} node(s) ({1})".format(len(info.nodes), info.bootstrap_servers))
    return 0


def _broker_status(args: argparse.Namespace) -> int:
    from fastkc_tools import broker

    st = broker.status(name=args.name, data_dir=args.data_dir)
    if args.json:
        print(json.dumps({
            "running": st.running,
            "alive": {str(k): v for k, v in st.alive.items()},
            "info": asdict(st.info) if st.info else None,
        }, indent=2, sort_keys=True))
    else:
        print(st.describe())
        if st.info is not None:
            broker.describe(st.info)
    # Like `systemctl status`: non-zero when not running, handy in scripts.
    return 0 if st.running else 3


def _broker_resolve(args: argparse.Namespace) -> int:
    from fastkc_tools import broker

    for version in args.kafka_version or [None]:
        install = broker.resolve_kafka(version, log=lambda m: print("fastkc: " + m, file=sys.stderr, flush=True))
        print("Kafka {0}: {1}".format(install.version, install.lib))
    return 0


def _demo(args: argparse.Namespace) -> int:
    from fastkc_tools import sample_run

    sample_run.run(records=args.records, record_size=args.record_size, partitions=args.partitions,
                   compression=args.compression, bootstrap=args.bootstrap)
    return 0


def _bench(args: argparse.Namespace) -> int:
    from fastkc_tools.bench import __main__ as bench

    return bench.run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fastkc", description="fastkc command-line tools")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    broker_p = commands.add_parser("broker", help="run a local Apache Kafka for tests and benchmarks")
    broker_cmds = broker_p.add_subparsers(dest="broker_command", metavar="ACTION", required=True)

    start_p = broker_cmds.add_parser(
        "start", help="resolve Kafka with mvn, format storage, start, wait until it answers")
    _add_location_args(start_p)
    start_p.add_argument("--nodes", type=int, choices=(1, 3), default=1, help="1 node, or a 3-node cluster")
    start_p.add_argument("--security", action="store_true",
                         help="add SASL_PLAINTEXT, SSL and SASL_SSL listeners with test users and certificates "
                              "(and GSSAPI with a local Kerberos KDC, when MIT Kerberos is installed)")
    start_p.add_argument("--proxied", action="store_true",
                         help="add a PROXIED listener per node that advertises a proxy port chosen up front "
                              "(run a TCP proxy such as toxiproxy from each proxy port to the node's port)")
    start_p.add_argument("--kafka-version", default=None,
                         help="4.3.x (default), 3.9.x, or an exact release such as 4.1.1")
    start_p.add_argument("--port", type=int, default=None,
                         help="PLAINTEXT port of the first node (default: a free port)")
    start_p.add_argument("--timeout", type=float, default=None, help="seconds to wait until ready")
    start_p.set_defaults(handler=_broker_start)

    stop_p = broker_cmds.add_parser("stop", help="stop it (SIGTERM, then SIGKILL after --timeout) and wait for exit")
    _add_location_args(stop_p)
    stop_p.add_argument("--timeout", type=float, default=30.0, help="seconds before SIGKILL (default 30)")
    stop_p.set_defaults(handler=_broker_stop)

    status_p = broker_cmds.add_parser("status", help="running or not, with addresses and credentials")
    _add_location_args(status_p)
    status_p.add_argument("--json", action="store_true", help="machine-readable output")
    status_p.set_defaults(handler=_broker_status)
    resolve_p = broker_cmds.add_parser("resolve", help="resolve Kafka's jars with mvn into the cache, without starting")
    resolve_p.add_argument("--kafka-version", action="append", default=None,
                           help="4.3.x (default), 3.9.x or an exact release; repeat for several")
    resolve_p.set_defaults(handler=_broker_resolve)

    demo_p = commands.add_parser(
        "demo", help="the main job: start the local broker, load a sample dataset, consume it with fastkc")
    demo_p.add_argument("--records", type=int, default=2_000_000)
    demo_p.add_argument("--record-size", type=int, default=100)
    demo_p.add_argument("--partitions", type=int, default=8)
    demo_p.add_argument("--compression", default="lz4", choices=("none", "gzip", "snappy", "lz4", "zstd"))
    demo_p.add_argument("--bootstrap", default=None, help="use this broker instead of the local one")
    demo_p.set_defaults(handler=_demo)

    bench_p = commands.add_parser(
        "bench", help="steady-state throughput of fastkc and every other client on one topic (or, with --curve, "
        "across value sizes, partitions, codecs, headers); tables, JSON, PNG")
    from fastkc_tools.bench import driver, rebalance

    driver.add_arguments(bench_p)  # one definition of the options, shared with the driver
    bench_p.set_defaults(handler=_bench)

    from fastkc import consume

    consume_p = commands.add_parser(
        "consume", help="read topics to stdout (kcat-style formats, JSON lines) or to Arrow IPC / Parquet")
    consume.add_arguments(consume_p)

    rebalance_p = commands.add_parser(
        "bench-rebalance", help="rebalance time of fastkc vs confluent-kafka (eager, cooperative-sticky, KIP-848)")
    rebalance.add_arguments(rebalance_p)
    rebalance_p.set_defaults(handler=_bench_rebalance)
    return parser


def _bench_rebalance(args: argparse.Namespace) -> int:
    from fastkc_tools.bench import rebalance

    return rebalance.main(args)


def _consume_parser() -> argparse.ArgumentParser:
    """`fastkc consume` alone: a reader at a terminal should not wait for
    the other commands' modules to import."""
    from fastkc import consume

    parser = argparse.ArgumentParser(prog="fastkc consume")
    consume.add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["consume"]:
        args = _consume_parser().parse_args(argv[1:])
    else:
        args = build_parser().parse_args(argv)
    from fastkc_tools.broker.errors import BrokerHarnessError

    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except BrokerHarnessError as exc:
        print("fastkc: error: {0}".format(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
