/*
 * libFuzzer target: the Fetch response walk (csrc/fkc_fetch.c).
 *
 * Input: byte 0 picks the version (4 + b % 15, so every version 4-18 is
 * reachable), the rest is the response payload (header included), exactly
 * as parse_fetch_response() receives it.
 *
 * Beyond "no crash, no sanitizer report", the harness checks the walk's
 * contract on every input and traps on a violation:
 *   - success: every span (topic names, hosts, racks, records) and topic id
 *     lies inside the payload; partition and aborted-transaction ranges
 *     partition the flat arrays exactly; counts never exceed the capacity;
 *   - failure: a reason is set and the position is inside the payload (or
 *     one past it, for "ran out of bytes at the end");
 *   - parsing the same bytes twice with the reused result gives the same
 *     outcome (the capacity-reuse path is exercised);
 *   - any strict prefix of an input that parsed must not parse: the format
 *     has no optional trailer, so a cut response is always malformed.
 *
 * The payload is copied into an exactly sized heap block so AddressSanitizer
 * flags even a one-byte over-read past its end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fkc_fetch.h"

#define CHECK(cond)                                                                                    \
    do {                                                                                               \
        if (!(cond))                                                                                   \
            __builtin_trap();                                                                          \
    } while (0)

static void check_span(fkc_fetch_span s, size_t len, int nullable)
{
    if (s.length < 0) {
        CHECK(nullable && s.length == -1);
        return;
    }
    CHECK(s.offset <= len);
    CHECK((uint64_t)s.length <= (uint64_t)(len - s.offset));
}

static void check_ok(const fkc_fetch_response *r, size_t len)
{
    size_t next_partition = 0, next_aborted = 0;
    CHECK(r->n_topics <= r->cap_topics || r->n_topics == 0);
    CHECK(r->n_partitions <= r->cap_partitions || r->n_partitions == 0);
    for (size_t i = 0; i < r->n_topics; i++) {
        const fkc_fetch_topic *t = &r->topics[i];
        if (r->version >= 13) {
            CHECK(t->has_topic_id && t->name.length == -1);
            CHECK(t->topic_id_offset <= len && 16 <= len - t->topic_id_offset);
        } else {
            CHECK(!t->has_topic_id);
            check_span(t->name, len, 0);
        }
        CHECK(t->partition_first == next_partition);
        next_partition += t->partition_count;
        CHECK(next_partition <= r->n_partitions);
        for (size_t j = t->partition_first; j < next_partition; j++) {
            const fkc_fetch_partition *p = &r->partitions[j];
            check_span(p->records, len, 1);
            if (p->aborted_count >= 0) {
                CHECK(p->aborted_first == next_aborted);
                next_aborted += (size_t)p->aborted_count;
                CHECK(next_aborted <= r->n_aborted);
            } else {
                CHECK(p->aborted_count == -1);
            }
            if (r->version < 12)
                CHECK(!p->has_diverging_epoch && !p->has_current_leader && !p->has_snapshot_id);
            if (r->version < 11)
                CHECK(p->preferred_read_replica == -1);
            if (r->version < 5)
                CHECK(p->log_start_offset == -1);
        }
    }
    CHECK(next_partition == r->n_partitions);
    CHECK(next_aborted == r->n_aborted);
    if (r->version < 16)
        CHECK(!r->has_node_endpoints && r->n_nodes == 0);
    for (size_t i = 0; i < r->n_nodes; i++) {
        check_span(r->nodes[i].host, len, 0);
        check_span(r->nodes[i].rack, len, 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int version = FKC_FETCH_MIN_VERSION + data[0] % (FKC_FETCH_MAX_VERSION - FKC_FETCH_MIN_VERSION + 1);
    size_t len = size - 1;
    uint8_t *buf = (uint8_t *)malloc(len ? len : 1);
    if (buf == NULL)
        return 0;
    memcpy(buf, data + 1, len);

    fkc_fetch_response r;
    fkc_fetch_response_init(&r);
    int rc = fkc_fetch_parse(buf, len, version, &r);
    CHECK(rc == FKC_FETCH_OK || rc == FKC_FETCH_EMALFORMED);
    if (rc == FKC_FETCH_OK) {
        check_ok(&r, len);
    } else {
        CHECK(r.error_what != NULL && r.error_problem != NULL);
        CHECK(r.error_pos <= len);
    }
    size_t n_topics = r.n_topics, n_partitions = r.n_partitions, err_pos = r.error_pos;

    /* same bytes, reused result: same outcome */
    int rc2 = fkc_fetch_parse(buf, len, version, &r);
    CHECK(rc2 == rc);
    CHECK(r.n_topics == n_topics && r.n_partitions == n_partitions);
    if (rc != FKC_FETCH_OK)
        CHECK(r.error_pos == err_pos);

    /* a parsed response cut anywhere is malformed (a few cut points, to keep
     * executions fast) */
    if (rc == FKC_FETCH_OK && len > 0) {
        size_t cuts[3] = {len - 1, len / 2, 0};
        for (int i = 0; i < 3; i++) {
            uint8_t *cut = (uint8_t *)malloc(cuts[i] ? cuts[i] : 1);
            if (cut == NULL)
                break;
            memcpy(cut, buf, cuts[i]);
            CHECK(fkc_fetch_parse(cut, cuts[i], version, &r) == FKC_FETCH_EMALFORMED);
            free(cut);
        }
    }
    /* versions outside 4-18 are refused before any byte is read */
    if (data[0] == 0xFF) {
        CHECK(fkc_fetch_parse(buf, len, FKC_FETCH_MIN_VERSION - 1, &r) == FKC_FETCH_EVERSION);
        CHECK(fkc_fetch_parse(buf, len, FKC_FETCH_MAX_VERSION + 1, &r) == FKC_FETCH_EVERSION);
    }
    fkc_fetch_response_free(&r);
    free(buf);
    return 0;
}
