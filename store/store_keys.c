/* Every key the store builds: "<ns>:<kind>:<id>" with ids percent-encoded, so an id can never
 * hold the ':' separator or a glob character. docs/architecture.md lists the keys. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "store_requests.h"

int store_key(const struct osbq_store *store, char *buf, size_t size, const char *suffix)
{
    int n = snprintf(buf, size, "%s:%s", store->cfg->namespace_, suffix);
    if (n < 0 || (size_t)n >= size)
        return -1;
    return n;
}

/* Appends id to buf at *used, percent-encoded outside A-Za-z0-9-._~, so an id can never hold
 * the ':' separator or a glob character. Returns 0, or -1 when it does not fit. */
static int append_id(char *buf, size_t size, size_t *used, const char *id)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t at = *used;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~';
        if (at + (plain ? 1 : 3) >= size)
            return -1;
        if (plain) {
            buf[at++] = (char)*p;
        } else {
            buf[at++] = '%';
            buf[at++] = hex[*p >> 4];
            buf[at++] = hex[*p & 15];
        }
    }
    buf[at] = '\0';
    *used = at;
    return 0;
}

int store_id_key(const struct osbq_store *store, char *buf, size_t size, const char *kind,
                 const char *id)
{
    int n = snprintf(buf, size, "%s:%s:", store->cfg->namespace_, kind);
    if (n < 0 || (size_t)n >= size)
        return -1;
    size_t used = (size_t)n;
    return append_id(buf, size, &used, id);
}

int store_binding_key(const struct osbq_store *store, char *buf, size_t size,
                      const char *instance_id, const char *binding_id)
{
    if (store_id_key(store, buf, size, "binding", instance_id) < 0)
        return -1;
    size_t used = strlen(buf);
    if (used + 2 >= size)
        return -1;
    buf[used++] = ':';
    return append_id(buf, size, &used, binding_id);
}

int store_quota_key(const struct osbq_store *store, char *buf, size_t size, const char *name,
                    const char *value)
{
    if (value == NULL)
        return store_id_key(store, buf, size, "quota", name);
    if (store_id_key(store, buf, size, "quota", name) < 0)
        return -1;
    size_t used = strlen(buf);
    if (used + 2 >= size)
        return -1;
    buf[used++] = ':';
    return append_id(buf, size, &used, value);
}

char *osbq_store_quota_spec(const struct osbq_store *store, const struct osbq_policy_use *uses,
                            size_t count)
{
    size_t cap = 1 + count * (STORE_KEY_MAX + 24), len = 0;
    char *spec = malloc(cap);
    if (spec == NULL)
        return NULL;
    spec[0] = '\0';
    for (size_t i = 0; i < count; i++) {
        char key[STORE_KEY_MAX];
        if (store_quota_key(store, key, sizeof key, uses[i].name, uses[i].value) < 0) {
            free(spec);
            return NULL;
        }
        int n =
            snprintf(spec + len, cap - len, "%s%" PRId64 " %s", i ? "\n" : "", uses[i].limit, key);
        if (n < 0 || (size_t)n >= cap - len) {
            free(spec);
            return NULL;
        }
        len += (size_t)n;
    }
    return spec;
}

/* Status keys: "<ns>:status:<role>" (sorted set of ids scored by expiry, ms) and
 * "<ns>:status:<role>:<id>" (the JSON text, with the same expiry). */
int store_status_keys(const struct osbq_store *store, const char *role, const char *id, char *index,
                      char *entry, struct osbq_error *err)
{
    char kind[32];
    if (strcmp(role, "gateway") != 0 && strcmp(role, "worker") != 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "unknown process role \"%s\"", role);
    (void)snprintf(kind, sizeof kind, "status:%s", role);
    if (store_key(store, index, STORE_KEY_MAX, kind) < 0 ||
        (id != NULL && store_id_key(store, entry, STORE_KEY_MAX, kind, id) < 0))
        return osbq_error_set(err, OSBQ_ERR_INVALID, "process id too long");
    return 0;
}

int store_key_prefix(const struct osbq_store *store, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s:", store->cfg->namespace_);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}
