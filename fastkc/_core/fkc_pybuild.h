/*
 * fkc_pybuild.h — phase 2a: decoded record descriptors → ConsumerRecord
 * instances, built with the CPython API (kept out of csrc/, which has none).
 *
 * Each record is allocated through the namedtuple type's tp_alloc with its
 * 13 slots filled directly, as namedtuple.__new__ would produce, but without
 * the Python-level call. Shared objects (topic, partition, None, small ints)
 * are reference-counted, not recreated.
 *
 * GC: the caller pauses the cyclic GC around the whole build (see
 * _records.pyx for why and the measurements). Records are NOT untracked:
 * each holds a headers list, which user code may mutate into a cycle.
 */
#ifndef FKC_PYBUILD_H
#define FKC_PYBUILD_H

#include <Python.h>

#include "fkc_records.h"

typedef struct fkc_build_ctx {
    PyTypeObject *record_type;
    PyObject *topic;
    PyObject *partition;
    PyObject *key_fn;   /* NULL: no deserializer */
    int key_full;       /* 1: key_fn(topic, headers, data); 0: key_fn(data) */
    PyObject *value_fn;
    int value_full;
    int untrack;        /* 1: untrack each record and its headers list (see _records.pyx) */
} fkc_build_ctx;

static PyObject *fkc_py_bytes_or_none(const uint8_t *p, int32_t len)
{
    if (len < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)len);
}

static PyObject *fkc_py_headers(const fkc_record *rec)
{
    PyObject *list = PyList_New(rec->header_count > 0 ? rec->header_count : 0);
    if (list == NULL || rec->header_count <= 0)
        return list;
    fkc_header_iter it = {rec->headers, rec->headers + rec->headers_len};
    const uint8_t *k, *v;
    int32_t kl, vl;
    Py_ssize_t i = 0;
    while (i < rec->header_count && fkc_header_next(&it, &k, &kl, &v, &vl)) {
        PyObject *key = PyUnicode_DecodeUTF8((const char *)k, (Py_ssize_t)kl, "strict");
        if (key == NULL)
            goto fail;
        PyObject *value = fkc_py_bytes_or_none(v, vl);
        if (value == NULL) {
            Py_DECREF(key);
            goto fail;
        }
        PyObject *pair = PyTuple_New(2);
        if (pair == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto fail;
        }
        PyTuple_SET_ITEM(pair, 0, key);
        PyTuple_SET_ITEM(pair, 1, value);
        PyList_SET_ITEM(list, i, pair);
        i++;
    }
    if (i != rec->header_count) {
        /* Cannot happen after phase 1 validated the headers; never leave NULL slots. */
        Py_SET_SIZE(list, i);
        PyErr_SetString(PyExc_SystemError, "fastkc: header list shorter than its count");
        goto fail_no_size;
    }
    return list;
fail:
    Py_SET_SIZE(list, i); /* slots past i are NULL: drop them before freeing */
fail_no_size:
    Py_DECREF(list);
    return NULL;
}

static PyObject *fkc_py_deserialize(PyObject *fn, int full, PyObject *topic, PyObject *headers, PyObject *data)
{
    PyObject *out;
    if (full) {
        PyObject *args[3] = {topic, headers, data};
        out = PyObject_Vectorcall(fn, args, 3, NULL);
    } else {
        out = PyObject_CallOneArg(fn, data);
    }
    Py_DECREF(data);
    return out;
}

