/* The redis backend's connection to its target server. */
#include "redis_target.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define REDIS_DEFAULT_URL_ENV "OSBQ_REDIS_TARGET_URL"

/* Every connect and command is bounded: a target that stops answering must not hold a runner
 * thread past the lease (docs/backends.md, "Deadlines"), and 5 s is far above any command we
 * send (SCAN and UNLINK of at most a few hundred keys). */
#define REDIS_TIMEOUT_MS 5000

void redis_target_fail(struct backend_call *call, const char *description)
{
    backend_call_fail(call, description, call->job->kind != OSBQ_JOB_PROVISION, false);
}

void redis_target_close(struct redis_target *t)
{
    if (t->c != NULL)
        redisFree(t->c);
    t->c = NULL;
    osbq_redis_addr_clear(&t->addr);
}

redisReply *redis_target_command(struct backend_call *call, struct redis_target *t, int argc,
                                 const char **argv, const size_t *argvlen)
{
    redisReply *r = redisCommandArgv(t->c, argc, argv, argvlen);
    if (r == NULL)
        log_warnx("operation %s: redis target %s:%u: %s failed: %s", call->job->operation_id,
                  t->addr.host, (unsigned)t->addr.port, argv[0], t->c->errstr);
    return r;
}

/* True when r is an error reply starting with text. */
static bool redis_target_error_is(const redisReply *r, const char *text)
{
    return r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, text, strlen(text)) == 0;
}

void redis_target_log_error(struct backend_call *call, const struct redis_target *t,
                            const char *what, const redisReply *r)
{
    log_warnx("operation %s: redis target %s:%u: %s: %s", call->job->operation_id, t->addr.host,
              (unsigned)t->addr.port, what, r->str);
}

/* Connects to the plan's target server as its administrator. Returns true, or false with the
 * outcome filled. Descriptions name neither the address nor the URL (platform users see
 * them); the log has the address, never the URL (it holds the admin password). */
bool redis_target_open(struct backend_call *call, struct redis_target *t)
{
    const char *env = json_string_value(json_object_get(call->plan->settings, "target_url_env"));
    if (env == NULL)
        env = REDIS_DEFAULT_URL_ENV;
    const char *url = getenv(env);
    char text[BACKEND_DESCRIPTION_MAX];
    memset(t, 0, sizeof *t);
    if (url == NULL || url[0] == '\0') {
        log_warnx("operation %s: %s is not set on the worker", call->job->operation_id, env);
        (void)snprintf(text, sizeof text, "%s is not set on the worker.", env);
        redis_target_fail(call, text);
        return false;
    }
    struct osbq_error err = {0};
    if (osbq_redis_addr_parse(url, &t->addr, &err) < 0) {
        /* err's text quotes the URL, password included: not logged. */
        log_warnx("operation %s: %s on the worker is not a valid redis:// URL",
                  call->job->operation_id, env);
        (void)snprintf(text, sizeof text, "%s on the worker is not a valid redis:// URL.", env);
        redis_target_fail(call, text);
        return false;
    }
    struct timeval tv = {.tv_sec = REDIS_TIMEOUT_MS / 1000,
                         .tv_usec = (REDIS_TIMEOUT_MS % 1000) * 1000};
    t->c = redisConnectWithTimeout(t->addr.host, t->addr.port, tv);
    if (t->c == NULL) {
        redis_target_fail(call, REDIS_NO_MEMORY);
        return false;
    }
    if (t->c->err != 0 || redisSetTimeout(t->c, tv) != REDIS_OK) {
        log_warnx("operation %s: redis target %s:%u: %s", call->job->operation_id, t->addr.host,
                  (unsigned)t->addr.port, t->c->errstr);
        redis_target_fail(call, "The plan's Redis server is not reachable.");
        return false;
    }
    if (t->addr.password != NULL) {
        const char *argv[3] = {"AUTH", t->addr.username, t->addr.password};
        int argc = 3;
        if (t->addr.username == NULL) {
            argv[1] = t->addr.password;
            argc = 2;
        }
        redisReply *r = redis_target_command(call, t, argc, argv, NULL);
        bool ok = r != NULL && r->type != REDIS_REPLY_ERROR;
        if (r != NULL && !ok)
            redis_target_log_error(call, t, "AUTH", r);
        freeReplyObject(r);
        if (!ok) {
            redis_target_fail(call, "The broker could not log in to the plan's Redis server.");
            return false;
        }
    }
    if (t->addr.db != 0) {
        redisReply *r = redisCommand(t->c, "SELECT %u", t->addr.db);
        bool ok = r != NULL && r->type != REDIS_REPLY_ERROR;
        if (r != NULL && !ok)
            redis_target_log_error(call, t, "SELECT", r);
        freeReplyObject(r);
        if (!ok) {
            redis_target_fail(
                call, "The plan's Redis server refused the database the broker is set up for.");
            return false;
        }
    }
    return true;
}

/* Runs argv, which must not fail. Returns true, or false with the outcome filled and the
 * cause logged. */
static bool redis_target_run_ok(struct backend_call *call, struct redis_target *t, int argc,
                                const char **argv)
{
    redisReply *r = redis_target_command(call, t, argc, argv, NULL);
    bool ok = r != NULL && r->type != REDIS_REPLY_ERROR;
    if (r != NULL && !ok)
        redis_target_log_error(call, t, argv[0], r);
    freeReplyObject(r);
    if (!ok)
        redis_target_fail(call, r == NULL ? "The connection to the plan's Redis server failed."
                                          : REDIS_FAILED);
    return ok;
}

bool redis_target_drop_user(struct backend_call *call, struct redis_target *t, const char *user)
{
    /* ACL DELUSER disconnects the user's clients too (Redis 6 and later); the explicit kill
     * first also covers servers that do not, and answers "No such user" when it is gone. */
    const char *kill[] = {"CLIENT", "KILL", "USER", user};
    redisReply *r = redis_target_command(call, t, 4, kill, NULL);
    if (r == NULL) {
        redis_target_fail(call, "The connection to the plan's Redis server failed.");
        return false;
    }
    if (r->type == REDIS_REPLY_ERROR && !redis_target_error_is(r, "ERR No such user"))
        redis_target_log_error(call, t, "CLIENT KILL USER", r);
    freeReplyObject(r);
    const char *del[] = {"ACL", "DELUSER", user};
    return redis_target_run_ok(call, t, 3, del);
}
