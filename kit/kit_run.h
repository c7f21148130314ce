/* Runs exec operations the way a worker does, without Redis or a gateway: each step through the
 * worker's own exec backend (backend_exec.c) and exec watch, with the worker's step timing
 * (step_timing.h), deadlines (step_deadline_s) and binding expiry (bind_result.h), the
 * callbacks a worker's step gives a backend kept in memory instead of Redis, and every step
 * printed: the job on stdin, stdout and stderr, how the program ended and the worker's
 * verdict. */
#ifndef OSBQ_KIT_RUN_H
#define OSBQ_KIT_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "backend.h"
#include "catalog.h"
#include "exec_watch.h"
#include "job.h"

/* Most steps of one operation the kit runs before it gives up on it (the worker's own bound is
 * the operation's deadline, an hour by default). */
#define KIT_STEPS_MAX 1000

/* What a step, or an operation, came to. */
enum kit_verdict {
    KIT_SUCCEEDED,   /* succeeded */
    KIT_FAILED,      /* failed as the program said (an exit status, a signal), or it could not
                      * start, or the operation ran out of time across its steps */
    KIT_REFUSED,     /* failed because a worker refuses what the program did: it exited 0 with
                      * an answer that breaks the contract, or ran past its timeout_ms */
    KIT_IN_PROGRESS, /* the step ended, the operation did not */
    KIT_CANCELLED,   /* no outcome: stopped past its deadline, on purpose, or interrupted */
};

/* The word a verdict is printed as ("succeeded", "REFUSED", ...). */
const char *kit_verdict_name(enum kit_verdict verdict);

/* A step's verdict from what the backend returned (rc), its result, and how its program ended
 * (end, NULL when it never started). */
enum kit_verdict kit_verdict_of(int rc, const struct osbq_op_result *result,
                                const struct exec_watch_end *end);

/* What an operation (or one step of it) came to: owned copies of the result's texts. */
struct kit_outcome {
    enum kit_verdict verdict;
    char description[BACKEND_DESCRIPTION_MAX]; /* last_operation's text */
    bool instance_usable;                      /* failed: as reported */
    bool update_repeatable;                    /* failed: as reported */
    char *dashboard_url;                       /* provision, update: or NULL */
    char *metadata;                            /* provision, update: JSON object text, or NULL */
    char *binding; /* bind: the binding as recorded (credentials: zeroed when cleared), or NULL */
};

/* Frees the texts (the binding zeroed first) and zeroes o. */
void kit_outcome_clear(struct kit_outcome *o);

/* Whether a second run of a step (second) agrees with its first (first), as the contract's
 * idempotency asks: a first run that ended the operation must be ended the same way again (a
 * bind with a binding of the same fields); a first run in progress may have moved on, but the
 * second must not be refused. When not, writes why into why. */
bool kit_rerun_agrees(enum osbq_job_kind kind, const struct kit_outcome *first,
                      const struct kit_outcome *second, char *why, size_t why_size);

/* What every operation runs with. */
struct kit {
    struct exec_watch *watch;                /* the programs' loop, as a worker's runner has;
                                              * borrowed */
    FILE *out;                               /* where steps are printed; borrowed */
    bool quiet;                              /* print no stdin, stdout, stderr lines */
    const volatile sig_atomic_t *interrupts; /* SIGINT and SIGTERM received (main.c): one
                                              * stops the step, two kill its program at once */
    unsigned violations;                     /* contract violations found so far */
};

/* Prints "  VIOLATION: <text>" and counts it. */
void kit_violation(struct kit *kit, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One operation: the job a gateway would send. Strings borrowed. */
struct kit_job {
    enum osbq_job_kind kind;
    const struct osbq_plan *plan; /* the job's plan (an update's target plan) */
    const char *operation_id;
    const char *instance_id;
    const char *binding_id;       /* bind, unbind; else NULL */
    const char *parameters;       /* JSON object text, or NULL */
    const char *context;          /* JSON object text, or NULL */
    const char *bind_resource;    /* JSON object text, or NULL */
    const char *halted_operation; /* deprovision, unbind: the creation it halted, or NULL */
};

/* How an operation is run. */
struct kit_mode {
    bool rerun;            /* every step twice, the second as attempt 2, compared
                            * (kit_rerun_agrees); the second's outcome goes on */
    bool stop_at_progress; /* stop the first step once it reports progress (as a worker stops a
                            * program at its deadline), and poll no further when it answers in
                            * progress: an operation that never finishes */
    const char *label;     /* printed before the kind, or NULL */
    const char *halted_operation; /* a deprovision's or unbind's job names it as the creation
                                   * it halted (docs/decisions/0051), or NULL */
};

/* Runs job's steps until the operation ends (or the mode stops it), waiting between steps as
 * the program asks, and prints each. Fills *out (clear it with kit_outcome_clear) with the
 * operation's outcome; KIT_CANCELLED once interrupted. */
void kit_operation(struct kit *kit, const struct kit_job *job, const struct kit_mode *mode,
                   struct kit_outcome *out);

#endif
