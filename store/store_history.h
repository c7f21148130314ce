/* An operation's history as operators read it: the lines of its history field plus the events
 * its fields already say, which the scripts leave out of the field (docs/decisions/0041). */
#ifndef OSBQ_STORE_HISTORY_H
#define OSBQ_STORE_HISTORY_H

#include <stddef.h>

#include "store_fields.h"

/* The events of an operation (its fields op, its history field text of len bytes, text NULL
 * when it has none), one JSON object each, oldest first, in a NULL-terminated array the caller
 * frees with osbq_store_strings_free; *count its length. NULL when out of memory. */
char **store_history_events(const struct osbq_fields *op, const char *text, size_t len,
                            size_t *count);

#endif
