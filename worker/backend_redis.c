/* The redis backend: each instance is a key prefix on a shared Redis server (6 or later), each
 * binding an ACL user limited to that prefix's keys and channels (docs/backends.md); the
 * connection to that server is redis_target.c's. */
#include <hiredis/hiredis.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "redis_target.h"

#define REDIS_DEFAULT_ACL "+@all -@admin -@dangerous"

/* BLAKE2b-128 of the ids: names derived from ids stay fixed-length, need no escaping in glob
 * and ACL patterns whatever bytes an id holds, and never collide in practice. */
#define REDIS_HASH_BYTES 16
#define REDIS_HASH_HEX   (2 * REDIS_HASH_BYTES + 1)

/* Random bytes behind a password: 192 bits, 32 base64url characters. */
#define REDIS_PASSWORD_BYTES 24
#define REDIS_PASSWORD_LEN                                                                         \
    sodium_base64_ENCODED_LEN(REDIS_PASSWORD_BYTES, sodium_base64_VARIANT_URLSAFE_NO_PADDING)

/* Key prefix "osbq:<hash of instance id>" (the ':' after it is part of every key) and user
 * names "osbq-<hash of instance id>-<hash of instance id/binding id>". */
#define REDIS_PREFIX_LEN (sizeof "osbq:" - 1 + REDIS_HASH_HEX)
#define REDIS_USER_LEN   (sizeof "osbq--" - 1 + 2 * REDIS_HASH_HEX)

/* SCAN's batch size: large enough to make a million keys a few thousand round trips, small
 * enough that one UNLINK never stalls the server. */
#define REDIS_SCAN_COUNT "500"

/* The most words a plan's acl setting may have. */
#define REDIS_ACL_WORDS_MAX 64

/* The plan's string setting key, or def when it has none. */
static const char *setting(const struct backend_call *call, const char *key, const char *def)
{
    const char *value = json_string_value(json_object_get(call->plan->settings, key));
    return value != NULL ? value : def;
}

/* Splits the plan's acl setting into words[] (pointers into buf). Only command rules are
 * allowed: words starting with '+' or '-', "allcommands", "nocommands". Keys, channels,
 * passwords, "on"/"off", "reset" and selectors belong to the backend: a plan saying "~*" or
 * "nopass" would break the isolation between instances. Returns the number of words, or -1
 * with the outcome filled. */
static int acl_words(struct backend_call *call, char *buf, size_t buf_size,
                     const char *words[REDIS_ACL_WORDS_MAX])
{
    const char *acl = setting(call, "acl", REDIS_DEFAULT_ACL);
    if ((size_t)snprintf(buf, buf_size, "%s", acl) >= buf_size) {
        redis_target_fail(call, "The plan's acl setting is too long.");
        return -1;
    }
    int n = 0;
    for (char *p = buf;;) {
        p += strspn(p, " \t");
        if (*p == '\0')
            return n;
        char *end = p + strcspn(p, " \t");
        bool last = *end == '\0';
        *end = '\0';
        bool command_rule = ((p[0] == '+' || p[0] == '-') && p[1] != '\0') ||
                            strcmp(p, "allcommands") == 0 || strcmp(p, "nocommands") == 0;
        if (!command_rule) {
            redis_target_fail(
                call, "The plan's acl setting may only hold command rules (+@read, -@admin, "
                      "+get, allcommands, ...).");
            return -1;
        }
        if (n == REDIS_ACL_WORDS_MAX) {
            redis_target_fail(call, "The plan's acl setting has too many rules.");
            return -1;
        }
        words[n++] = p;
        if (last)
            return n;
        p = end + 1;
    }
}

/* Hex of BLAKE2b-128 over a, or over a "/" b when b is not NULL ('/' never occurs in an id). */
static void hash_hex(char out[REDIS_HASH_HEX], const char *a, const char *b)
{
    unsigned char digest[REDIS_HASH_BYTES];
    crypto_generichash_state st;
    (void)crypto_generichash_init(&st, NULL, 0, sizeof digest);
    (void)crypto_generichash_update(&st, (const unsigned char *)a, strlen(a));
    if (b != NULL) {
        (void)crypto_generichash_update(&st, (const unsigned char *)"/", 1);
        (void)crypto_generichash_update(&st, (const unsigned char *)b, strlen(b));
    }
    (void)crypto_generichash_final(&st, digest, sizeof digest);
    (void)sodium_bin2hex(out, REDIS_HASH_HEX, digest, sizeof digest);
}

