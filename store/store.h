/* The store: osbq's only door to Redis. It owns the connections and every key
 * (docs/architecture.md lists them); no other file builds a key. This header is what every
 * process shares; each audience includes its own part as well: store_requests.h (the gateway's
 * requests), store_recovery.h (the gateway's recovery loop), store_operations.h (the worker),
 * store_registry.h (live processes), store_admin.h (osbq-ctl), store_pipeline.h (the
 * gateway's calls that do not block). */
#ifndef OSBQ_STORE_H
#define OSBQ_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

struct osbq_store;

/* Creates a store for cfg's Redis. No connection is made yet: connections open on first use
 * and reopen after a failure, so a process starts while Redis is down. cfg is borrowed and
 * must outlive the store. Caller owns the result (osbq_store_destroy); NULL when out of
 * memory. */
struct osbq_store *osbq_store_new(const struct osbq_config *cfg);

/* Closes every connection and frees the store; sets *sp to NULL; accepts NULL. */
void osbq_store_destroy(struct osbq_store **sp);

/* Checks Redis answers PING within the configured timeout. Returns 0, or -1 with err->code
 * OSBQ_ERR_UNAVAILABLE and the reason. Safe from any thread. */
int osbq_store_ping(struct osbq_store *store, struct osbq_error *err);

/* PING in two halves, for a pipeline: the call (NULL with err), then 0 or -1 with err. */
struct osbq_store_call *osbq_store_ping_call(struct osbq_error *err);
int osbq_store_ping_result(struct osbq_store_call *call, struct osbq_error *err);

/* ---- The server (INFO server) ---- */

/* Which server holds osbq's data and its own version. Valkey answers redis_version 7.2.4 to
 * every client (what it is compatible with) and names itself in server_name and
 * valkey_version: reading redis_version alone would call Valkey 8.0.1 "Redis 7.2.4". */
struct osbq_store_server {
    char name[16];    /* INFO server_name ("valkey"); "redis" without one; empty: unknown */
    char version[32]; /* "<name>_version", else redis_version; empty: unknown */
};

/* Reads INFO's text (borrowed; the server section, or the whole INFO) into *out; fields cut
 * to their buffers. */
void osbq_store_server_parse(const char *info, struct osbq_store_server *out);

/* INFO server at once, on a pooled connection. 0, or -1 with err. */
int osbq_store_server_get(struct osbq_store *store, struct osbq_store_server *out,
                          struct osbq_error *err);

/* ---- Replication (INFO replication) ---- */

/* Most replicas osbq_store_replication_parse lists. */
#define OSBQ_STORE_REPLICAS_MAX 16

/* One replica as its primary sees it. */
struct osbq_store_replica {
    char address[64]; /* "ip:port" */
    char state[24];   /* "online" once in sync; "wait_bgsave", "send_bulk"... while it joins */
    int64_t offset;   /* replication offset it acknowledged; -1 unknown */
    int64_t lag_s;    /* seconds since its last acknowledgement; -1 unknown */
};

/* The replication state of the Redis osbq writes to. */
struct osbq_store_replication {
    char role[16];        /* "master", "slave"... */
    int64_t offset;       /* master_repl_offset; -1 unknown */
    size_t online;        /* replicas in state online */
    size_t replica_count; /* entries in replicas */
    struct osbq_store_replica replicas[OSBQ_STORE_REPLICAS_MAX]; /* as INFO lists them */
};

/* Reads INFO replication's text (borrowed) into *out; what is missing stays unknown. */
void osbq_store_replication_parse(const char *info, struct osbq_store_replication *out);

/* INFO replication in two halves, for a pipeline: the call (NULL with err), then 0 with *out,
 * or -1 with err. */
struct osbq_store_call *osbq_store_replication_call(struct osbq_error *err);
int osbq_store_replication_result(struct osbq_store_call *call, struct osbq_store_replication *out,
                                  struct osbq_error *err);

/* The same at once, on a pooled connection. 0, or -1 with err. */
int osbq_store_replication(struct osbq_store *store, struct osbq_store_replication *out,
                           struct osbq_error *err);

/* One line for logs: "role master, 1 replica(s) online: 10.0.0.2:6379 online, lag 0 s".
 * Writes at most size bytes (NUL included); returns the length written. */
size_t osbq_store_replication_describe(const struct osbq_store_replication *r, char *buf,
                                       size_t size);

