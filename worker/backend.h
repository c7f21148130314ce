/* Backends: the code that does an operation's real work, one file each behind a table of
 * function pointers, chosen by the plan's "backend" name (docs/backends.md). */
#ifndef OSBQ_WORKER_BACKEND_H
#define OSBQ_WORKER_BACKEND_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "catalog.h"
#include "job.h"
#include "store_operations.h"

/* Longest user-facing description a backend can report; longer texts are cut. */
#define BACKEND_DESCRIPTION_MAX 1024
/* Largest resume state a step may save, in bytes of compact JSON: it lives in Redis with every
 * waiting operation. */
#define BACKEND_RESUME_MAX 4096
/* Longest delay a step may ask for before the next one: a longer wait is cut to this. */
#define BACKEND_POLL_AFTER_MAX_MS (24LL * 3600 * 1000)

struct exec_watch;
struct exec_trace;

/* One operation handed to a backend. The runner's step (step.c) fills the inputs and the
 * callbacks; the backend fills result through the backend_call_* helpers below, which keep its
 * strings in the owned buffers. A call is used by one thread at a time (the runner thread that
 * runs it, then the thread a detached step went on in). */
struct backend_call {
    const struct osbq_job *job;   /* the job; borrowed, valid for the whole call */
    const struct osbq_plan *plan; /* the job's plan (the target plan of an update); borrowed */
    const json_t *parameters;     /* the request's parameters object; borrowed, may be NULL */
    const json_t *resume;         /* the state the previous step saved (backend_call_wait_for);
                                   * NULL on an operation's first step; borrowed */
    uint32_t step;                /* 0 on the first step, then one more per step that ended in
                                   * progress */
    const char *tenant;           /* whose operation it is (the claim's), or NULL: shares the
                                   * exec places fairly; borrowed */
    const char *halted_operation; /* a deprovision or unbind that halted the provision (bind)
                                   * still running when it was accepted: that operation's id
                                   * (its resource may be half-made, docs/decisions/0051); NULL
                                   * otherwise; borrowed */

    /* Reports progress: description is user-facing text for last_operation ("Provisioning
     * (40%)"), borrowed for the call only. Also renews the operation's lease; when the lease
     * turns out lost, cancelled() becomes true. */
    void (*progress)(struct backend_call *call, const char *description);
    /* True once the backend must stop: the worker is shutting down or the operation is no
     * longer this worker's. A stopped call's result is never recorded. */
    bool (*cancelled)(struct backend_call *call);
    /* Sleeps ms milliseconds, or less when the call gets cancelled meanwhile; keeps the lease
     * alive while it sleeps. Returns true when the full time passed, false when cancelled
     * (then at once, without sleeping). */
    bool (*wait)(struct backend_call *call, int64_t ms);
    /* For a thread that must not wait for Redis (the exec watch's, which drives every program):
     * renews the lease when it is due, and writes description (NULL: none) when one is given and
     * due, both without waiting for Redis's answer. Returns false once the backend must stop (as
     * cancelled()). Called through backend_call_keep_alive; NULL: progress and wait(call, 0)
     * serve instead. */
    bool (*keep_alive)(struct backend_call *call, const char *description);
    /* True once the worker process is exiting (its shutdown grace is over and the call was
     * cancelled already): even a backend that does not honour cancelled() must return -1 now,
     * or the process exits without waiting for its thread. */
    bool (*exiting)(struct backend_call *call);
    void *ctx; /* the caller's state behind the callbacks, if it needs one; backends leave it
                * alone */
    /* Set by a caller that can take a detached step: the backend may then return
     * BACKEND_DETACHED and end the step later, from another thread, by calling this once with
     * what it would have returned (0 or -1); the callbacks above stay usable from that thread
     * meanwhile, one call at a time. NULL: every step ends before the backend returns. */
    void (*detached_end)(struct backend_call *call, int rc);
    /* The worker's watch over exec programs (exec_watch.h); borrowed, NULL where there is none
     * (the exec backend then fails the operation). */
    struct exec_watch *exec_watch;
    /* What the exec backend's program was given and did, for a caller that shows it
     * (exec_watch.h); borrowed, NULL (the worker): nothing traced. */
    const struct exec_trace *exec_trace;

    struct osbq_op_result result;              /* out: the outcome; its strings point into
                                                * the buffers below */
    char description[BACKEND_DESCRIPTION_MAX]; /* owned text of result.description */
    char *dashboard_url;                       /* owned text of result.dashboard_url, or NULL */
    char *metadata;                            /* owned text of result.metadata, or NULL */
    char *binding;     /* owned text of result.binding, or NULL; holds credentials, so it is
                        * zeroed before it is freed */
    char *resume_text; /* owned text of result.resume, or NULL */
};