/* "osbq:<hash>": the instance's key prefix without its final ':'. */
static void instance_prefix(const struct backend_call *call, char out[REDIS_PREFIX_LEN])
{
    char hex[REDIS_HASH_HEX];
    hash_hex(hex, call->job->instance_id, NULL);
    (void)snprintf(out, REDIS_PREFIX_LEN, "osbq:%s", hex);
}

/* "osbq-<hash of instance>-": what every user name of the instance starts with. */
static void user_prefix(const struct backend_call *call, char out[REDIS_USER_LEN])
{
    char hex[REDIS_HASH_HEX];
    hash_hex(hex, call->job->instance_id, NULL);
    (void)snprintf(out, REDIS_USER_LEN, "osbq-%s-", hex);
}

/* The binding's user: the same name on every run of the same bind, so a rerun replaces the
 * earlier attempt's password instead of adding a second user. */
static void binding_user(const struct backend_call *call, char out[REDIS_USER_LEN])
{
    char instance_hex[REDIS_HASH_HEX];
    char binding_hex[REDIS_HASH_HEX];
    hash_hex(instance_hex, call->job->instance_id, NULL);
    hash_hex(binding_hex, call->job->instance_id, call->job->binding_id);
    (void)snprintf(out, REDIS_USER_LEN, "osbq-%s-%s", instance_hex, binding_hex);
}

/* ---- operations ---- */

static int redis_provision(struct backend_call *call)
{
    char acl[BACKEND_DESCRIPTION_MAX];
    const char *words[REDIS_ACL_WORDS_MAX];
    struct redis_target t;
    /* A plan whose acl the bind would refuse fails now, before anyone relies on the instance. */
    if (acl_words(call, acl, sizeof acl, words) < 0)
        return 0;
    if (!redis_target_open(call, &t))
        goto out;
    /* ACL USERS needs ACL support (Redis 6) and the right to manage users: exactly what binds
     * will need. Nothing is created: the prefix is reserved by being derived from the id. */
    const char *argv[] = {"ACL", "USERS"};
    redisReply *r = redis_target_command(call, &t, 2, argv, NULL);
    if (r == NULL) {
        redis_target_fail(call, "The connection to the plan's Redis server failed.");
    } else if (r->type != REDIS_REPLY_ARRAY) {
        if (r->type == REDIS_REPLY_ERROR)
            redis_target_log_error(call, &t, "ACL USERS", r);
        redis_target_fail(
            call, "The plan's Redis server cannot manage users for the broker: it needs Redis 6 "
                  "or later, and an administrator allowed to run ACL commands.");
    } else if (call->cancelled(call)) {
        freeReplyObject(r);
        redis_target_close(&t);
        return -1;
    } else {
        backend_call_succeed(call, "Provisioned.");
    }
    freeReplyObject(r);
out:
    redis_target_close(&t);
    return 0;
}

/* Nothing of an instance depends on its plan's settings but its users' command rules, set at
 * bind; an update changes nothing (docs/backends.md). */
static int redis_update(struct backend_call *call)
{
    backend_call_succeed(call, "Updated.");
    return 0;
}

/* "[host]" for an IPv6 literal (a URI's host needs the brackets), host otherwise. */
static void uri_host(char *out, size_t size, const char *host)
{
    (void)snprintf(out, size, strchr(host, ':') != NULL ? "[%s]" : "%s", host);
}

