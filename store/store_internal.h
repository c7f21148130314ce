/* What the store's files share: the store itself, Redis's failures in words (store_errors.c),
 * its connections (store_pool.c), its calls in RESP (store_resp.c) and their running
 * (store_calls.c), and its keys (store_keys.c). Not for use outside the store. */
#ifndef OSBQ_STORE_INTERNAL_H
#define OSBQ_STORE_INTERNAL_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>

#include "clock.h"
#include "mailbox.h"
#include "store.h"
#include "store_scripts.h"

/* Idle connections kept for reuse; more may be open at once while threads are busy. */
#define STORE_IDLE_MAX 64

struct osbq_store {
    const struct osbq_config *cfg;      /* borrowed configuration */
    struct timeval timeout;             /* connect and command timeout */
    pthread_mutex_t lock;               /* guards idle and idle_count */
    redisContext *idle[STORE_IDLE_MAX]; /* connected contexts ready for reuse */
    size_t idle_count;                  /* entries used in idle */
    char script_sha[SCRIPT_COUNT][41];  /* SHA1 of each loaded script, "" until loaded; guarded
                                         * by lock */
    int64_t down_until_ms;              /* Redis failed: fail fast until then (monotonic ms);
                                         * guarded by lock */
    bool probing;                       /* one caller is trying Redis again; guarded by lock */
    atomic_uint_fast64_t errors;        /* failed calls, for osbq_redis_errors_total */
    atomic_uint_fast64_t ack_timeouts;  /* WAITs that ended with fewer than
                                         * OSBQ_REDIS_MIN_ACKS replicas */
    char primary[300];                  /* with Sentinels: the primary last connected to
                                         * ("host:port"), to log a switch; guarded by lock */
    struct osbq_error failure;          /* why Redis was last marked down: what callers that
                                         * fail fast are told; guarded by lock */
    /* The pipeline osbq_store_call_run sends calls through (osbq_store_use_pipeline), or NULL:
     * each call then takes a pooled connection of its own. */
    _Atomic(struct osbq_store_pipeline *) pipeline;
};

/* ---- Redis's failures in words (store_errors.c: no I/O) ---- */

/* Writes what went wrong on c (a failed connect, read or write) in words an operator can act
 * on: "connection refused by 127.0.0.1:6390 (...)", "127.0.0.1:6379: timed out after 2000 ms
 * (OSBQ_REDIS_TIMEOUT_MS)", instead of hiredis's strerror text. */
void store_io_words(const redisContext *c, char *out, size_t size);

/* Sets err to "redis <what>: <c's failure in words>" (unavailable). Returns -1. */
int store_io_error(const redisContext *c, const char *what, struct osbq_error *err);

/* The same for an errno met on c's socket outside hiredis (the pipeline's own reads and
 * writes). */
void store_errno_words(const redisContext *c, int errnum, char *out, size_t size);

/* Sets err from Redis's error reply to what (a command name) and returns -1. A refusal that
 * lasts until the configuration changes (a wrong password, no password, an unknown database,
 * a command the ACL user may not run) gets OSBQ_ERR_MISCONFIGURED and says what to fix;
 * anything else OSBQ_ERR_UNAVAILABLE with Redis's text. */
int store_error_reply(const char *what, const char *reply, struct osbq_error *err);

/* READONLY: a primary demoted to a replica by a failover. Its connection must go, so the next
 * one asks the Sentinels again. */
bool store_reply_from_replica(const redisReply *reply);

/* ---- Connections (store_pool.c, store_sentinel.c) ---- */

/* Milliseconds on CLOCK_MONOTONIC: the process's clock (common/clock.h), under the name the
 * store's files use. */
static inline int64_t store_monotonic_ms(void)
{
    return osbq_clock_ms();
}

/* Records that Redis failed and why: idle connections are dropped (they may be dead too) and
 * callers fail fast for a moment (STORE_DOWN_MS in store_pool.c), told why. */
