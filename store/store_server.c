/* What the server says of itself (INFO server): Redis or Valkey, and its own version, for the
 * daemons' start-up lines and osbq-ctl stats; and the reading of INFO's texts that
 * store_replication.c shares. */
#include <stdio.h>
#include <string.h>

#include "store_internal.h"

bool store_text_value(const char *text, const char *separators, char assign, const char *key,
                      char *buf, size_t size)
{
    size_t key_len = strlen(key);
    for (const char *at = text; at != NULL && *at != '\0';) {
        const char *end = strpbrk(at, separators);
        size_t len = end ? (size_t)(end - at) : strlen(at);
        if (len > key_len && strncmp(at, key, key_len) == 0 && at[key_len] == assign) {
            size_t value_len = len - key_len - 1;
            if (value_len >= size)
                value_len = size - 1;
            memcpy(buf, at + key_len + 1, value_len);
            buf[value_len] = '\0';
            return true;
        }
        at = end ? end + strspn(end, separators) : NULL;
    }
    return false;
}

/* The value of the line "key:value" in INFO's text (store_text_value). */
static bool info_value(const char *info, const char *key, char *buf, size_t size)
{
    return store_text_value(info, "\r\n", ':', key, buf, size);
}

void osbq_store_server_parse(const char *info, struct osbq_store_server *out)
{
    memset(out, 0, sizeof *out);
    /* Redis has no server_name; Valkey names itself there and keeps its own version in
     * "<name>_version", redis_version being the Redis it answers for. */
    if (info_value(info, "server_name", out->name, sizeof out->name) && out->name[0] != '\0') {
        char key[sizeof out->name + sizeof "_version"];
        (void)snprintf(key, sizeof key, "%s_version", out->name);
        if (info_value(info, key, out->version, sizeof out->version))
            return;
    } else if (info_value(info, "redis_version", out->version, sizeof out->version)) {
        (void)snprintf(out->name, sizeof out->name, "redis");
        return;
    }
    /* A named server without its own version field: the version it answers for is all there
     * is. */
    (void)info_value(info, "redis_version", out->version, sizeof out->version);
}

int osbq_store_server_get(struct osbq_store *store, struct osbq_store_server *out,
                          struct osbq_error *err)
{
    redisReply *reply = store_command(store, "INFO server", err, "INFO server");
    int rc = reply != NULL ? 0 : -1;
    if (rc == 0 && reply->type == REDIS_REPLY_STRING)
        osbq_store_server_parse(reply->str, out);
    else if (rc == 0)
        rc = osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis INFO server: odd reply");
    freeReplyObject(reply);
    return rc;
}