/* The bind's result; NULL when out of memory. */
static json_t *make_binding(const struct redis_target *t, const char *user, const char *password,
                            const char *prefix)
{
    char port[8];
    char key_prefix[REDIS_PREFIX_LEN + 1];
    char db[16] = "";
    (void)snprintf(port, sizeof port, "%u", (unsigned)t->addr.port);
    (void)snprintf(key_prefix, sizeof key_prefix, "%s:", prefix);
    if (t->addr.db != 0)
        (void)snprintf(db, sizeof db, "/%u", t->addr.db);
    size_t host_len = strlen(t->addr.host) + 3;
    char *host = malloc(host_len);
    if (host == NULL)
        return NULL;
    uri_host(host, host_len, t->addr.host);
    /* The user name is hex and '-', the password base64url: nothing to escape in userinfo. */
    int uri_len = snprintf(NULL, 0, "redis://%s:%s@%s:%s%s", user, password, host, port, db);
    char *uri = uri_len < 0 ? NULL : malloc((size_t)uri_len + 1);
    json_t *binding = NULL;
    if (uri != NULL) {
        (void)snprintf(uri, (size_t)uri_len + 1, "redis://%s:%s@%s:%s%s", user, password, host,
                       port, db);
        binding =
            json_pack("{s:{s:s, s:i, s:s, s:s, s:s, s:s}, s:[{s:s, s:[s], s:s}]}", "credentials",
                      "host", t->addr.host, "port", (int)t->addr.port, "username", user, "password",
                      password, "uri", uri, "key_prefix", key_prefix, "endpoints", "host",
                      t->addr.host, "ports", port, "protocol", "tcp");
        sodium_memzero(uri, (size_t)uri_len);
        free(uri);
    }
    free(host);
    return binding;
}

/* Creates (or resets) the binding's ACL user with password and the plan's words: "reset" first,
 * so a rerun of the bind leaves only the new password (and the rules of the plan as it is now),
 * and exactly one set of credentials works. False with the outcome filled. */
static bool set_user(struct backend_call *call, struct redis_target *t, const char *user,
                     const char *prefix, const char *password, const char **words, int nwords)
{
    char keys[REDIS_PREFIX_LEN + 3];
    char channels[REDIS_PREFIX_LEN + 3];
    char password_rule[REDIS_PASSWORD_LEN + 1];
    (void)snprintf(keys, sizeof keys, "~%s:*", prefix);
    (void)snprintf(channels, sizeof channels, "&%s:*", prefix);
    (void)snprintf(password_rule, sizeof password_rule, ">%s", password);
    const char *argv[8 + REDIS_ACL_WORDS_MAX] = {"ACL", "SETUSER",     user, "reset",
                                                 "on",  password_rule, keys, channels};
    for (int i = 0; i < nwords; i++)
        argv[8 + i] = words[i];
    redisReply *r = redis_target_command(call, t, 8 + nwords, argv, NULL);
    sodium_memzero(password_rule, sizeof password_rule);
    bool ok = r != NULL && r->type != REDIS_REPLY_ERROR;
    if (r != NULL && !ok) {
        /* Redis quotes the rule it refused; the words were checked, so the password rule is
         * never the one, but make sure it never reaches the log. */
        if (strstr(r->str, password) == NULL)
            redis_target_log_error(call, t, "ACL SETUSER", r);
        redis_target_fail(call,
                          "The plan's Redis server refused to create the binding's user (check the "
                          "plan's acl setting).");
    } else if (r == NULL) {
        redis_target_fail(call, "The connection to the plan's Redis server failed.");
    }
    freeReplyObject(r);
    return ok;
}

/* Ends the sessions logged in with an earlier attempt's password; when that cannot be made sure
 * of, the bind fails (false, the outcome filled) and its rerun tries again. */
static bool end_sessions(struct backend_call *call, struct redis_target *t, const char *user)
{
    const char *kill[] = {"CLIENT", "KILL", "USER", user};
    redisReply *killed = redis_target_command(call, t, 4, kill, NULL);
    bool ok = killed != NULL && killed->type == REDIS_REPLY_INTEGER;
    if (killed != NULL && !ok && killed->type == REDIS_REPLY_ERROR)
        redis_target_log_error(call, t, "CLIENT KILL USER", killed);
    if (!ok)
        redis_target_fail(call, killed == NULL ? "The connection to the plan's Redis server failed."
                                               : REDIS_FAILED);
    freeReplyObject(killed);
    return ok;
}

