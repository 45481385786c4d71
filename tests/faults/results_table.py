"""Render FASTKC_FAULTS_REPORT's JSON lines as RESULTS.md's scenario table:
    python -m tests.faults.results_table /tmp/faults.jsonl"""
import json
import sys


def main(path):
    rows = ["| scenario | faults | produced | delivered | lost | dup. | recovery med / worst (s) | worst stall (s) "
            "| ack→delivery med / worst (s) | errors raised (typed) | run (s) |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    extra = []
    with open(path) as fh:
        for line in fh:
            d = json.loads(line)
            if "lost" not in d:
                extra.append(d)
                continue
            errs = ", ".join("{0}×{1}".format(k, v) for k, v in sorted(d["errors"].items())) or "none"
            rows.append("| {scenario} | {faults} | {produced} | {delivered} | {lost} | {duplicates} | "
                        "{recovery_median_s:.2f} / {recovery_worst_s:.2f} | {worst_stall_s:.2f} | "
                        "{delay_median_s:.2f} / {delay_worst_s:.2f} | {errs} | {secs} |".format(
                            errs=errs, secs=d.get("seconds", ""), **d))
    print("\n".join(rows))
    for d in extra:
        print("\n" + json.dumps(d))


if __name__ == "__main__":
    main(sys.argv[1])
