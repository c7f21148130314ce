/* Waiters: synchronous requests suspended until their operation ends, woken by this gateway's
 * Redis event channel or by their deadline. */
#include "waiter.h"

#include <czmq.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "owned.h"

/* How often the event thread checks deadlines and the stop flag. */
#define WAITER_TICK_MS   50
#define RECONNECT_MAX_MS 5000

struct waiter {
    int64_t deadline_ms;          /* CLOCK_MONOTONIC deadline */
    void *request;                /* the suspended request (opaque) */
    struct waiter_result *result; /* where the outcome goes; owned by the request */
    waiter_fn resume;             /* wakes the request */
    struct waiter *next;          /* next waiter for the same operation */
};

struct waiter_table {
    struct osbq_store *store; /* borrowed: opens the subscription */
    unsigned max_waiters;     /* OSBQ_MAX_WAITERS */
    char *gateway_id;         /* this gateway's id: its event channel */
    pthread_mutex_t lock;     /* guards everything below */
    zhashx_t *by_operation;   /* operation id -> first struct waiter */
    size_t count;             /* waiters registered */
    bool stopping;            /* set once by waiter_table_stop */
    pthread_t thread;         /* the event thread */
};

void waiter_result_clear(struct waiter_result *result)
{
    free(result->description);
    free(result->dashboard_url);
    free(result->metadata);
    memset(result, 0, sizeof *result);
}

static char *dup_or_null(const char *s)
{
    return s != NULL && s[0] != '\0' ? strdup(s) : NULL;
}

/* Fills the waiter's result, wakes it and frees the entry. Called with the table locked. */
static void wake(struct waiter *w, const struct waiter_result *template)
{
    struct waiter_result *r = w->result;
    r->outcome = template->outcome;
    r->succeeded = template->succeeded;
    r->description = dup_or_null(template->description);
    r->dashboard_url = dup_or_null(template->dashboard_url);
    r->metadata = dup_or_null(template->metadata);
    r->instance_usable = template->instance_usable;
    r->update_repeatable = template->update_repeatable;
    w->resume(w->request);
    free(w);
}

/* Wakes every waiter of operation_id with template. Called with the table locked. */
static void wake_operation(struct waiter_table *table, const char *operation_id,
                           const struct waiter_result *template)
{
    struct waiter *w = zhashx_lookup(table->by_operation, operation_id);
    if (w == NULL)
        return;
    zhashx_delete(table->by_operation, operation_id);
    while (w != NULL) {
        struct waiter *next = w->next;
        wake(w, template);
        table->count--;
        w = next;
    }
}

int waiter_add(struct waiter_table *table, const char *operation_id, int64_t deadline_ms,
               void *request, struct waiter_result *result, waiter_fn suspend, waiter_fn resume)
{
    struct waiter *w = calloc(1, sizeof *w);
    if (w == NULL)
        return -1;
    w->deadline_ms = deadline_ms;
    w->request = request;
    w->result = result;
    w->resume = resume;
    pthread_mutex_lock(&table->lock);
    if (table->stopping || table->count >= table->max_waiters) {
        pthread_mutex_unlock(&table->lock);
        free(w);
        return -1;
    }
    struct waiter *head = zhashx_lookup(table->by_operation, operation_id);
    if (head != NULL) {
        w->next = head->next;
        head->next = w;
    } else if (zhashx_insert(table->by_operation, operation_id, w) != 0) {
        pthread_mutex_unlock(&table->lock);
        free(w);
        return -1;
    }
    table->count++;
    suspend(request);
    pthread_mutex_unlock(&table->lock);
    return 0;
}

/* Handles one event: {"operation": id, "state": "succeeded"|"failed", ...}. */
static void handle_event(struct waiter_table *table, const char *payload, size_t len)
{
    json_error_t jerr;
    json_t *event = json_loadb(payload, len, 0, &jerr);
    const char *operation_id = NULL, *state = NULL;
    struct waiter_result template = {.outcome = WAITER_FINISHED};
    int usable = 1, repeatable = 1;
    if (event == NULL ||
        json_unpack(event, "{s:s, s:s, s?s, s?s, s?s, s?b, s?b}", "operation", &operation_id,
                    "state", &state, "description", &template.description, "dashboard_url",
                    &template.dashboard_url, "metadata", &template.metadata, "instance_usable",
                    &usable, "update_repeatable", &repeatable) != 0) {
        log_warnx("ignoring a malformed event on the event channel");
        json_decref(event);
        return;
    }
    template.succeeded = strcmp(state, "succeeded") == 0;
    template.instance_usable = usable != 0;
    template.update_repeatable = repeatable != 0;
    pthread_mutex_lock(&table->lock);
    wake_operation(table, operation_id, &template);
    pthread_mutex_unlock(&table->lock);
    json_decref(event);
}

