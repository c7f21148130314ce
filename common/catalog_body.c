/* The public catalog body: a copy of the file without its plans' "osbq" objects (for one
 * platform, without the services it does not see), dumped so its numbers read as written, and
 * its ETag (BLAKE2b of the body). */
#include "catalog_body.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

/* 128 bits of BLAKE2b: plenty to tell catalog versions apart, short enough for a header. */
#define ETAG_HASH_BYTES 16
_Static_assert(2 * ETAG_HASH_BYTES + 3 == OSBQ_CATALOG_ETAG_SIZE, "ETag size");

/* 15 significant digits print any decimal a person writes as written (0.99 stays 0.99 instead
 * of 0.98999999999999999); when some number needs all 17 to round-trip, the whole body gets 17,
 * as jansson has one precision per dump. */
static char *dump_body(const json_t *doc)
{
    const size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER;
    char *text = json_dumps(doc, flags | JSON_REAL_PRECISION(15));
    if (text == NULL)
        return NULL;
    json_t *back = json_loads(text, 0, NULL);
    bool exact = back != NULL && json_equal(back, doc);
    json_decref(back);
    if (exact)
        return text;
    free(text);
    return json_dumps(doc, flags | JSON_REAL_PRECISION(17));
}

/* Dumps copy (osbq objects already removed) as a served body and computes its quoted ETag. */
static int body_and_etag(const json_t *copy, char **body, size_t *len,
                         char etag[OSBQ_CATALOG_ETAG_SIZE], struct osbq_error *err)
{
    *body = dump_body(copy);
    if (*body == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    *len = strlen(*body);
    unsigned char hash[ETAG_HASH_BYTES];
    char hex[2 * ETAG_HASH_BYTES + 1];
    if (crypto_generichash(hash, sizeof hash, (const unsigned char *)*body, *len, NULL, 0) != 0) {
        free(*body);
        *body = NULL;
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot hash the catalog body");
    }
    sodium_bin2hex(hex, sizeof hex, hash, sizeof hash);
    etag[0] = '"';
    memcpy(etag + 1, hex, 2 * ETAG_HASH_BYTES);
    etag[2 * ETAG_HASH_BYTES + 1] = '"';
    etag[2 * ETAG_HASH_BYTES + 2] = '\0';
    return 0;
}

/* A deep copy of root without "osbq" objects and, when keep is not NULL, without the services
 * i < keep_count whose keep[i] is false. */
static json_t *public_copy(const json_t *root, const bool *keep, size_t keep_count)
{
    json_t *copy = json_deep_copy(root);
    if (copy == NULL)
        return NULL;
    json_t *services = json_object_get(copy, "services");
    for (size_t i = json_array_size(services); i > 0; i--) {
        if (keep != NULL && i <= keep_count && !keep[i - 1]) {
            json_array_remove(services, i - 1);
            continue;
        }
        size_t j;
        json_t *plan;
        json_array_foreach (json_object_get(json_array_get(services, i - 1), "plans"), j, plan)
            json_object_del(plan, "osbq");
    }
    return copy;
}

int osbq_catalog_public_body(const json_t *root, const bool *keep, size_t keep_count, char **body,
                             size_t *len, char etag[OSBQ_CATALOG_ETAG_SIZE], struct osbq_error *err)
{
    json_t *copy = public_copy(root, keep, keep_count);
    if (copy == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    int rc = body_and_etag(copy, body, len, etag, err);
    json_decref(copy);
    return rc;
}