/* Reads the server and the replication state at once and describes them in line, for the
 * daemons' start-up lines: "valkey 8.0.1, " then osbq_store_replication_describe's. Returns 1 when
 * at least OSBQ_REDIS_MIN_ACKS replicas are online, 0 when fewer are (acceptances would get 503),
 * -1 with err when Redis failed. */
int osbq_store_replication_check(struct osbq_store *store, char *line, size_t size,
                                 struct osbq_error *err);

/* ---- Calls that do not block the caller (store_pipeline.h sends them) ---- */

/* One call of a store script: made by an osbq_store_*_call function, sent through a pipeline
 * (or run at once by osbq_store_call_run), read by the matching osbq_store_*_result function.
 * Owned by whoever made it (osbq_store_call_free), except while a pipeline holds it. */
struct osbq_store_call;

/* Called once for each call a pipeline took, from the pipeline's thread, when the call holds
 * its reply or the reason it has none. */
typedef void (*osbq_store_call_done_fn)(void *ctx);

/* Frees a call (and a reply it still holds); sets *cp to NULL; accepts NULL. */
void osbq_store_call_free(struct osbq_store_call **cp);

/* Runs call, blocking until its reply or a failure is in it: through the pipeline the store
 * uses (osbq_store_use_pipeline), else on one of the store's pooled connections. */
void osbq_store_call_run(struct osbq_store *store, struct osbq_store_call *call);

/* osbq_store_call_run for a call just made, passing a NULL one on (it could not be made: its
 * maker said why); returns call, for the blocking forms that read its result next. */
struct osbq_store_call *osbq_store_call_run_made(struct osbq_store *store,
                                                 struct osbq_store_call *call);

/* Whether call is an acceptance that was answered but fewer replicas than OSBQ_REDIS_MIN_ACKS
 * acknowledged what it wrote (and read) within OSBQ_REDIS_ACK_TIMEOUT_MS, or the connection
 * failed before they did: its result function then fails (OSBQ_ERR_UNAVAILABLE), though the
 * script ran. (Any call through the pipeline fails so: what it read may not be on a replica.) */
bool osbq_store_call_not_durable(const struct osbq_store_call *call);

/* How many WAITs ended with fewer replicas than OSBQ_REDIS_MIN_ACKS since the store was made:
 * for osbq_redis_ack_timeouts_total. */
uint64_t osbq_store_ack_timeout_count(const struct osbq_store *store);

struct osbq_store_pipeline;

/* Makes every call the store runs for a blocking caller (osbq_store_call_run, and so every
 * osbq_store_* function made of one script call) go through pipeline, so the calls of many
 * threads share one connection's writes and reads instead of a round trip each; a caller still
 * waits for its own reply. NULL goes back to pooled connections. pipeline is borrowed: set
 * NULL before freeing it, once no thread can be inside a call (a call made while the pipeline
 * is draining runs on a pooled connection). */
void osbq_store_use_pipeline(struct osbq_store *store, struct osbq_store_pipeline *pipeline);

/* Sends call through the pipeline the store uses without waiting; the call is the pipeline's
 * until it is answered (within the Redis timeout), which the call itself tells:
 * osbq_store_call_answered without waiting, osbq_store_call_wait by waiting. Returns 0, or -1
 * when the store uses no pipeline or it is draining: the call is the caller's, unsent
 * (osbq_store_call_run it). */
int osbq_store_call_start(struct osbq_store *store, struct osbq_store_call *call);

/* Whether a call sent by osbq_store_call_start holds its reply or why it has none: it may then
 * be read and freed. Does not wait. For the thread that started it (or one it handed the call
 * to), one at a time. */
bool osbq_store_call_answered(struct osbq_store_call *call);

/* Waits until a call sent by osbq_store_call_start is answered (at once when it is). */
void osbq_store_call_wait(struct osbq_store_call *call);

/* Frees a NULL-terminated array of strings the store returned; accepts NULL. */
void osbq_store_strings_free(char **strings);

/* Milliseconds since the epoch (Redis records use them). */
int64_t osbq_store_now_ms(void);

/* How many Redis calls failed (I/O errors, timeouts, error replies) since the store was made:
 * for osbq_redis_errors_total. */
uint64_t osbq_store_error_count(const struct osbq_store *store);

#endif
