/*
 * fkc_errors.h — the error kinds the record kernels report. The Cython bridge
 * maps each kind to one class of fastkc/errors.py, so keep the two in step.
 */
#ifndef FKC_ERRORS_H
#define FKC_ERRORS_H

typedef enum fkc_error_kind {
    FKC_OK = 0,
    FKC_ERR_INVALID = 1,           /* InvalidRecordError: impossible structure */
    FKC_ERR_CRC = 2,               /* RecordCrcError */
    FKC_ERR_DECOMPRESS = 3,        /* RecordDecompressionError: the codec rejected the payload */
    FKC_ERR_SIZE_LIMIT = 4,        /* DecompressedSizeLimitError: output would pass the cap */
    FKC_ERR_UNSUPPORTED_CODEC = 5, /* UnsupportedCompressionError */
    FKC_ERR_HOST = 6,              /* the host callback failed with its own error (a pending
                                      Python exception such as MemoryError): propagate it */
    FKC_ERR_NOMEM = 7,             /* a C allocation failed */
    FKC_ERR_BUDGET = 8,            /* RecordCountLimitError: a batch declares more records than the
                                      per-batch descriptor budget (max_batch_records) */
    FKC_ERR_ARROW_LIMIT = 9,       /* ArrowCapacityError: a whole (one-step) Arrow decode would pass
                                      Arrow's int32 offsets; the stepper splits instead */
    FKC_ERR_ARROW_NOMEM = 10       /* ArrowMemoryError: the Arrow columns could not grow for what a
                                      batch decodes (an address-space limit, a huge value): typed, with
                                      the batch's offset, so the consumer can stop there and seek past */
} fkc_error_kind;

#endif /* FKC_ERRORS_H */
