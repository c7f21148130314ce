/* The store tests' fixture and blocking forms of the gateway's store calls (store_test_helpers.h).
 */
#include "store_test_helpers.h"

#include <stdlib.h>
#include <string.h>

int store_fixture_start(struct store_fixture *f, const char *ns)
{
    if (redis_fixture_start(&f->redis) < 0)
        return -1;
    f->cfg.redis.host = strdup("127.0.0.1");
    f->cfg.redis.port = (uint16_t)f->redis.port;
    if (f->cfg.redis_timeout_ms == 0)
        f->cfg.redis_timeout_ms = 2000;
    f->cfg.namespace_ = strdup(ns);
    f->cfg.retention_s = 3600;
    f->store = osbq_store_new(&f->cfg);
    f->direct = redisConnect("127.0.0.1", f->redis.port);
    return f->store != NULL && f->direct != NULL && f->direct->err == 0 ? 0 : -1;
}

void store_fixture_stop(struct store_fixture *f)
{
    redisFree(f->direct);
    f->direct = NULL;
    osbq_store_destroy(&f->store);
    redis_fixture_stop(&f->redis);
    free(f->cfg.redis.host);
    f->cfg.redis.host = NULL;
    free(f->cfg.namespace_);
    f->cfg.namespace_ = NULL;
}

int store_fixture_setup(void **state, const char *ns)
{
    struct store_fixture *f = calloc(1, sizeof *f);
    *state = f;
    return f != NULL ? store_fixture_start(f, ns) : -1;
}

int store_fixture_teardown(void **state)
{
    struct store_fixture *f = *state;
    if (f != NULL)
        store_fixture_stop(f);
    free(f);
    return 0;
}

struct osbq_begin_request store_test_request(const char *kind, const char *op, const char *instance,
                                             const char *digest)
{
    return (struct osbq_begin_request){
        .kind = kind,
        .operation_id = op,
        .instance_id = instance,
        .digest = digest,
        .service_id = "svc",
        .plan_id = "plan",
        .job = "job-bytes",
        .job_len = 9,
        .api_version = 217,
        .claim_timeout_ms = 30000,
    };
}

int osbq_store_begin(struct osbq_store *store, const struct osbq_begin_request *req,
                     struct osbq_begin_reply *out, struct osbq_error *err)
{
    struct osbq_store_call *call =
        osbq_store_call_run_made(store, osbq_store_begin_call(store, req, err));
    int rc = call != NULL ? osbq_store_begin_result(call, out, err) : -1;
    osbq_store_call_free(&call);
    return rc;
}

int osbq_store_last_operation(struct osbq_store *store, const char *instance_id,
                              const char *binding_id, const char *operation_id,
                              const char *platform, struct osbq_last_op *out,
                              struct osbq_error *err)
{
    struct osbq_store_call *call = osbq_store_call_run_made(
        store, osbq_store_last_operation_call(store, instance_id, binding_id, operation_id,
                                              platform, err));
    int rc = call != NULL ? osbq_store_last_operation_result(call, out, err) : -1;
    osbq_store_call_free(&call);
    return rc;
}

int store_poll(struct store_fixture *f, const char *operation_id, const char *instance_id,
               const char *binding_id, const char *platform, struct osbq_last_op *out)
{
    struct osbq_error err = {0};
    struct osbq_store_call *call =
        osbq_store_call_run_made(f->store, osbq_store_poll_call(f->store, operation_id, &err));
    int rc = call != NULL
                 ? osbq_store_poll_result(call, instance_id, binding_id, platform, out, &err)
                 : -1;
    osbq_store_call_free(&call);
    return rc;
}

const char *store_field(struct store_fixture *f, const char *key, const char *name)
{
    static char value[256];
    redisReply *r = redisCommand(f->direct, "HGET %s %s", key, name);
    value[0] = '\0';
    if (r != NULL && r->type == REDIS_REPLY_STRING)
        (void)snprintf(value, sizeof value, "%s", r->str);
    freeReplyObject(r);
    return value;
}