/* A backend operation's answer when it handed its step to another thread (detached_end). */
#define BACKEND_DETACHED 1

/* A backend. Each operation runs one step and returns 0 when call->result holds its outcome
 * (succeeded, failed, or in progress: backend_call_wait_for), or -1 when it stopped because
 * call->cancelled() became true (no outcome: the runner records nothing and gives the
 * operation back), or BACKEND_DETACHED when the call allows it (backend_call.detached_end) and
 * the step goes on elsewhere. A step that answers in progress is called again later, on any
 * worker, with call->resume holding what it saved and call->step raised (docs/backends.md, the
 * step contract). A NULL entry means the backend does not support that kind yet: the operation
 * fails with a description saying so. Steps run on runner threads, may block (briefly: waiting
 * is what in progress is for), and must be idempotent per operation id and step: the same step
 * may run again after a worker crash, a lost lease or a resend. */
struct backend {
    const char *name;                              /* the catalog's osbq.backend value */
    int (*provision)(struct backend_call *call);   /* creates the instance */
    int (*update)(struct backend_call *call);      /* changes its plan or parameters */
    int (*deprovision)(struct backend_call *call); /* deletes it */
    int (*bind)(struct backend_call *call);        /* creates a binding */
    int (*unbind)(struct backend_call *call);      /* deletes a binding */
};

/* The simulator (backend_sim.c). */
extern const struct backend backend_sim;

/* A key prefix per instance and an ACL user per binding on a shared Redis server
 * (backend_redis.c). */
extern const struct backend backend_redis;

/* Runs the operator's program once per operation, the job on its stdin (backend_exec.c). */
extern const struct backend backend_exec;

/* Every backend this build has, NULL-terminated, in the order of the catalog's
 * osbq_backend_names (common/backend_settings.c): a unit test holds the two lists together. */
extern const struct backend *const backends[];

/* The backend called name; borrowed (static), NULL when no backend has that name. */
const struct backend *backend_find(const char *name);

/* Makes job's ids the calling thread's log context (osbq_log_context_set), so every line
 * written about the job, by the worker or by its backend, names them. */
void backend_log_context_set(const struct osbq_job *job);

/* Runs the operation call->job->kind asks for on backend b. Returns what the backend returns;
 * an unsupported or unknown kind is a failed outcome (0). */
int backend_run(const struct backend *b, struct backend_call *call);

/* Keeps call alive from a thread that must not wait for Redis: call->keep_alive, or when the
 * caller set none, call->progress(description) when description is given (then true) and
 * call->wait(call, 0) when not. Returns false once the backend must stop. */
bool backend_call_keep_alive(struct backend_call *call, const char *description);

/* Records success with description (copied; NULL keeps the store's default text). */
void backend_call_succeed(struct backend_call *call, const char *description);

/* Records failure with description (copied) and, for a failed update or deprovision, whether
 * the instance is still usable and whether the same update may be repeated. Drops a binding
 * set before (result.binding becomes NULL). */
void backend_call_fail(struct backend_call *call, const char *description, bool instance_usable,
                       bool update_repeatable);

/* Records that the step ended with the operation still in progress: description (copied; the
 * platform's last_operation shows it), the next step due after poll_after_ms (clamped to
 * [0, BACKEND_POLL_AFTER_MAX_MS]; 0: due at once) and resume (a JSON object, stolen whatever
 * happens; NULL: none), written compactly into the call's owned buffer. A resume that is not
 * an object, is over BACKEND_RESUME_MAX bytes or cannot be written fails the operation instead
 * with a description saying why. Returns 0 when recorded in progress, -1 when the operation
 * failed instead; either way the backend returns 0: call->result holds the outcome. */
int backend_call_wait_for(struct backend_call *call, const char *description, int64_t poll_after_ms,
                          json_t *resume);

/* Sets result.dashboard_url to the formatted text (owned by call). Returns 0, or -1 when out
 * of memory (result left unchanged). */
int backend_call_set_dashboard_url(struct backend_call *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Takes over binding (a JSON object: credentials, endpoints, syslog_drain_url,
 * route_service_url, volume_mounts, metadata; see docs/backends.md), writes it compactly into
 * the call's owned buffer and points result.binding at it, replacing any earlier one. The
 * reference is stolen whatever happens. Returns 0, or -1 when binding is not an object or
 * memory ran out (result left unchanged). */
int backend_call_set_binding(struct backend_call *call, json_t *binding);

/* Frees the owned buffers (the binding zeroed first) and clears result; inputs (resume and
 * step included) and callbacks stay. */
void backend_call_clear(struct backend_call *call);

#endif
