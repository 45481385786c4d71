"""fastkc's assignors and consumer protocol against the Java client's, run
side by side.

A small Java program (its source below) calls the RangeAssignor,
RoundRobinAssignor, StickyAssignor and CooperativeStickyAssignor of Kafka
4.3.1 and 3.9.2, from the kafka-clients jars the spec tests resolve with
Maven (cached under ~/.cache/fastkc/specs), on the same generated groups
(subscriptions, owned partitions, generations, static members, consumer and
replica racks) as fastkc's assignors. One JVM answers a whole batch of
cases. Compared:

- range, roundrobin, and the sticky assignors when every member subscribes
  to the same topics: each member's partitions, in Java's order (so the
  SyncGroup bytes are identical);
- sticky assignors with differing subscriptions (Java's "general" path, which
  fastkc solves by a different search): the properties both must have, and
  balance no worse than Java's;
- the consumer protocol bytes: Java's ConsumerProtocol serializes the same
  subscriptions and assignments to the same bytes, and reads valid, newer,
  truncated and corrupted bytes the way fastkc reads them.

Nothing is committed from Kafka; the Java source here calls its public API.
"""
import hashlib
import os
import random
import shutil
import subprocess
import zlib

import pytest

from fastkc.assignors import (
    ASSIGNORS_BY_NAME,
    GroupMember,
    StaticCluster,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    validate_cooperative_assignment,
)
from fastkc.errors import ProtocolParseError
from fastkc.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    group_by_topic,
)
from fastkc.structs import TopicPartition
from tests.support import SLOW
from tests.support.kafka_specs import CACHE, NEWEST, OLDEST_LINE, resolve_clients_jar
from tests.support.kafka_specs import resolve_jar as _resolve_jar

# the newest line, whose behaviour fastkc follows, and the last 3.x line
KAFKA_VERSIONS = (NEWEST, OLDEST_LINE)
# the slf4j-api both kafka-clients releases depend on (their loggers need it)
SLF4J = "1.7.36"


