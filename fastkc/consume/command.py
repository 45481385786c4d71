"""The `fastkc consume` subcommand: its options, the run from arguments to an
exit status, Ctrl-C."""
import argparse
import os
import signal
import sys
from types import FrameType
from typing import TYPE_CHECKING, Any

from fastkc.consume.arguments import UsageError, check_arguments, parse_offset, parse_time
from fastkc.consume.formats import DEFAULT_FORMAT, FormatRenderer, JsonRenderer, Renderer, parse_format
from fastkc.consume.loop import ConsumeRun
from fastkc.consume.outputs import ArrowIpcOutput, Output, ParquetOutput, Progress, StdoutBytes
from fastkc.consume.schema_values import DecodedRenderer, SchemaRegistryColumns, parse_serdes
from fastkc.consume.settings import consumer_settings
from fastkc.errors import KafkaConfigurationError, KafkaError, WakeupException

if TYPE_CHECKING:
    from fastkc.consumer import KafkaConsumer


class _Interrupt:
    """SIGINT: the first asks the consumer to wake up and the loop to end
    cleanly (commit, close); a second one interrupts at once."""

    def __init__(self) -> None:
        self.requested = False
        self.consumer: KafkaConsumer | None = None
        self.previous: Any = None  # what signal.signal() returned: a handler, SIG_DFL/SIG_IGN or None

    def install(self) -> None:
        self.previous = signal.signal(signal.SIGINT, self._handle)

    def asked(self) -> bool:
        """A SIGINT came (read through a call: the handler sets it meanwhile)."""
        return self.requested

    def restore(self) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        if self.consumer is not None:
            self.consumer.wakeup()


def _make_output(args: argparse.Namespace) -> Output | None:
    from fastkc.records import arrow_schema

    if args.arrow_ipc:
        return ArrowIpcOutput(args.arrow_ipc, arrow_schema())
    if args.parquet:
        return ParquetOutput(args.parquet, arrow_schema())
    return None


def run(args: argparse.Namespace) -> int:
    """The `consume` subcommand; the exit status."""
    try:
        check_arguments(args)
        settings = consumer_settings(args)
        if not (args.arrow_ipc or args.parquet or args.json):
            parse_format(args.format)  # a bad -f is a usage error before any connection
        fields = parse_serdes(args.serdes)
    except UsageError as exc:
        return _fail(str(exc), 2)
    interrupt = _Interrupt()
    interrupt.install()
    consumer: KafkaConsumer | None = None
    out: Output | None = None
    progress: Progress | None = None
    registry_columns: SchemaRegistryColumns | None = None
    status = 0
    try:
        from fastkc import consumer as consumer_module

        try:
            consumer = consumer_module.KafkaConsumer(**settings)
        except KafkaConfigurationError as exc:
            return _fail("configuration: {0}".format(exc), 2)
        interrupt.consumer = consumer
        if interrupt.asked():
            return 130
        job = ConsumeRun(args, None)
        job.start(consumer)
        out = _make_output(args)
        if out is None:
            renderer: Renderer
            if args.json:
                renderer = JsonRenderer(consumer_module.engine_of(consumer).leader_for)
            else:
                renderer = FormatRenderer(args.format, b"NULL" if args.null_as_text else None)
            if fields:
                registry_columns = SchemaRegistryColumns(args.schema_registry, fields)
                renderer = DecodedRenderer(registry_columns, renderer)
            out = StdoutBytes(renderer)
        job.out = out
        if sys.stderr.isatty() and not args.quiet:
            progress = Progress()
        try:
            job.run(progress)
        except WakeupException:
            pass
        if interrupt.asked():
            status = 130
        out.close()
        out = None
        if args.group:
            job.commit()
        if registry_columns is not None and registry_columns.failures and status == 0:
            status = 1  # each was reported on stderr as it came
    except BrokenPipeError:
        # the reader has gone (`| head`): what it took is written; Python's
        # advice, so that the interpreter's own flush at exit finds a sink
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = 0
    except KafkaConfigurationError as exc:
        status = _fail("configuration: {0}".format(exc), 2)
    except OSError as exc:  # an output that cannot be opened or written (not a closed pipe: above)
        status = _fail("output: {0}".format(exc), 1)
    except KafkaError as exc:
        status = _fail(_describe(exc), 1)
    except KeyboardInterrupt:
        status = 130
    finally:
        interrupt.restore()
        if progress is not None:
            progress.close()
        if out is not None:
            try:
                out.close()
            except (BrokenPipeError, OSError):
                pass
        if registry_columns is not None:
            registry_columns.close()
        if consumer is not None:
            try:
                consumer.close(autocommit=False)
            except Exception:  # closing must not turn a result into a traceback
                pass
    return status