void store_mark_down(struct osbq_store *store, const struct osbq_error *why);

/* Opens a new connection (address or Sentinels, AUTH, SELECT, a primary's ROLE). NULL with
 * err. */
redisContext *store_connect(struct osbq_store *store, struct osbq_error *err);

/* Marks c failed, so store_release drops it and marks Redis down. */
void store_drop_replica(redisContext *c);

/* Takes an idle connection or opens a new one; fails at once while Redis is marked down
 * (except for the one caller that probes it). NULL with err. */
redisContext *store_acquire(struct osbq_store *store, struct osbq_error *err);

/* Gives a connection back, or closes it when it failed (hiredis contexts are not reusable after
 * an error; Redis is marked down on I/O errors) or the pool is full. */
void store_release(struct osbq_store *store, redisContext *c);

/* One command on a connection of the pool (hiredis' format, or argc argv): its reply (caller
 * frees), or NULL with err (what: the command's name) when none came or it is an error. */
redisReply *store_command(struct osbq_store *store, const char *what, struct osbq_error *err,
                          const char *format, ...);
redisReply *store_command_argv(struct osbq_store *store, int argc, const char **argv,
                               struct osbq_error *err);

/* The SHA of script as c's Redis knows it: the one loaded before, else loads it now
 * (store_script_load). 0, or -1 with err. */
int store_script_sha(struct osbq_store *store, redisContext *c, enum store_script script,
                     char sha[41], struct osbq_error *err);

/* Loads script on c (SCRIPT LOAD: first use, or NOSCRIPT after Redis restarted) and keeps its
 * SHA for the store's connections. 0, or -1 with err. */
int store_script_load(struct osbq_store *store, redisContext *c, enum store_script script,
                      char sha[41], struct osbq_error *err);

/* -1 with err (OSBQ_ERR_UNAVAILABLE) when reply is NULL (I/O) or an error reply (READONLY
 * drops c: store_drop_replica); else 0. */
int store_reply_failed(redisContext *c, redisReply *reply, const char *what,
                       struct osbq_error *err);

/* With Sentinels: asks them in order for the primary's address. 0, or -1 with err
 * (store_sentinel.c). */
int store_sentinel_primary(struct osbq_store *store, char *host, size_t size, uint16_t *port,
                           struct osbq_error *err);

/* 0 when c is connected to a primary (ROLE), -1 with err: a Sentinel's answer may be stale
 * during a failover, and writes to a replica fail. */
int store_check_primary(redisContext *c, struct osbq_error *err);

/* ---- Calls in RESP and their replies (store_resp.c: no I/O) ---- */

/* store_call.script of a plain command (HMGET...): no EVALSHA head, the tail is all of it. */
#define STORE_CALL_COMMAND SCRIPT_COUNT

/* A script call made ready for Redis: what osbq_store_*_call functions return. The EVALSHA
 * and the SHA are not in it (the sender writes them: it knows the SHA its connection loaded),
 * so a call can be made before any connection exists. */
struct osbq_store_call {
    enum store_script script; /* which script, or STORE_CALL_COMMAND */
    const char *name;         /* the script's or the command's name, for errors (static) */
    size_t elements;          /* RESP elements in tail: numkeys, keys, arguments */
    char *tail;               /* numkeys, keys and arguments in RESP (points into this block) */
    size_t tail_len;          /* bytes in tail */
    redisReply *reply;        /* the reply once answered (never an error reply), or NULL */
    struct osbq_error err;    /* why there is no reply */
    bool durable;             /* an acceptance or an outcome: with OSBQ_REDIS_MIN_ACKS it only
                               * counts once replicas hold it (WAIT after it) */
    bool acks_short;          /* answered, but the WAIT behind it ended with too few replicas
                               * (or the connection failed before it answered) */
    /* Its completion, for a caller that sent it through the pipeline itself (osbq_store_call_run,
     * osbq_store_call_start): a semaphore, so the answer wakes a waiting caller once. (With a
     * condition variable signalled under its mutex, the caller woke only to sleep again on the
     * mutex the pipeline's thread still held, and was woken a second time when it let go.) */
    sem_t answered;    /* posted once, from the pipeline's thread, when the call is answered */
    bool answer_taken; /* the caller took that post: the call is answered */
    /* The pipeline's (store/store_pipeline.c), while it holds the call. */
    int64_t deadline_ms;           /* no reply by then (monotonic ms): Redis is not answering */
    bool resent;                   /* sent again once after NOSCRIPT */
    osbq_store_call_done_fn done;  /* called once the reply or the failure is in */
    void *done_ctx;                /* its argument */
    struct osbq_mailbox_link link; /* in the pipeline's mailbox, until its thread takes it */
    struct osbq_store_call *next;  /* in the pipeline's own lists (a batch, backlog, held) */
};