ORACLE_SOURCE = r"""
import java.io.*;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.*;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.*;

public class AssignorOracle {
    static byte[] hex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++)
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    static String hexOf(ByteBuffer b) {
        StringBuilder sb = new StringBuilder();
        ByteBuffer d = b.duplicate();
        while (d.hasRemaining()) sb.append(String.format("%02x", d.get() & 0xff));
        return sb.length() == 0 ? "EMPTY" : sb.toString();
    }

    static List<TopicPartition> tps(String s) {
        List<TopicPartition> out = new ArrayList<>();
        if (!s.equals("-"))
            for (String x : s.split(",")) {
                String[] q = x.split("/");
                out.add(new TopicPartition(q[0], Integer.parseInt(q[1])));
            }
        return out;
    }

    static String hexText(String s) {
        return hexOf(ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8)));
    }

    static String tpText(List<TopicPartition> l) {
        if (l.isEmpty()) return "-";
        StringBuilder sb = new StringBuilder();
        for (TopicPartition tp : l) {
            if (sb.length() > 0) sb.append(',');
            sb.append(hexText(tp.topic())).append('/').append(tp.partition());
        }
        return sb.toString();
    }

    static String topicsText(List<String> l) {
        if (l.isEmpty()) return "-";
        StringBuilder sb = new StringBuilder();
        for (String t : l) {
            if (sb.length() > 0) sb.append(',');
            sb.append(hexText(t));
        }
        return sb.toString();
    }

    static ConsumerPartitionAssignor make(String name) {
        switch (name) {
            case "range": return new RangeAssignor();
            case "roundrobin": return new RoundRobinAssignor();
            case "sticky": return new StickyAssignor();
            case "cooperative-sticky": return new CooperativeStickyAssignor();
            default: throw new IllegalArgumentException(name);
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out), false, "UTF-8");
        String name = null;
        List<PartitionInfo> parts = new ArrayList<>();
        Map<String, Node> nodes = new LinkedHashMap<>();
        List<String> order = new ArrayList<>();
        Map<String, Subscription> subs = new HashMap<>();
        String line;
        while ((line = in.readLine()) != null) {
            String[] t = line.split(" ");
            if (t[0].equals("CASE")) {
                name = t[1];
                parts = new ArrayList<>();
                nodes = new LinkedHashMap<>();
                order = new ArrayList<>();
                subs = new HashMap<>();
            } else if (t[0].equals("TOPIC")) {
                for (int i = 2; i < t.length; i++) {
                    String[] pr = t[i].split(":");
                    Node[] reps = new Node[0];
                    if (!pr[1].equals("-")) {
                        String[] racks = pr[1].split(",");
                        reps = new Node[racks.length];
                        for (int j = 0; j < racks.length; j++) {
                            Node n = nodes.get(racks[j]);
                            if (n == null) {
                                n = new Node(nodes.size(), "h", 1, racks[j]);
                                nodes.put(racks[j], n);
                            }
                            reps[j] = n;
                        }
                    }
                    parts.add(new PartitionInfo(t[1], Integer.parseInt(pr[0]),
                        reps.length > 0 ? reps[0] : Node.noNode(), reps, reps));
                }
            } else if (t[0].equals("MEMBER")) {
                String id = t[1];
                ByteBuffer userData = t[5].equals("-") ? null
                    : ByteBuffer.wrap(hex(t[5].equals("EMPTY") ? "" : t[5]));
                List<String> topics = t[6].equals("-") ? new ArrayList<>()
                    : new ArrayList<>(Arrays.asList(t[6].split(",")));
                List<TopicPartition> owned = new ArrayList<>();
                if (!t[7].equals("-"))
                    for (String s : t[7].split(",")) {
                        String[] q = s.split("/");
                        owned.add(new TopicPartition(q[0], Integer.parseInt(q[1])));
                    }
                Subscription sub = new Subscription(topics, userData, owned, Integer.parseInt(t[4]),
                    t[3].equals("-") ? Optional.empty() : Optional.of(t[3]));
                sub.setGroupInstanceId(t[2].equals("-") ? Optional.empty() : Optional.of(t[2]));
                order.add(id);
                subs.put(id, sub);
            } else if (t[0].equals("SUB")) {
                // SUB topics userdata owned generation rack -> Java's bytes
                List<String> topics = t[1].equals("-") ? new ArrayList<>()
                    : new ArrayList<>(Arrays.asList(t[1].split(",")));
                ByteBuffer userData = t[2].equals("-") ? null : ByteBuffer.wrap(hex(t[2].equals("EMPTY") ? "" : t[2]));
                Subscription sub = new Subscription(topics, userData, tps(t[3]), Integer.parseInt(t[4]),
                    t[5].equals("-") ? Optional.empty() : Optional.of(t[5]));
                out.println("BYTES " + hexOf(ConsumerProtocol.serializeSubscription(sub)));
            } else if (t[0].equals("ASG")) {
                // ASG partitions userdata -> Java's bytes
                ByteBuffer userData = t[2].equals("-") ? null : ByteBuffer.wrap(hex(t[2].equals("EMPTY") ? "" : t[2]));
                out.println("BYTES "
                    + hexOf(ConsumerProtocol.serializeAssignment(new Assignment(tps(t[1]), userData))));
            } else if (t[0].equals("DSUB")) {
                // DSUB hex -> what Java reads from those bytes
                try {
                    Subscription sub = ConsumerProtocol.deserializeSubscription(ByteBuffer.wrap(hex(t[1])));
                    out.println("READ " + topicsText(sub.topics()) + " "
                        + (sub.userData() == null ? "-" : hexOf(sub.userData())) + " " + tpText(sub.ownedPartitions())
                        + " " + sub.generationId().orElse(-1) + " "
                        + (sub.rackId().isPresent() ? hexText(sub.rackId().get()) : "-"));
                } catch (Exception e) {
                    out.println("ERROR " + e.getClass().getName());
                }
            } else if (t[0].equals("DASG")) {
                try {
                    Assignment a = ConsumerProtocol.deserializeAssignment(ByteBuffer.wrap(hex(t[1])));
                    out.println("READ " + tpText(a.partitions()) + " "
                        + (a.userData() == null ? "-" : hexOf(a.userData())));
                } catch (Exception e) {
                    out.println("ERROR " + e.getClass().getName());
                }
            } else if (t[0].equals("RUN")) {
                Cluster cluster = new Cluster("c", new ArrayList<>(nodes.values()), parts,
                    Collections.emptySet(), Collections.emptySet());
                try {
                    Map<String, Assignment> result =
                        make(name).assign(cluster, new GroupSubscription(subs)).groupAssignment();
                    out.println("RESULT");
                    for (String id : order) {
                        StringBuilder sb = new StringBuilder("A ").append(id).append(' ');
                        List<TopicPartition> got = result.get(id).partitions();
                        if (got.isEmpty()) sb.append('-');
                        for (int i = 0; i < got.size(); i++) {
                            if (i > 0) sb.append(',');
                            sb.append(got.get(i).topic()).append('/').append(got.get(i).partition());
                        }
                        out.println(sb);
                    }
                } catch (Exception e) {
                    out.println("ERROR " + e.getClass().getName() + " "
                        + String.valueOf(e.getMessage()).replace('\n', ' '));
                }
                out.println("END");
            }
        }
        out.flush();
    }
}
"""


