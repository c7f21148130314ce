/* A record's fields as an operator reads them (osbq-ctl): name/value pairs, no I/O. */
#ifndef OSBQ_STORE_FIELDS_H
#define OSBQ_STORE_FIELDS_H

#include <stddef.h>

#include "error.h"

/* A record's fields as name/value pairs, as read for an operator. Owned (osbq_fields_clear). */
struct osbq_fields {
    size_t count;  /* pairs */
    char **names;  /* field names */
    char **values; /* their values */
};

/* The value of field name, or NULL when the record has none. */
const char *osbq_fields_get(const struct osbq_fields *fields, const char *name);
void osbq_fields_clear(struct osbq_fields *fields);
void osbq_fields_array_free(struct osbq_fields *records, size_t count);
/* Appends name: value, both taken (NULL: out of memory, and both are freed), where fields'
 * arrays have room for them (a read sizes them once): 0, or -1. */
int osbq_fields_take(struct osbq_fields *fields, char *name, char *value);
/* Appends name: value (copies); -1 with err when out of memory. */
int osbq_fields_add(struct osbq_fields *fields, const char *name, const char *value,
                    struct osbq_error *err);

#endif