/* Makes a call of script with its keys and its arguments, as many as its contract says
 * (store_script_contracts); arg_lens may be NULL for C strings, and an entry 0 for one. NULL
 * with err when out of memory. */
struct osbq_store_call *store_call_new(enum store_script script, const char *const *keys,
                                       const char *const *args, const size_t *arg_lens,
                                       struct osbq_error *err);

/* Makes a call of a plain command: argv[0] is its name (a static string), lens as above. */
struct osbq_store_call *store_command_new(int argc, const char *const *argv, const size_t *lens,
                                          struct osbq_error *err);

/* Writes the head of call's command ("EVALSHA <sha>" and the element count) into buf (at least
 * STORE_CALL_HEAD_MAX bytes); returns its length (0 for a plain command: sha is not read). */
#define STORE_CALL_HEAD_MAX 80
size_t store_call_head(const struct osbq_store_call *call, const char sha[41], char *buf);

/* Fills call->reply, or call->err: a reply that is an error (the script failed, or NOSCRIPT
 * twice) becomes err. Counts failures in store->errors. For error replies that mean the
 * connection must go (READONLY: the server is a replica now) returns true. */
bool store_call_settle(struct osbq_store *store, struct osbq_store_call *call, redisReply *reply);

/* Takes the reply out of an answered call: NULL with err (the call's) when it has none. A call
 * whose WAIT ended short counts as not answered (OSBQ_ERR_UNAVAILABLE, the text says why): what
 * it read may not be on a replica. */
redisReply *store_call_take_reply(struct osbq_store_call *call, struct osbq_error *err);

/* The commands that make a call durable, sent right behind it on its connection (both RESP,
 * static): a one-key write, so the connection's replication offset covers every write the call
 * read as well as those it made (WAIT counts replicas that reached the offset of the
 * connection's last write), then WAIT <OSBQ_REDIS_MIN_ACKS> <OSBQ_REDIS_ACK_TIMEOUT_MS>. Each
 * returns its length and fills buf (STORE_ACK_COMMAND_MAX bytes), or 0 when it does not fit. */
#define STORE_ACK_COMMAND_MAX 256
size_t store_ack_mark_command(const struct osbq_store *store, char *buf);
size_t store_ack_wait_command(const struct osbq_store *store, char *buf);

/* Reads WAIT's reply: the replicas that acknowledged, or -1 when it is not an integer. Counts
 * a WAIT that ended short in store->ack_timeouts. */
long long store_ack_count(struct osbq_store *store, const redisReply *reply);

/* Element i of an array reply: as a new string (NULL for nil, empty or missing); compared with
 * text; as an integer (fallback when absent or not a number). */
char *store_element_dup(const redisReply *reply, size_t i);
bool store_element_is(const redisReply *reply, size_t i, const char *text);
int64_t store_element_int(const redisReply *reply, size_t i, int64_t fallback);

/* ---- Running calls (store_calls.c) ---- */

/* Runs an embedded script at once (store_call_new, then osbq_store_call_run). The reply
 * (caller frees) or NULL with err. */
