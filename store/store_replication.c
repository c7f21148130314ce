/* What Redis says of its replication (INFO replication): the role, the replicas connected and
 * how far behind they are, for start-up lines, /readyz with OSBQ_REDIS_MIN_ACKS and
 * osbq-ctl status. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

/* The value of "name=value" in a comma-separated list (store_text_value). */
static bool field(const char *list, const char *name, char *buf, size_t size)
{
    return store_text_value(list, ",", '=', name, buf, size);
}

static int64_t field_int(const char *list, const char *name)
{
    char text[24];
    if (!field(list, name, text, sizeof text))
        return -1;
    char *end = NULL;
    long long n = strtoll(text, &end, 10);
    return end != text && *end == '\0' ? (int64_t)n : -1;
}

/* One "slaveN:ip=...,port=...,state=...,offset=...,lag=..." line (without its name). */
static void replica_read(const char *list, struct osbq_store_replica *out)
{
    char ip[48] = "?", port[8] = "?";
    (void)field(list, "ip", ip, sizeof ip);
    (void)field(list, "port", port, sizeof port);
    (void)snprintf(out->address, sizeof out->address, strchr(ip, ':') ? "[%s]:%s" : "%s:%s", ip,
                   port);
    if (!field(list, "state", out->state, sizeof out->state))
        (void)snprintf(out->state, sizeof out->state, "unknown");
    out->offset = field_int(list, "offset");
    out->lag_s = field_int(list, "lag");
}

void osbq_store_replication_parse(const char *info, struct osbq_store_replication *out)
{
    memset(out, 0, sizeof *out);
    (void)snprintf(out->role, sizeof out->role, "unknown");
    out->offset = -1;
    char line[512];
    for (const char *at = info; at != NULL && *at != '\0';) {
        const char *end = strpbrk(at, "\r\n");
        size_t len = end ? (size_t)(end - at) : strlen(at);
        if (len < sizeof line) {
            memcpy(line, at, len);
            line[len] = '\0';
            char *colon = strchr(line, ':');
            if (colon != NULL) {
                *colon = '\0';
                const char *value = colon + 1;
                if (strcmp(line, "role") == 0) {
                    (void)snprintf(out->role, sizeof out->role, "%s", value);
                } else if (strcmp(line, "master_repl_offset") == 0) {
                    out->offset = strtoll(value, NULL, 10);
                } else if (strncmp(line, "slave", 5) == 0 && line[5] >= '0' && line[5] <= '9' &&
                           out->replica_count < OSBQ_STORE_REPLICAS_MAX) {
                    struct osbq_store_replica *r = &out->replicas[out->replica_count++];
                    replica_read(value, r);
                    if (strcmp(r->state, "online") == 0)
                        out->online++;
                }
            }
        }
        at = end ? end + strspn(end, "\r\n") : NULL;
    }
}

struct osbq_store_call *osbq_store_replication_call(struct osbq_error *err)
{
    const char *argv[] = {"INFO", "replication"};
    return store_command_new(2, argv, NULL, err);
}

int osbq_store_replication_result(struct osbq_store_call *call, struct osbq_store_replication *out,
                                  struct osbq_error *err)
{
    redisReply *reply = store_call_take_reply(call, err);
    if (reply == NULL)
        return -1;
    int rc = 0;
    if (reply->type == REDIS_REPLY_STRING)
        osbq_store_replication_parse(reply->str, out);
    else
        rc = osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis INFO replication: odd reply");
    freeReplyObject(reply);
    return rc;
}

int osbq_store_replication(struct osbq_store *store, struct osbq_store_replication *out,
                           struct osbq_error *err)
{
    struct osbq_store_call *call =
        osbq_store_call_run_made(store, osbq_store_replication_call(err));
    int rc = call != NULL ? osbq_store_replication_result(call, out, err) : -1;
    osbq_store_call_free(&call);
    return rc;
}

size_t osbq_store_replication_describe(const struct osbq_store_replication *r, char *buf,
                                       size_t size)
{
    int n = snprintf(buf, size, "role %s, %zu replica(s) online", r->role, r->online);
    size_t at = n > 0 ? (size_t)n : 0;
    for (size_t i = 0; i < r->replica_count && at < size; i++) {
        const struct osbq_store_replica *rep = &r->replicas[i];
        n = snprintf(buf + at, size - at, "%s %s %s, lag %" PRId64 " s", i == 0 ? ":" : ";",
                     rep->address, rep->state, rep->lag_s);
        at += n > 0 ? (size_t)n : 0;
    }
    return at < size ? at : size - 1;
}

int osbq_store_replication_check(struct osbq_store *store, char *line, size_t size,
                                 struct osbq_error *err)
{
    struct osbq_store_server server;
    struct osbq_store_replication r;
    if (osbq_store_server_get(store, &server, err) < 0 ||
        osbq_store_replication(store, &r, err) < 0)
        return -1;
    int n = snprintf(line, size, "%s %s, ", server.name[0] != '\0' ? server.name : "server",
                     server.version[0] != '\0' ? server.version : "unknown");
    size_t at = n > 0 && (size_t)n < size ? (size_t)n : 0;
    (void)osbq_store_replication_describe(&r, line + at, size - at);
    return r.online >= store->cfg->redis_min_acks ? 1 : 0;
}