/* Build one ConsumerRecord. Returns a new reference or NULL with an exception. */
static PyObject *fkc_py_record(const fkc_build_ctx *b, const fkc_record *rec)
{
    PyObject *r;
    if (b->untrack) {
        /* Allocated untracked from the start (what tp_alloc + untrack would
         * leave, without linking into and out of the GC list per record).
         * PyObject_GC_NewVar sets the type (a new reference for heap types,
         * as tp_alloc does) and the size; the slots are zeroed here. */
        r = (PyObject *)PyObject_GC_NewVar(PyTupleObject, b->record_type, 13);
        if (r == NULL)
            return NULL;
        memset(((PyTupleObject *)r)->ob_item, 0, 13 * sizeof(PyObject *));
    } else {
        r = b->record_type->tp_alloc(b->record_type, 13);
        if (r == NULL)
            return NULL;
    }
    /* Slots are NULL until set; tuple dealloc tolerates NULL items, so an
     * early return after Py_DECREF(r) is safe. */
    PyObject *headers = fkc_py_headers(rec);
    if (headers == NULL)
        goto fail;
    PyObject *v;
    Py_INCREF(b->topic);
    PyTuple_SET_ITEM(r, 0, b->topic);
    Py_INCREF(b->partition);
    PyTuple_SET_ITEM(r, 1, b->partition);
    if ((v = PyLong_FromLong(rec->leader_epoch)) == NULL)
        goto fail_headers;
    PyTuple_SET_ITEM(r, 2, v);
    if ((v = PyLong_FromLongLong(rec->offset)) == NULL)
        goto fail_headers;
    PyTuple_SET_ITEM(r, 3, v);
    if (rec->timestamp_type < 0) {
        /* magic 0: kafka-python yields None for both timestamp fields */
        Py_INCREF(Py_None);
        PyTuple_SET_ITEM(r, 4, Py_None);
        Py_INCREF(Py_None);
        PyTuple_SET_ITEM(r, 5, Py_None);
    } else {
        if ((v = PyLong_FromLongLong(rec->timestamp)) == NULL)
            goto fail_headers;
        PyTuple_SET_ITEM(r, 4, v);
        PyTuple_SET_ITEM(r, 5, PyLong_FromLong(rec->timestamp_type)); /* 0/1: cached small ints, cannot fail */
    }
    if ((v = fkc_py_bytes_or_none(rec->key, rec->key_len)) == NULL)
        goto fail_headers;
    if (b->key_fn != NULL && (v = fkc_py_deserialize(b->key_fn, b->key_full, b->topic, headers, v)) == NULL)
        goto fail_headers;
    PyTuple_SET_ITEM(r, 6, v);
    if ((v = fkc_py_bytes_or_none(rec->value, rec->value_len)) == NULL)
        goto fail_headers;
    if (b->value_fn != NULL && (v = fkc_py_deserialize(b->value_fn, b->value_full, b->topic, headers, v)) == NULL)
        goto fail_headers;
    PyTuple_SET_ITEM(r, 7, v);
    PyTuple_SET_ITEM(r, 8, headers); /* steals */
    headers = NULL;
    if (rec->magic == 2) {
        Py_INCREF(Py_None);
        PyTuple_SET_ITEM(r, 9, Py_None);
    } else {
        if ((v = PyLong_FromUnsignedLong(rec->checksum)) == NULL)
            goto fail;
        PyTuple_SET_ITEM(r, 9, v);
    }
    if ((v = PyLong_FromLong(rec->key_len)) == NULL)
        goto fail;
    PyTuple_SET_ITEM(r, 10, v);
    if ((v = PyLong_FromLong(rec->value_len)) == NULL)
        goto fail;
    PyTuple_SET_ITEM(r, 11, v);
    if ((v = PyLong_FromLong(rec->header_size)) == NULL)
        goto fail;
    PyTuple_SET_ITEM(r, 12, v);
    if (b->untrack)
        PyObject_GC_UnTrack(PyTuple_GET_ITEM(r, 8)); /* the headers list */
    return r;
fail_headers:
    Py_XDECREF(headers);
fail:
    Py_DECREF(r);
    return NULL;
}

/* Append records [0, count) to a new list. On failure returns NULL; *built
 * tells how many were made (for the error path the caller may rebuild). */
static PyObject *fkc_py_build_list(const fkc_build_ctx *b, const fkc_decode_result *res, size_t count)
{
    PyObject *list = PyList_New((Py_ssize_t)count);
    if (list == NULL)
        return NULL;
    for (size_t i = 0; i < count; i++) {
        PyObject *rec = fkc_py_record(b, &res->records[i]);
        if (rec == NULL) {
            Py_SET_SIZE(list, (Py_ssize_t)i);
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, rec);
    }
    return list;
}

#endif /* FKC_PYBUILD_H */