/* Wakes the waiters whose deadline has passed (all of them when stopping). */
static void expire(struct waiter_table *table, bool all)
{
    int64_t now = osbq_clock_ms();
    struct waiter_result template = {.outcome = all ? WAITER_SHUTDOWN : WAITER_TIMEOUT};
    pthread_mutex_lock(&table->lock);
    zlistx_t *keys = zhashx_keys(table->by_operation);
    for (const char *key = keys ? zlistx_first(keys) : NULL; key != NULL; key = zlistx_next(keys)) {
        struct waiter *head = zhashx_lookup(table->by_operation, key);
        /* Rebuild the chain without the expired entries. */
        struct waiter *keep = NULL, **tail = &keep;
        for (struct waiter *w = head, *next; w != NULL; w = next) {
            next = w->next;
            if (all || w->deadline_ms <= now) {
                wake(w, &template);
                table->count--;
            } else {
                w->next = NULL;
                *tail = w;
                tail = &w->next;
            }
        }
        if (keep == NULL)
            zhashx_delete(table->by_operation, key);
        else if (keep != head)
            zhashx_update(table->by_operation, key, keep);
    }
    zlistx_destroy(&keys);
    pthread_mutex_unlock(&table->lock);
}

static bool stopping(struct waiter_table *table)
{
    pthread_mutex_lock(&table->lock);
    bool stop = table->stopping;
    pthread_mutex_unlock(&table->lock);
    return stop;
}

/* Reads every complete message buffered on the subscription. Returns -1 when the connection
 * failed. */
static int drain(struct waiter_table *table, redisContext *c)
{
    for (;;) {
        redisReply *reply = NULL;
        if (redisGetReplyFromReader(c, (void **)&reply) != REDIS_OK)
            return -1;
        if (reply == NULL)
            return 0;
        if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
            reply->element[0]->type == REDIS_REPLY_STRING &&
            strcmp(reply->element[0]->str, "message") == 0 &&
            reply->element[2]->type == REDIS_REPLY_STRING)
            handle_event(table, reply->element[2]->str, reply->element[2]->len);
        freeReplyObject(reply);
    }
}

static void *event_thread(void *arg)
{
    struct waiter_table *table = arg;
    redisContext *c = NULL;
    int64_t retry_at = 0, backoff = 100;
    bool warned = false;
    while (!stopping(table)) {
        if (c == NULL && osbq_clock_ms() >= retry_at) {
            struct osbq_error err = {0};
            c = osbq_store_subscribe_events(table->store, table->gateway_id, &err);
            if (c == NULL) {
                if (!warned)
                    log_warnx("event channel unavailable (%s); synchronous requests fall back "
                              "to their deadline, retrying",
                              err.text);
                warned = true;
                retry_at = osbq_clock_ms() + backoff;
                backoff = backoff * 2 > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : backoff * 2;
            } else {
                if (warned)
                    log_info("event channel subscribed again");
                warned = false;
                backoff = 100;
            }
        }
        if (c != NULL) {
            struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
            int ready = poll(&pfd, 1, WAITER_TICK_MS);
            if (ready > 0 && (redisBufferRead(c) != REDIS_OK || drain(table, c) < 0)) {
                log_warnx("event channel lost: %s", c->errstr);
                redisFree(c);
                c = NULL;
            }
        } else {
            osbq_clock_sleep_ms(WAITER_TICK_MS);
        }
        expire(table, false);
    }
    if (c != NULL)
        redisFree(c);
    return NULL;
}

struct waiter_table *waiter_table_start(struct osbq_store *store, const struct osbq_config *cfg,
                                        const char *gateway_id, struct osbq_error *err)
{
    struct waiter_table *table = calloc(1, sizeof *table);
    if (table == NULL)
        goto out_nomem;
    table->store = store;
    table->max_waiters = cfg->max_waiters;
    table->gateway_id = strdup(gateway_id);
    table->by_operation = zhashx_new();
    if (table->gateway_id == NULL || table->by_operation == NULL)
        goto out_free;
    if (pthread_mutex_init(&table->lock, NULL) != 0)
        goto out_free;
    if (pthread_create(&table->thread, NULL, event_thread, table) != 0) {
        pthread_mutex_destroy(&table->lock);
        goto out_free;
    }
    return table;
out_free:
    zhashx_destroy(&table->by_operation);
    free(table->gateway_id);
    free(table);
out_nomem:
    osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot start the waiter table");
    return NULL;
}

void waiter_table_drain(struct waiter_table *table)
{
    pthread_mutex_lock(&table->lock);
    table->stopping = true;
    pthread_mutex_unlock(&table->lock);
    expire(table, true);
}

void waiter_table_stop(struct waiter_table **tp)
{
    OSBQ_OWNED_OR_RETURN(struct waiter_table, table, tp);
    waiter_table_drain(table);
    pthread_join(table->thread, NULL);
    zhashx_destroy(&table->by_operation);
    pthread_mutex_destroy(&table->lock);
    free(table->gateway_id);
    free(table);
    *tp = NULL;
}

size_t waiter_table_count(struct waiter_table *table)
{
    pthread_mutex_lock(&table->lock);
    size_t count = table->count;
    pthread_mutex_unlock(&table->lock);
    return count;
}
