/*
 * fkc_civil.h — a count of days since 1970-01-01 as a civil date (proleptic
 * Gregorian): what the Avro builder needs for its timestamps and the
 * Protobuf builder for Timestamp's RFC 3339 text, written once.
 *
 * The days are counted in 400-year eras of 146097 days each, with years
 * starting in March so that February's variable length comes last in a
 * year; the arithmetic is exact for every int64 day count whose year fits
 * int64 (callers bound the range they accept before calling).
 */
#ifndef FKC_CIVIL_H
#define FKC_CIVIL_H

#include <stdint.h>

static inline void fkc_civil_from_days(int64_t days, int64_t *year, int *month, int *day)
{
    int64_t z = days + 719468; /* days since 0000-03-01 */
    int64_t era = (z >= 0 ? z : z - 146096) / 146097; /* floor division */
    int64_t doe = z - era * 146097;                    /* [0, 146096] */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);              /* [0, 365] */
    int64_t mp = (5 * doy + 2) / 153;                                    /* March = 0 */
    *day = (int)(doy - (153 * mp + 2) / 5 + 1);
    *month = (int)(mp < 10 ? mp + 3 : mp - 9);
    *year = yoe + era * 400 + (*month <= 2 ? 1 : 0);
}

#endif /* FKC_CIVIL_H */