redisReply *store_eval(struct osbq_store *store, enum store_script script, const char *const *keys,
                       const char *const *args, struct osbq_error *err);

/* Sends count pipelined commands (already appended on c) and collects their replies; on an
 * I/O failure or an error reply frees them all and fails. */
int store_replies_collect(redisContext *c, redisReply **replies, size_t count, const char *what,
                          struct osbq_error *err);

/* ---- Redis' texts (store_server.c) ---- */

/* The value of "<key><assign><value>" among the parts of text that separators (any run of
 * their characters) divide, copied into buf (cut to it): INFO's lines, a replica's fields.
 * False when no part has that key. */
bool store_text_value(const char *text, const char *separators, char assign, const char *key,
                      char *buf, size_t size);

/* ---- Walks (store_admin.c) ---- */

/* Takes the reply to a store_scan_fetch command for key, the i-th of the count keys of the
 * step. Returns 0, or -1 with err to fail the step (the rest of its replies are still read). */
typedef int (*store_scan_take_fn)(void *ctx, const redisReply *key, const redisReply *reply,
                                  size_t i, size_t count, struct osbq_error *err);

/* One step of a SCAN walk on c over the keys matching pattern, from *cursor, about count keys
 * (100 when 0): command (a format whose one %b is the key) is sent for every key found, all
 * pipelined, and each reply is handed to take. Every reply is read, even after a failure, so
 * the connection stays in step. Returns 0 with *cursor where the next step starts (0: the walk
 * is over), or -1 with err. */
int store_scan_fetch(redisContext *c, const char *pattern, uint64_t *cursor, unsigned count,
                     const char *command, store_scan_take_fn take, void *ctx,
                     struct osbq_error *err);

/* ---- Keys (store_keys.c): each returns 0, or -1 when the key does not fit ---- */

/* Longest key: namespace (64), a kind, and a percent-encoded id of up to 1024 bytes. */
#define STORE_KEY_MAX 3400

/* The platform a record or an operation that names none belongs to (OSBQ_PLATFORM_DEFAULT of
 * gateway/platforms.h): records from before platforms, and operations of the default one
 * (docs/decisions/0043). */
#define STORE_PLATFORM_DEFAULT "default"

/* Writes "<ns>:<suffix>" into buf; returns its length, or -1. */
int store_key(const struct osbq_store *store, char *buf, size_t size, const char *suffix);

/* Writes the key "<ns>:<suffix>" (store_key) into key, then store_acquire (store_pool.c):
 * a connection (caller releases), or NULL with err. */
redisContext *store_key_acquire(struct osbq_store *store, char key[STORE_KEY_MAX],
                                const char *suffix, struct osbq_error *err);

/* Writes "<ns>:<kind>:<id>" with id percent-encoded outside A-Za-z0-9-._~. Returns 0, or -1. */
int store_id_key(const struct osbq_store *store, char *buf, size_t size, const char *kind,
                 const char *id);

/* Writes "<ns>:binding:<instance id>:<binding id>", both ids encoded. Returns 0, or -1. */
int store_binding_key(const struct osbq_store *store, char *buf, size_t size,
                      const char *instance_id, const char *binding_id);

/* Writes the counter key of quota name for value (NULL: the quota's one counter). */
int store_quota_key(const struct osbq_store *store, char *buf, size_t size, const char *name,
                    const char *value);

/* Writes "<ns>:", the prefix the scripts build their other keys from. */
int store_key_prefix(const struct osbq_store *store, char *buf, size_t size);

/* The status keys of role's process id (both STORE_KEY_MAX bytes): index, the sorted set of
 * ids by expiry, and entry, the JSON text (not written when id is NULL). 0, or -1 with err
 * (OSBQ_ERR_INVALID: an unknown role or an id too long). */
int store_status_keys(const struct osbq_store *store, const char *role, const char *id, char *index,
                      char *entry, struct osbq_error *err);

#endif
