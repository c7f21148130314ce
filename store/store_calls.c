/* Running the store's calls (made in RESP by store_resp.c): through the pipeline the store uses,
 * waiting or not on the call's own completion, or else on a pooled connection with EVALSHA
 * (loading the script on NOSCRIPT) and, for a durable call, the WAIT behind it. */
#include "store.h"

#include <semaphore.h>
#include <stdbool.h>
#include <string.h>

#include "store_internal.h"
#include "store_pipeline.h"
#include "store_scripts.h"

/* Sets c's read timeout to the store's plus extra_ms (a WAIT blocks that long). */
static int stretch_timeout(const struct osbq_store *store, redisContext *c, unsigned extra_ms)
{
    struct timeval t = store->timeout;
    t.tv_sec += (time_t)(extra_ms / 1000);
    t.tv_usec += (suseconds_t)((extra_ms % 1000) * 1000);
    if (t.tv_usec >= 1000000) {
        t.tv_sec++;
        t.tv_usec -= 1000000;
    }
    return redisSetTimeout(c, t) == REDIS_OK ? 0 : -1;
}

/* Reads the replies to the mark and the WAIT after a durable call: the acknowledgements, or -1
 * (I/O: c->err says which). */
static long long read_acks(struct osbq_store *store, redisContext *c)
{
    void *mark = NULL, *wait = NULL;
    if (redisGetReply(c, &mark) != REDIS_OK)
        return -1;
    freeReplyObject(mark);
    if (redisGetReply(c, &wait) != REDIS_OK)
        return -1;
    long long acks = store_ack_count(store, wait);
    freeReplyObject(wait);
    return acks < 0 ? 0 : acks;
}

/* Sends call's command on c and waits for its reply: NULL on an I/O error (c->err says which),
 * as redisCommandArgv. hiredis appends formatted commands to its output buffer as they are,
 * so the head and the tail go out as one command. A durable call (with OSBQ_REDIS_MIN_ACKS)
 * has the mark and the WAIT pipelined behind it, their outcome in call->acks_short. */
static redisReply *run_call(struct osbq_store *store, redisContext *c, const char *head,
                            size_t head_len, struct osbq_store_call *call)
{
    void *reply = NULL;
    char mark[STORE_ACK_COMMAND_MAX], wait[STORE_ACK_COMMAND_MAX];
    size_t mark_len = 0, wait_len = 0;
    /* Whether call must be followed by the WAIT of OSBQ_REDIS_MIN_ACKS. */
    bool acked = call->durable && store->cfg->redis_min_acks > 0;
    if (acked) {
        mark_len = store_ack_mark_command(store, mark);
        wait_len = store_ack_wait_command(store, wait);
        if (mark_len == 0 || stretch_timeout(store, c, store->cfg->redis_ack_timeout_ms) < 0)
            return NULL;
    }
    if (redisAppendFormattedCommand(c, head, head_len) != REDIS_OK ||
        redisAppendFormattedCommand(c, call->tail, call->tail_len) != REDIS_OK ||
        (acked && (redisAppendFormattedCommand(c, mark, mark_len) != REDIS_OK ||
                   redisAppendFormattedCommand(c, wait, wait_len) != REDIS_OK)) ||
        redisGetReply(c, &reply) != REDIS_OK)
        return NULL;
    if (!acked)
        return reply;
    long long acks = read_acks(store, c);
    if (acks < 0 || redisSetTimeout(c, store->timeout) != REDIS_OK) {
        freeReplyObject(reply);
        return NULL;
    }
    call->acks_short = acks < (long long)store->cfg->redis_min_acks;
    return reply;
}

void osbq_store_use_pipeline(struct osbq_store *store, struct osbq_store_pipeline *pipeline)
{
    atomic_store(&store->pipeline, pipeline);
}

static void call_answered(void *ctx)
{
    struct osbq_store_call *call = ctx;
    (void)sem_post(&call->answered);
}

