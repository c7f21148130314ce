/* A backend call hosted as a test would have the worker host it, with callbacks that record what
 * the backend does: the backends' tests (tests/unit/test_backend_sim.c,
 * tests/component/test_backend_exec.c, tests/component/test_backend_redis.c) run their backend
 * on one. */
#ifndef OSBQ_TESTS_FAKE_CALL_H
#define OSBQ_TESTS_FAKE_CALL_H

#include <jansson.h>
#include <stdatomic.h>

#include "backend.h"
#include "catalog.h"
#include "job.h"

#define FAKE_CALL_REPORTS     64  /* progress texts kept, the first ones */
#define FAKE_CALL_REPORT_SIZE 256 /* bytes of each, its terminating NUL included */

struct fake_call {
    struct backend_call call; /* what the backend gets; its ctx is this fake_call */
    struct osbq_job job;      /* the job; strings are literals or the test's, never cleared */
    json_t *parameters;       /* owned: what call.parameters points to, or NULL */
    json_t *resume;           /* owned: what the last step saved, for the next one, or NULL */
    char reports[FAKE_CALL_REPORTS][FAKE_CALL_REPORT_SIZE]; /* the first progress texts */
    int report_count;                        /* progress calls made (may exceed the kept) */
    char last_report[FAKE_CALL_REPORT_SIZE]; /* the last progress text, or "" */
    int cancel_after;                        /* cancel at this progress call; 0: never */
    atomic_bool cancel;                      /* what cancelled() answers; any thread sets it */
    atomic_bool exiting;                     /* what exiting() answers */
    atomic_int waits;                        /* wait calls made */
    /* Called with each progress text once it is recorded; NULL: none. */
    void (*on_progress)(struct fake_call *f, const char *description);
};

/* Prepares f (any content) for a job of kind on plan (borrowed; cmocka fails the test when it is
 * NULL): operation "op-1" of instance "inst-1", binding "bind-1" for a bind or unbind, API 2.17,
 * first attempt, with parameters (JSON text, or NULL: none). The callbacks record progress,
 * answer cancel and exiting, and wait in 1 ms slices that a cancellation cuts short. */
void fake_call_init(struct fake_call *f, enum osbq_job_kind kind, const struct osbq_plan *plan,
                    const char *parameters);

/* The backend registered as name (the catalog's backend member); cmocka fails the test unless
 * there is one and it answers to that name. */
const struct backend *fake_call_backend(const char *name);

/* Frees what the call and f hold (the result, parameters, resume); f can be run again after
 * fake_call_init. */
void fake_call_clear(struct fake_call *f);

#endif