def _describe(exc: BaseException) -> str:
    name = type(exc).__name__
    # fastkc's errors render as "[Error N] Name: message": the message alone
    text = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
    return name if not text or text == name else "{0}: {1}".format(name, text)


def _fail(message: str, status: int) -> int:
    print("fastkc consume: error: {0}".format(message), file=sys.stderr)
    return status


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Read Kafka topics to stdout, kcat-style (-C), or to Arrow IPC / Parquet files.\n\n"
        "Format tokens (-f): %t topic, %p partition, %o offset, %k key, %K key length (-1 null),\n"
        "%s value, %S value length (-1 null), %T timestamp (ms, -1 none), %h headers\n"
        "(name=value,...), %% a percent sign; escapes \\n \\t \\r \\xHH \\NNN.")
    parser.epilog = (
        "examples:\n"
        "  fastkc consume -b localhost:9092 -t orders -o beginning -e\n"
        "  fastkc consume -b localhost:9092 -t orders -p 0 -o -10 -e -f '%p/%o %k: %s (%T)\\n'\n"
        "  fastkc consume -b localhost:9092 -t orders -G audit --json -c 100\n"
        "  fastkc consume -b localhost:9092 -t payments -s value=avro -r http://localhost:8081 -J -e\n"
        "  fastkc consume -b localhost:9092 -t orders --from-time 2026-11-25T00:00Z --to-time "
        "2026-11-26T00:00Z -e --parquet day.parquet\n\n"
        "exit status: 0 done (also when stdout closes early), 1 Kafka error, 2 bad arguments, "
        "130 interrupted")
    parser.add_argument("-b", "--bootstrap", metavar="HOST:PORT[,...]", help="bootstrap brokers")
    parser.add_argument("-t", "--topic", action="append", default=[], metavar="TOPIC",
                        help="topic to read (repeat for several)")
    parser.add_argument("-p", "--partition", action="append", type=int, metavar="N",
                        help="read only this partition of each topic (repeatable; not with -G)")
    parser.add_argument("-o", "--offset", type=parse_offset, metavar="OFFSET",
                        help="where to start: beginning | end | stored | N | -N (N before the end) | "
                             "@MS or s@MS (first record at or after MS) | e@MS (stop before MS). "
                             "Default: end; with -G, stored (beginning/end: where to start without a "
                             "committed offset)")
    parser.add_argument("-G", "--group", metavar="GROUP",
                        help="join this consumer group (subscribe) and commit the offsets of what was written")
    parser.add_argument("-c", "--count", type=int, metavar="N", help="exit after N records")
    parser.add_argument("-e", "--exit", dest="exit_at_end", action="store_true",
                        help="exit at the end of the partitions (their end offsets when assigned)")
    outputs = parser.add_mutually_exclusive_group()
    outputs.add_argument("-f", "--format", default=DEFAULT_FORMAT, metavar="FMT",
                         help="output format, kcat's (default: '%%s\\n')")
    outputs.add_argument("-J", "--json", action="store_true",
                         help="one JSON object per record, kcat -J's fields")
    outputs.add_argument("--arrow-ipc", metavar="FILE",
                         help="write the Arrow IPC stream format to FILE ('-': stdout)")
    outputs.add_argument("--parquet", metavar="FILE", help="write Parquet to FILE (a row group per batch)")
    parser.add_argument("-Z", dest="null_as_text", action="store_true",
                        help="print empty and null keys and values as NULL (kcat's -Z)")
    parser.add_argument("--from-time", type=parse_time, metavar="TIME",
                        help="start at the first record at or after TIME (ms or ISO-8601; UTC unless given)")
    parser.add_argument("--to-time", type=parse_time, metavar="TIME",
                        help="stop each partition at its first record after TIME")
    parser.add_argument("-X", dest="set", action="append", metavar="KEY=VALUE",
                        help="consumer setting with kafka-python's name (security_protocol=SASL_SSL, "
                             "sasl_mechanism=PLAIN, ...); Java's dotted names and kcat's librdkafka "
                             "security names are accepted too")
    parser.add_argument("-F", dest="config_file", metavar="FILE",
                        help="key=value settings, one a line (as -X); -X and -b override them")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on a terminal")
    parser.add_argument("-s", dest="serdes", action="append", default=[], metavar="[key=|value=]avro",
                        help="decode Schema Registry Avro keys and values (avro: both) and print them as "
                             "kcat does: the Avro JSON encoding; needs -r")
    parser.add_argument("-r", "--schema-registry", dest="schema_registry", metavar="URL",
                        help="the Schema Registry -s avro reads writer schemas from (comma-separated URLs "
                             "are tried in turn)")
    parser.set_defaults(handler=run)