static int redis_bind(struct backend_call *call)
{
    char acl[BACKEND_DESCRIPTION_MAX];
    const char *words[REDIS_ACL_WORDS_MAX];
    int nwords = acl_words(call, acl, sizeof acl, words);
    if (nwords < 0)
        return 0;
    if (sodium_init() < 0) {
        redis_target_fail(call, "The broker has no source of random numbers.");
        return 0;
    }
    struct redis_target t;
    if (!redis_target_open(call, &t)) {
        redis_target_close(&t);
        return 0;
    }
    char prefix[REDIS_PREFIX_LEN];
    char user[REDIS_USER_LEN];
    unsigned char raw[REDIS_PASSWORD_BYTES];
    char password[REDIS_PASSWORD_LEN];
    instance_prefix(call, prefix);
    binding_user(call, user);
    randombytes_buf(raw, sizeof raw);
    (void)sodium_bin2base64(password, sizeof password, raw, sizeof raw,
                            sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    int rc = 0;
    if (set_user(call, &t, user, prefix, password, words, nwords) && end_sessions(call, &t, user)) {
        if (call->cancelled(call))
            rc = -1; /* whoever runs the bind next resets the password again */
        else if (backend_call_set_binding(call, make_binding(&t, user, password, prefix)) < 0)
            redis_target_fail(call, REDIS_NO_MEMORY);
        else
            backend_call_succeed(call, "Bound.");
    }
    sodium_memzero(raw, sizeof raw);
    sodium_memzero(password, sizeof password);
    redis_target_close(&t);
    return rc;
}

static int redis_unbind(struct backend_call *call)
{
    struct redis_target t;
    if (redis_target_open(call, &t)) {
        char user[REDIS_USER_LEN];
        binding_user(call, user);
        if (redis_target_drop_user(call, &t, user))
            backend_call_succeed(call, "Unbound.");
    }
    redis_target_close(&t);
    return 0;
}

/* Deletes every user of the instance (bindings not unbound before). Returns true, or false
 * with the outcome filled. */
static bool drop_instance_users(struct backend_call *call, struct redis_target *t)
{
    char prefix[REDIS_USER_LEN];
    user_prefix(call, prefix);
    size_t prefix_len = strlen(prefix);
    const char *argv[] = {"ACL", "USERS"};
    redisReply *users = redis_target_command(call, t, 2, argv, NULL);
    if (users == NULL || users->type != REDIS_REPLY_ARRAY) {
        if (users != NULL && users->type == REDIS_REPLY_ERROR)
            redis_target_log_error(call, t, "ACL USERS", users);
        redis_target_fail(call, users == NULL ? "The connection to the plan's Redis server failed."
                                              : REDIS_FAILED);
        freeReplyObject(users);
        return false;
    }
    bool ok = true;
    for (size_t i = 0; ok && i < users->elements; i++) {
        const redisReply *u = users->element[i];
        if (u->type == REDIS_REPLY_STRING && u->len > prefix_len &&
            strncmp(u->str, prefix, prefix_len) == 0)
            ok = redis_target_drop_user(call, t, u->str);
    }
    freeReplyObject(users);
    return ok;
}

/* The databases to clean: all of the server's (CONFIG GET databases), as Redis ACLs cannot keep
 * a user in one; only the URL's when the server will not say. */
static unsigned database_count(struct backend_call *call, struct redis_target *t)
{
    const char *argv[] = {"CONFIG", "GET", "databases"};
    redisReply *r = redis_target_command(call, t, 3, argv, NULL);
    unsigned n = 0;
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING) {
        char *end = NULL;
        unsigned long v = strtoul(r->element[1]->str, &end, 10);
        if (end != r->element[1]->str && *end == '\0' && v <= 100000)
            n = (unsigned)v;
    }
    freeReplyObject(r);
    return n;
}

/* Unlinks the keys matching pattern in the selected database, one SCAN batch at a time,
 * adding to *deleted and reporting it. 0 when done, 1 when failed (outcome filled), -1 when
 * cancelled. */