@pytest.fixture(scope="module", params=KAFKA_VERSIONS)
def oracle(request):
    """A function running a batch of cases through the Java assignors of one
    Kafka release."""
    kafka = request.param
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        pytest.skip("no JDK (javac/java) on PATH: cannot run Kafka's Java assignors")
    # kafka-clients (the jar the spec tests already resolve) and slf4j-api
    # only: no logging backend, so nothing but the oracle's answers reaches
    # stdout (slf4j warns once on stderr)
    jars = [resolve_clients_jar(kafka), _resolve_jar("org.slf4j", "slf4j-api", SLF4J)]
    classpath = os.pathsep.join(jars)
    digest = hashlib.sha256((ORACLE_SOURCE + classpath).encode()).hexdigest()[:16]
    build = os.path.join(os.path.dirname(CACHE), "assignor-oracle", digest)
    if not os.path.exists(os.path.join(build, "AssignorOracle.class")):
        os.makedirs(build, exist_ok=True)
        tmp = build + ".tmp{0}".format(os.getpid())
        os.makedirs(tmp, exist_ok=True)
        with open(os.path.join(tmp, "AssignorOracle.java"), "w") as f:
            f.write(ORACLE_SOURCE)
        proc = subprocess.run([javac, "-nowarn", "-cp", classpath, "-d", tmp, os.path.join(tmp, "AssignorOracle.java")],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        os.replace(os.path.join(tmp, "AssignorOracle.class"), os.path.join(build, "AssignorOracle.class"))
        shutil.rmtree(tmp, ignore_errors=True)

    def run(cases):
        text = "".join(_case_text(c) for c in cases)
        proc = subprocess.run([java, "-Xshare:auto", "-cp", classpath + os.pathsep + build, "AssignorOracle"],
                              input=text, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return _parse_answers(proc.stdout, len(cases))

    def raw(lines):
        proc = subprocess.run([java, "-Xshare:auto", "-cp", classpath + os.pathsep + build, "AssignorOracle"],
                              input="".join(line + "\n" for line in lines), capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout.splitlines()

    run.raw = raw
    return run


# --------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------
def _tp_text(tps):
    return ",".join("{0}/{1}".format(tp.topic, tp.partition) for tp in tps) or "-"


def _case_text(case):
    lines = ["CASE " + case["assignor"]]
    for topic, parts in case["topics"].items():
        tokens = ["{0}:{1}".format(p, ",".join(case["racks"].get((topic, p), ())) or "-") for p in parts]
        if tokens:
            lines.append("TOPIC {0} {1}".format(topic, " ".join(tokens)))
    for m in case["members"]:
        sub = m["subscription"]
        user_data = sub.user_data
        lines.append("MEMBER {0} {1} {2} {3} {4} {5} {6}".format(
            m["member_id"], m["instance_id"] or "-", sub.rack_id or "-", sub.generation_id,
            "-" if user_data is None else (user_data.hex() or "EMPTY"),
            ",".join(sub.topics) or "-", _tp_text(sub.owned_topic_partitions())))
    lines.append("RUN")
    return "\n".join(lines) + "\n"


def _parse_answers(stdout, count):
    answers, current = [], None
    for line in stdout.splitlines():
        if line == "RESULT":
            current = {}
        elif line.startswith("ERROR "):
            current = line
        elif line.startswith("A "):
            _, member, parts = line.split(" ", 2)
            current[member] = [] if parts == "-" else [
                TopicPartition(p.rsplit("/", 1)[0], int(p.rsplit("/", 1)[1])) for p in parts.split(",")]
        elif line == "END":
            answers.append(current)
            current = None
    assert len(answers) == count, stdout[-2000:]
    return answers


_NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-_."


def _name(rng, prefix):
    return prefix + "".join(rng.choice(_NAME_CHARS) for _ in range(rng.randint(1, 8)))


def make_case(rng, assignor, *, same_subscriptions, max_members=6):
    topic_names = sorted({_name(rng, "t") for _ in range(rng.randint(1, 4))})
    topics = {t: list(range(rng.randint(0, 9))) for t in topic_names}
    use_racks = rng.random() < 0.4
    rack_names = ["r0", "r1", "r2"]
    racks = {}
    if use_racks:
        for t, parts in topics.items():
            for p in parts:
                racks[(t, p)] = sorted(rng.sample(rack_names, rng.randint(0, 3)))
    members = []
    n_members = rng.randint(1, max_members)
    common = sorted(rng.sample(topic_names, rng.randint(1, len(topic_names))))
    all_partitions = [TopicPartition(t, p) for t in topic_names for p in topics[t]]
    # a previous assignment: each partition owned by at most one member (or
    # sometimes by two, to exercise the generation rules)
    ids = []
    for i in range(n_members):
        ids.append(_name(rng, "consumer-{0}-".format(i)))
    previous = {mid: [] for mid in ids}
    if rng.random() < 0.7:
        for tp in all_partitions:
            if rng.random() < 0.8:
                previous[rng.choice(ids)].append(tp)
            if rng.random() < 0.05:
                previous[rng.choice(ids)].append(tp)
    for mid in ids:
        subscribed = common if same_subscriptions else sorted(rng.sample(topic_names, rng.randint(1, len(topic_names))))
        generation = rng.choice([-1, 5, 5, 5, 6]) if previous[mid] else rng.choice([-1, 5])
        owned = sorted(set(previous[mid]))
        rack = rng.choice(rack_names + [None]) if use_racks else None
        if assignor == "sticky":
            user_data = encode_sticky_user_data(owned, generation) if owned or rng.random() < 0.5 else None
            # sometimes a member that leaves the subscription's generation
            # field unset (as kafka-python's v0 subscriptions do)
            sub = Subscription(3, subscribed, user_data, [], generation if rng.random() < 0.8 else -1, rack)
        elif assignor == "cooperative-sticky":
            sub = Subscription(3, subscribed, encode_cooperative_user_data(generation),
                               [(tp.topic, [tp.partition]) for tp in owned], generation, rack)
        else:
            sub = Subscription(3, subscribed, None, [(tp.topic, [tp.partition]) for tp in owned], generation, rack)
        # through the wire encoding, as a leader receives it
        sub = decode_subscription(sub.encode())
        instance = _name(rng, "static-") if rng.random() < 0.3 else None
        members.append({"member_id": mid, "instance_id": instance, "subscription": sub})
    # a partition count of 0 means "no metadata for this topic"
    return {"assignor": assignor, "topics": topics, "racks": racks, "members": members}


def run_fastkc(case):
    cluster = StaticCluster(
        {t: parts for t, parts in case["topics"].items() if parts},
        {t: {p: case["racks"].get((t, p), ()) for p in parts} for t, parts in case["topics"].items()},
    )
    members = [GroupMember(m["member_id"], m["instance_id"], m["subscription"]) for m in case["members"]]
    result = ASSIGNORS_BY_NAME[case["assignor"]]().assign(cluster, members)
    return {mid: a.partitions() for mid, a in result.items()}, {mid: a.encode() for mid, a in result.items()}


def java_sync_bytes(java):
    """What the Java leader would put in SyncGroup for each member: its
    assignment list, grouped per topic in order of first appearance, v3."""
    return {mid: encode_assignment(parts) for mid, parts in java.items()}


def _cases(assignor, count, seed, same_subscriptions, max_members=6):
    rng = random.Random(seed)
    return [make_case(rng, assignor, same_subscriptions=same_subscriptions, max_members=max_members)
            for _ in range(count)]


N = 400 if SLOW else 120


def _describe(case):
    return _case_text(case)


@pytest.mark.parametrize("assignor", ["range", "roundrobin"])
@pytest.mark.parametrize("same", [True, False], ids=["same-topics", "mixed-topics"])
def test_range_and_roundrobin_equal_java(oracle, assignor, same):
    cases = _cases(assignor, N, zlib.crc32("{0}/{1}".format(assignor, same).encode()), same)
    for case, java in zip(cases, oracle(cases)):
        assert not isinstance(java, str), java + "\n" + _describe(case)
        assert run_fastkc(case)[1] == java_sync_bytes(java), _describe(case)


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
def test_sticky_with_equal_subscriptions_equals_java(oracle, assignor):
    cases = _cases(assignor, N, 7 if assignor == "sticky" else 8, True)
    for case, java in zip(cases, oracle(cases)):
        assert not isinstance(java, str), java + "\n" + _describe(case)
        assert run_fastkc(case)[1] == java_sync_bytes(java), _describe(case)


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_large_groups_equal_java(oracle, assignor):
    # 13+ members grow Java's HashMap past 16 buckets: the modelled iteration
    # order must follow the resize
    cases = _cases(assignor, N // 4, zlib.crc32(("large/" + assignor).encode()), True, max_members=60)
    for case, java in zip(cases, oracle(cases)):
        assert not isinstance(java, str), java + "\n" + _describe(case)
        assert run_fastkc(case)[1] == java_sync_bytes(java), _describe(case)


def _loads(result):
    return sorted(len(v) for v in result.values())


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
def test_sticky_with_mixed_subscriptions_has_javas_properties(oracle, assignor):
    cases = _cases(assignor, N, 9 if assignor == "sticky" else 10, False)
    java_invalid_cases, rounds_needed = [], []
    for case, java in zip(cases, oracle(cases)):
        if isinstance(java, str):
            # Java's general path (4.3.1 and 3.9.2) throws on some inputs (seen: a
            # NullPointerException when members hold partitions of topics
            # they dropped while another topic has no metadata); fastkc must
            # still produce a valid assignment, checked below without Java
            java_invalid_cases.append(True)
            java = None
        ours = run_fastkc(case)[0]
        subscribed = {m["member_id"]: set(m["subscription"].topics) for m in case["members"]}
        given = [tp for parts in ours.values() for tp in parts]
        assert len(given) == len(set(given)), _describe(case)
        for mid, parts in ours.items():
            assert all(tp.topic in subscribed[mid] for tp in parts), _describe(case)
        # Java's general path can leave a member a partition of a
        # topic it no longer subscribes to, carried over from its previous
        # assignment (seen in these cases; fastkc never does, asserted above).
        # Balance is compared only where Java's answer is a valid one.
        java_valid = java is not None and all(
            tp.topic in subscribed[mid] for mid, parts in java.items() for tp in parts)
        if java is not None:
            java_invalid_cases.append(not java_valid)
        wanted = {tp for t, parts in case["topics"].items() for tp in (TopicPartition(t, p) for p in parts)
                  if any(t in s for s in subscribed.values())}
        if assignor == "sticky":
            # eager: every partition someone subscribes to is assigned
            assert set(given) == wanted, _describe(case)
        if assignor == "cooperative-sticky":
            owned = {m["member_id"]: m["subscription"].owned_topic_partitions() for m in case["members"]}
            validate_cooperative_assignment(owned, ours)
            # follow-up rebalances (members own the last round's result) hand
            # out what was held back; each round is a valid cooperative step
            # and the group settles within a few rounds
            current, rounds = case, 1
            while True:
                follow = _next_round(current, ours, 7 + rounds)
                after = run_fastkc(follow)[0]
                validate_cooperative_assignment(owned_after_round_one(current, ours), after)
                rounds += 1
                if _as_sets(after) == _as_sets(ours) or rounds > 5:
                    break
                current, ours = follow, after
            rounds_needed.append(rounds)
            given = [tp for parts in ours.values() for tp in parts]
            assert sorted(given, key=str) == sorted(wanted, key=str), _describe(case)
        if java_valid and assignor == "sticky":
            # at least as evenly as Java: a smaller spread or a smaller sum of
            # squared loads
            assert max(_loads(ours)) - min(_loads(ours)) <= max(_loads(java)) - min(_loads(java)) or \
                sum(x * x for x in _loads(ours)) <= sum(x * x for x in _loads(java)), _describe(case)
    # the cases do reach Java's general path (and its flaw)
    assert sum(java_invalid_cases) < len(cases)
    if rounds_needed:
        # rounds_needed counts assignments until one repeats: 2 = nothing was
        # held back, 3 = held-back partitions landed in the follow-up round.
        # Nearly every group settles so. A few need more: with consumer racks
        # a member first gives up a partition on a foreign rack and later
        # rounds rebalance around it (Java's rack rule, which the
        # equal-subscription path reproduces decision for decision).
        assert max(rounds_needed) <= 5, rounds_needed
        assert sum(r <= 3 for r in rounds_needed) >= 0.95 * len(rounds_needed), rounds_needed


def _as_sets(result):
    return {member: set(parts) for member, parts in result.items()}


def owned_after_round_one(case, round_one):
    return {m["member_id"]: round_one[m["member_id"]] for m in case["members"]}


def _next_round(case, round_one, generation):
    members = []
    for m in case["members"]:
        sub = m["subscription"]
        owned = round_one[m["member_id"]]
        members.append(dict(m, subscription=decode_subscription(Subscription(
            3, sub.topics, encode_cooperative_user_data(generation),
            [(tp.topic, [tp.partition]) for tp in owned], generation, sub.rack_id).encode())))
    return dict(case, members=members)


# --------------------------------------------------------------------------
# the consumer protocol bytes, written and read by Java's ConsumerProtocol
# --------------------------------------------------------------------------
def _hex_or(value, none="-"):
    if value is None:
        return none
    return value.hex() or "EMPTY"


def _random_partitions(rng, topics):
    out = [TopicPartition(rng.choice(topics), rng.randint(0, 40)) for _ in range(rng.randint(0, 6))] if topics else []
    return list(dict.fromkeys(out))  # Java's lists may repeat; ours need not test that


def test_subscription_and_assignment_bytes_equal_javas(oracle):
    rng = random.Random(11)
    lines, ours = [], []
    for _ in range(N * 2):
        topics = [_name(rng, "t") for _ in range(rng.randint(0, 4))]
        user_data = rng.choice([None, b"", bytes(rng.randrange(256) for _ in range(rng.randint(1, 9)))])
        owned = _random_partitions(rng, topics or ["x"])
        generation = rng.choice([-1, 0, 7, 2**31 - 1])
        rack = rng.choice([None, _name(rng, "rack")])
        lines.append("SUB {0} {1} {2} {3} {4}".format(",".join(topics) or "-", _hex_or(user_data),
                                                       _tp_text(owned), generation, rack or "-"))
        ours.append(Subscription(3, topics, user_data, [(t.topic, [t.partition]) for t in owned], generation,
                                 rack).encode())
        parts = _random_partitions(rng, topics or ["y"])
        lines.append("ASG {0} {1}".format(_tp_text(parts), _hex_or(user_data)))
        ours.append(Assignment(3, group_by_topic(parts, sort=False), user_data).encode())
    answers = oracle.raw(lines)
    assert len(answers) == len(lines)
    for line, answer, mine in zip(lines, answers, ours):
        assert answer == "BYTES " + mine.hex(), line


def _read_like_java(kind, data):
    """Our decoders' reading, printed the way the oracle prints Java's."""
    def hexs(s):
        return s.encode().hex() or "EMPTY"

    def tps(parts):
        return ",".join("{0}/{1}".format(hexs(t.topic), t.partition) for t in parts) or "-"

    try:
        if kind == "DSUB":
            sub = decode_subscription(data)
            return "READ {0} {1} {2} {3} {4}".format(
                ",".join(hexs(t) for t in sub.topics) or "-", _hex_or(sub.user_data),
                tps(sub.owned_topic_partitions()), sub.generation_id, hexs(sub.rack_id) if sub.rack_id else "-")
        a = decode_assignment(data)
        return "READ {0} {1}".format(tps(a.partitions()), _hex_or(a.user_data))
    except ProtocolParseError as exc:
        return "ERROR " + exc.reason


def test_reading_agrees_with_javas_on_valid_newer_and_corrupted_bytes(oracle):
    """Java's ConsumerProtocol and fastkc read the same bytes the same way:
    valid ones of every version, newer versions with extra trailing fields,
    Kafka 2.4's assignment with its trailing error code, and the same bytes
    cut short or with bytes overwritten. The one allowed difference: Java
    reads invalid UTF-8 in a name as U+FFFD and any negative length of a
    nullable field as null; fastkc refuses both (the shared codec accepts
    only -1 as null)."""
    rng = random.Random(12)
    inputs = []
    for _ in range(N):
        topics = [_name(rng, "t") for _ in range(rng.randint(0, 3))]
        owned = _random_partitions(rng, topics or ["x"])
        sub = Subscription(rng.randint(0, 3), topics, rng.choice([None, b"", b"\x01\x02"]),
                           [(t.topic, [t.partition]) for t in owned], rng.choice([-1, 4]),
                           rng.choice([None, "r1"])).encode()
        asg = Assignment(rng.randint(0, 3), group_by_topic(owned, sort=False), rng.choice([None, b"\x07"])).encode()
        for kind, data in (("DSUB", sub), ("DASG", asg)):
            inputs.append((kind, data))
            inputs.append((kind, b"\x00\x07" + data[2:] + b"\x00\x00\x00\x05more"))  # a newer version
            inputs.append((kind, data[:rng.randrange(len(data))]))
            corrupt = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                corrupt[rng.randrange(len(corrupt))] = rng.choice([0x00, 0x7F, 0x80, 0xFF, rng.randrange(256)])
            inputs.append((kind, bytes(corrupt)))
    answers = oracle.raw(["{0} {1}".format(kind, data.hex()) for kind, data in inputs])
    assert len(answers) == len(inputs)
    stricter = 0
    for (kind, data), java in zip(inputs, answers):
        java = "ERROR" if java.startswith("ERROR") else java
        ours = _read_like_java(kind, data)
        # (Java's replacement may not even show: a topic with no partitions
        # is not in its flattened partition list)
        if ours.startswith("ERROR") and java != "ERROR" and ("invalid UTF-8" in ours or "negative length" in ours):
            stricter += 1
            continue
        ours = "ERROR" if ours.startswith("ERROR") else ours
        assert ours == java, "{0} {1}".format(kind, data.hex())
    assert stricter < len(inputs) // 10