/* Hands call to pipeline with its own completion. 0, or -1 when the pipeline refused it
 * (draining): the call is as it was. */
static int submit(struct osbq_store_pipeline *pipeline, struct osbq_store_call *call)
{
    call->answer_taken = false;
    if (osbq_store_pipeline_submit(pipeline, call, call_answered, call) == 0)
        return 0;
    call->err = (struct osbq_error){0};
    return -1;
}

int osbq_store_call_start(struct osbq_store *store, struct osbq_store_call *call)
{
    struct osbq_store_pipeline *pipeline = atomic_load(&store->pipeline);
    return pipeline != NULL ? submit(pipeline, call) : -1;
}

bool osbq_store_call_answered(struct osbq_store_call *call)
{
    if (!call->answer_taken && sem_trywait(&call->answered) == 0)
        call->answer_taken = true;
    return call->answer_taken;
}

void osbq_store_call_wait(struct osbq_store_call *call)
{
    while (!call->answer_taken) {
        /* Fails only when interrupted by a signal handler: the answer is still to come. */
        if (sem_wait(&call->answered) == 0)
            call->answer_taken = true;
    }
}

/* EVALSHA, loading the script first when Redis does not know it (first use, or Redis
 * restarted: SCRIPT LOAD gives the same SHA, the text's SHA-1, so the head stands). */
void osbq_store_call_run(struct osbq_store *store, struct osbq_store_call *call)
{
    /* The pipeline answers every call it took, within the Redis timeout. */
    if (osbq_store_call_start(store, call) == 0) {
        osbq_store_call_wait(call);
        return;
    }
    char sha[41] = "", head[STORE_CALL_HEAD_MAX];
    redisContext *c = store_acquire(store, &call->err);
    if (c == NULL)
        return;
    if (call->script != STORE_CALL_COMMAND &&
        store_script_sha(store, c, call->script, sha, &call->err) < 0) {
        store_release(store, c);
        return;
    }
    size_t head_len = store_call_head(call, sha, head);
    redisReply *reply = run_call(store, c, head, head_len, call);
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR && call->script != STORE_CALL_COMMAND &&
        strncmp(reply->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(reply);
        reply = NULL;
        if (store_script_load(store, c, call->script, sha, &call->err) < 0) {
            store_release(store, c);
            return;
        }
        reply = run_call(store, c, head, head_len, call);
    }
    if (reply == NULL) /* I/O: counted (and Redis marked down) by store_release */
        (void)store_io_error(c, call->name, &call->err);
    else if (store_call_settle(store, call, reply))
        store_drop_replica(c);
    store_release(store, c);
}

struct osbq_store_call *osbq_store_call_run_made(struct osbq_store *store,
                                                 struct osbq_store_call *call)
{
    if (call != NULL)
        osbq_store_call_run(store, call);
    return call;
}

redisReply *store_eval(struct osbq_store *store, enum store_script script, const char *const *keys,
                       const char *const *args, struct osbq_error *err)
{
    struct osbq_store_call *call =
        osbq_store_call_run_made(store, store_call_new(script, keys, args, NULL, err));
    redisReply *reply = call != NULL ? store_call_take_reply(call, err) : NULL;
    osbq_store_call_free(&call);
    return reply;
}

int store_replies_collect(redisContext *c, redisReply **replies, size_t count, const char *what,
                          struct osbq_error *err)
{
    int rc = 0;
    for (size_t i = 0; i < count; i++) {
        replies[i] = NULL;
        if (rc == 0 && redisGetReply(c, (void **)&replies[i]) != REDIS_OK) {
            rc = store_io_error(c, what, err);
        } else if (rc == 0 && replies[i]->type == REDIS_REPLY_ERROR) {
            rc = store_error_reply(what, replies[i]->str, err);
        }
    }
    if (rc < 0)
        for (size_t i = 0; i < count; i++)
            freeReplyObject(replies[i]);
    return rc;
}
