/* The catalog as platforms see it (catalog_body.c): the file without its "osbq" objects, dumped
 * once, and the ETag of that body. */
#ifndef OSBQ_CATALOG_BODY_H
#define OSBQ_CATALOG_BODY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "catalog.h"
#include "error.h"

/* Dumps root (a checked catalog) without its plans' "osbq" objects and, when keep is not NULL,
 * without the services i < keep_count whose keep[i] is false. Returns 0 with *body (caller
 * frees), *len and etag (quoted), or -1 with err. */
int osbq_catalog_public_body(const json_t *root, const bool *keep, size_t keep_count, char **body,
                             size_t *len, char etag[OSBQ_CATALOG_ETAG_SIZE],
                             struct osbq_error *err);

#endif
