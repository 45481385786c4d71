"""Render FASTKC_FAULTS_REPORT's JSON lines as RESULTS.md's scenario table:
    python -m tests.faults.results_table /tmp/faults.jsonl

Recovery is per partition (Ledger.catch_up): after each healed fault, the
time until every partition had handed out all it had acknowledged as
produced before the heal; the table shows each scenario's worst partition
over its faults (median / worst across the faults), and below it every
fault's partitions, worst first."""
import json
import sys


def _seconds(value):
    return "never" if value is None or value == float("inf") else "{0:.2f}".format(value)


def main(path):
    rows = ["| scenario | faults | produced | delivered | lost | dup. (unexplained) | values checked / wrong "
            "| broker commit reads / ahead | caught up after heal, worst partition: med / worst (s) "
            "| worst stall (s) | ack→delivery med / worst (s) | errors raised (typed) | run (s) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    details = []
    extra = []
    with open(path) as fh:
        for line in fh:
            d = json.loads(line)
            if "lost" not in d:
                extra.append(d)
                continue
            errs = ", ".join("{0}×{1}".format(k, v) for k, v in sorted(d["errors"].items())) or "none"
            recovery = ("{0} / {1}".format(_seconds(d["recovery_median_s"]), _seconds(d["recovery_worst_s"]))
                        if d.get("recoveries") else "n/a")
            rows.append("| {scenario} | {faults} | {produced} | {delivered} | {lost} | {duplicates} ({unexplained}) "
                        "| {checked} / {wrong} | {reads} / {ahead} | {recovery} | {worst_stall_s:.2f} | "
                        "{delay_median_s:.2f} / {delay_worst_s:.2f} | {errs} | {secs} |".format(
                            errs=errs, secs=d.get("seconds", ""), recovery=recovery,
                            unexplained=len(d.get("unexplained_duplicates", [])),
                            checked=d.get("values_checked", 0), wrong=len(d.get("wrong_values", [])),
                            reads=d.get("broker_commit_reads", 0), ahead=len(d.get("broker_commits_ahead", [])),
                            **d))
            for fault, partitions in d.get("catch_up", []):
                details.append("- {0}, {1}: {2}".format(d["scenario"], fault, ", ".join(
                    "p{0} {1} s".format(p, _seconds(s)) for p, s in partitions)))
    print("\n".join(rows))
    if details:
        print("\nCaught up after each heal, per partition, worst first:\n")
        print("\n".join(details))
    for d in extra:
        print("\n" + json.dumps(d))


if __name__ == "__main__":
    main(sys.argv[1])
