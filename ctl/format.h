/* How osbq-ctl writes values: times, durations, sizes, and records and documents as JSON. No
 * Redis here. */
#ifndef CTL_FORMAT_H
#define CTL_FORMAT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store_admin.h"

/* Big enough for every text below. */
#define FORMAT_TEXT_MAX 48

/* Parses a record's decimal integer (a *_ms time, a count). Returns true with *out, false when
 * text is NULL or not a whole number. */
bool format_parse_int(const char *text, int64_t *out);

/* A time an operator gives (events --since, usage --from) into epoch ms: RFC 3339 UTC
 * ("2026-12-01T10:00:00Z", with an optional fraction of a second), digits (epoch ms), or an age
 * before now_ms ("90s", "30m", "24h", "7d"). 0, or -1 when it is none of these. */
int format_parse_time(const char *text, int64_t now_ms, int64_t *out);

/* ms since the epoch as ISO-8601 UTC, "2024-05-01T12:34:56Z", or with milliseconds
 * "2024-05-01T12:34:56.789Z"; "-" when ms is negative. Writes into buf and returns it. */
const char *format_time(int64_t ms, bool with_ms, char *buf, size_t size);

/* The time in the record's field name, as format_time; "-" when absent or not a number. */
const char *format_time_field(const struct osbq_fields *record, const char *name, bool with_ms,
                              char *buf, size_t size);

/* A duration for people: "850ms", "12.5s", "3m05s", "2h03m", "4d02h"; "-" when negative. */
const char *format_duration(int64_t ms, char *buf, size_t size);

/* A size in bytes for people: "512 B", "1.2 KiB", "3.4 MiB", "1.0 GiB"; "-" when negative. */
const char *format_bytes(int64_t bytes, char *buf, size_t size);

/* A JSON value as a table cell: a string as it is, an integer or real as a number, true or
 * false, an array as its length, an object as "{...}"; NULL for a missing value or null (the
 * table shows "-"). The result is value's string or buf. */
const char *format_json_cell(const json_t *value, char *buf, size_t size);

/* text as a JSON string; bytes of text that is not UTF-8 become '?'. New reference, or NULL
 * when text is NULL or out of memory. */
json_t *format_json_string(const char *text);

/* A record's fields as a JSON object, named as in Redis (docs/architecture.md): times, counts
 * and lock_s as integers, instance_usable and update_repeatable as booleans, parameters,
 * context, metadata and bind_resource as the JSON they hold, the rest as strings (and any value
 * that does not convert stays a string). New reference, or NULL when out of memory. */
json_t *format_fields_json(const struct osbq_fields *record);

/* Writes root (stolen) to stdout as one indented JSON document and a newline. 0, or -1 when
 * root is NULL (out of memory) or the write failed. */
int format_print_json(json_t *root);

#endif