static int unlink_keys(struct backend_call *call, struct redis_target *t, const char *pattern,
                       long long *deleted)
{
    char cursor[32] = "0";
    do {
        const char *scan[] = {"SCAN", cursor, "MATCH", pattern, "COUNT", REDIS_SCAN_COUNT};
        redisReply *r = redis_target_command(call, t, 6, scan, NULL);
        if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY ||
            r->element[0]->len >= sizeof cursor) {
            if (r != NULL && r->type == REDIS_REPLY_ERROR)
                redis_target_log_error(call, t, "SCAN", r);
            redis_target_fail(call, r == NULL ? "The connection to the plan's Redis server failed."
                                              : REDIS_FAILED);
            freeReplyObject(r);
            return 1;
        }
        memcpy(cursor, r->element[0]->str, r->element[0]->len + 1);
        const redisReply *keys = r->element[1];
        if (keys->elements > 0) {
            /* Keys are binary: passed with their lengths. */
            size_t argc = keys->elements + 1;
            const char **argv = calloc(argc, sizeof *argv);
            size_t *argvlen = calloc(argc, sizeof *argvlen);
            if (argv == NULL || argvlen == NULL) {
                free(argv);
                free(argvlen);
                freeReplyObject(r);
                redis_target_fail(call, REDIS_NO_MEMORY);
                return 1;
            }
            argv[0] = "UNLINK";
            argvlen[0] = strlen("UNLINK");
            for (size_t i = 0; i < keys->elements; i++) {
                argv[i + 1] = keys->element[i]->str;
                argvlen[i + 1] = keys->element[i]->len;
            }
            redisReply *u = redis_target_command(call, t, (int)argc, argv, argvlen);
            free(argv);
            free(argvlen);
            bool ok = u != NULL && u->type == REDIS_REPLY_INTEGER;
            if (ok)
                *deleted += u->integer;
            else if (u != NULL && u->type == REDIS_REPLY_ERROR)
                redis_target_log_error(call, t, "UNLINK", u);
            freeReplyObject(u);
            if (!ok) {
                freeReplyObject(r);
                redis_target_fail(call, u == NULL
                                            ? "The connection to the plan's Redis server failed."
                                            : REDIS_FAILED);
                return 1;
            }
        }
        freeReplyObject(r);
        /* Every batch reports (renewing the lease, however long the scan) and may stop: a
         * rerun scans again from the start and finds only what is left. */
        char text[64];
        (void)snprintf(text, sizeof text, "Deleting keys (%lld deleted)", *deleted);
        call->progress(call, text);
        if (call->cancelled(call))
            return -1;
    } while (strcmp(cursor, "0") != 0);
    return 0;
}

static int redis_deprovision(struct backend_call *call)
{
    struct redis_target t;
    int rc = 0;
    if (!redis_target_open(call, &t))
        goto out;
    /* Users first: once they are gone no application can add keys behind the scan. */
    call->progress(call, "Deleting users");
    if (!drop_instance_users(call, &t))
        goto out;
    if (call->cancelled(call)) {
        rc = -1;
        goto out;
    }
    char prefix[REDIS_PREFIX_LEN];
    char pattern[REDIS_PREFIX_LEN + 2];
    instance_prefix(call, prefix);
    (void)snprintf(pattern, sizeof pattern, "%s:*", prefix);
    long long deleted = 0;
    unsigned databases = database_count(call, &t);
    if (databases == 0) {
        rc = unlink_keys(call, &t, pattern, &deleted);
    } else {
        for (unsigned db = 0; rc == 0 && db < databases; db++) {
            redisReply *r = redisCommand(t.c, "SELECT %u", db);
            if (r == NULL) {
                redis_target_fail(call, "The connection to the plan's Redis server failed.");
                rc = 1;
                break;
            }
            /* A database the server refuses (cluster mode has only 0) holds nothing. */
            bool selected = r->type != REDIS_REPLY_ERROR;
            freeReplyObject(r);
            if (selected)
                rc = unlink_keys(call, &t, pattern, &deleted);
        }
    }
    if (rc == 0)
        backend_call_succeed(call, "Deprovisioned.");
out:
    redis_target_close(&t);
    return rc < 0 ? -1 : 0;
}

/* Idempotency (docs/backends.md): every name is derived from the ids (the instance's key
 * prefix, each binding's user), so a rerun finds what an earlier run made; a bind resets its
 * user's password, unbind and deprovision treat "already gone" as done. */
const struct backend backend_redis = {
    .name = "redis",
    .provision = redis_provision,
    .update = redis_update,
    .deprovision = redis_deprovision,
    .bind = redis_bind,
    .unbind = redis_unbind,
};
