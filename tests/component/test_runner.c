/* The runner against a real redis-server (labelled integration): an operation recorded as a
 * gateway would, its job submitted to a runner running sim, and the operation's record
 * checked. Deadlines (a hung backend's operation released while its slot stays busy), the
 * release of running jobs at shutdown, and a result recorded after a Redis outage; and what
 * each counts in the worker's metrics (a runner without metrics, too). */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "catalog_text.h"
#include "clock.h"
#include "job.h"
#include "metrics.h"
#include "redis_fixture.h"
#include "runner.h"
#include "store_operations.h"
#include "store_pipeline.h"
#include "store_test_helpers.h"
#include "test_main.h"
#include "worker_metrics.h"

#define WORKER_ID "w-test"
#define LEASE_MS  3000

static const char catalog_text[] =
    "{\"services\": [{\"name\": \"sim\", \"id\": \"svc\", \"description\": \"d\","
    " \"bindable\": true, \"plans\": ["
    "  {\"id\": \"plan-quick\", \"name\": \"quick\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"sim\"}},"
    "  {\"id\": \"plan-second\", \"name\": \"second\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"sim\", \"provision_ms\": 1000, \"blocking\": true}},"
    "  {\"id\": \"plan-slow\", \"name\": \"slow\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"sim\", \"provision_ms\": 60000, \"blocking\": true}},"
    "  {\"id\": \"plan-steps\", \"name\": \"steps\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"sim\", \"provision_ms\": 300}},"
    "  {\"id\": \"plan-polling\", \"name\": \"polling\", \"description\": \"d\","
    "   \"maximum_polling_duration\": 1,"
    "   \"osbq\": {\"backend\": \"sim\", \"provision_ms\": 60000}},"
    "  {\"id\": \"plan-hang\", \"name\": \"hang\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"sim\", \"hang_on\": \"provision\","
    "    \"provision_deadline_s\": 1}},"
    "  {\"id\": \"plan-program\", \"name\": \"program\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"exec\", \"command\": [\"/bin/sh\", \"-c\", \"sleep 30\"]}}"
    "]}]}";

struct fixture {
    struct store_fixture base;    /* the server, the store shared by the runner and the test,
                                   * and a plain connection to inspect keys */
    struct osbq_catalog *catalog; /* the plans above */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -1;
    /* From here on the teardown stops what was started, even when the setup fails. */
    *state = f;
    /* The default: a claim on a loaded CI machine (parallel tests under ASan) has been seen
     * to miss shorter timeouts; the outage below (5 s) still outlasts it and the lease. */
    f->base.cfg.redis_timeout_ms = 2000;
    f->base.cfg.lease_ms = LEASE_MS;
    f->base.cfg.worker_concurrency = 2;
    if (store_fixture_start(&f->base, "t") < 0)
        return -1;
    f->catalog = catalog_from_text(catalog_text, sizeof catalog_text - 1);
    return f->catalog != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (f == NULL)
        return 0;
    store_fixture_stop(&f->base);
    osbq_catalog_destroy(&f->catalog);
    free(f);
    return 0;
}

/* osbq_jobs_running's source, as the worker's main.c sets it. */
static size_t running_jobs(void *runner)
{
    return runner_busy(runner);
}

/* Starts a runner counting into wm, or into nothing when wm is NULL. */
static struct runner *start_runner(struct fixture *f, struct worker_metrics *wm)
{
    struct osbq_error err = {0};
    struct runner *r = runner_new(&f->base.cfg, f->catalog, f->base.store, WORKER_ID, wm, &err);
    if (r == NULL)
        fail_msg("runner_new: %s", err.text);
    worker_metrics_attach(wm, running_jobs, r);
    return r;
}

/* A registry of its own for one test, with the worker's families in wm. */
static struct osbq_metrics *new_metrics(struct fixture *f, struct worker_metrics *wm)
{
    struct osbq_metrics *m = osbq_metrics_new();
    assert_non_null(m);
    assert_int_equal(worker_metrics_init(wm, m, f->catalog, f->base.cfg.worker_concurrency), 0);
    return m;
}

/* Provisions that ended in state, on any plan of the catalog above. */
static double provisions(const struct worker_metrics *wm, enum worker_op_state state)
{
    static const char *const plans[] = {"plan-quick", "plan-second", "plan-slow",
                                        "plan-hang",  "plan-steps",  "plan-polling"};
    double n = 0;
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++)
        n += worker_metrics_operation_count(wm, OSBQ_JOB_PROVISION, plans[i], state);
    return n;
}

/* The field of operation op's hash, or "" when absent; valid until the next call. */
static const char *op_field(struct fixture *f, const char *op, const char *name)
{
    char key[256];
    (void)snprintf(key, sizeof key, "t:op:%s", op);
    return store_field(&f->base, key, name);
}

/* Waits up to ms for operation op to be in state; fails the test otherwise. */
static void wait_state(struct fixture *f, const char *op, const char *state, int64_t ms)
{
    int64_t until = osbq_clock_ms() + ms;
    while (strcmp(op_field(f, op, "state"), state) != 0) {
        if (osbq_clock_ms() >= until)
            fail_msg("operation %s: state %s after %lld ms, expected %s", op,
                     op_field(f, op, "state"), (long long)ms, state);
        osbq_clock_sleep_ms(10);
    }
}

/* Hands an encoded job to r as the bus would, from connection origin: decoded into strings
 * the runner owns. */
static void submit_from(struct runner *r, const char *bytes, size_t len, unsigned origin)
{
    char reason[256];
    struct osbq_job owned = {0};
    if (osbq_job_decode(bytes, len, &owned, reason, sizeof reason) < 0)
        fail_msg("decode: %s", reason);
    assert_int_equal(runner_submit(r, &owned, origin), 0);
}

static void submit_bytes(struct runner *r, const char *bytes, size_t len)
{
    submit_from(r, bytes, len, 0);
}

/* Records a provision of instance on plan as a gateway would (operation op) and submits its
 * job to r as if it came through connection origin. */
static void provision_from(struct fixture *f, struct runner *r, const char *op,
                           const char *instance, const char *plan, unsigned origin)
{
    struct osbq_job job = {
        .operation_id = op,
        .kind = OSBQ_JOB_PROVISION,
        .instance_id = instance,
        .service_id = "svc",
        .plan_id = plan,
        .api_version = 217,
        .attempt = 1,
    };
    char *bytes = NULL;
    size_t len = 0;
    char reason[256];
    if (osbq_job_encode(&job, &bytes, &len, reason, sizeof reason) < 0)
        fail_msg("encode: %s", reason);
    struct osbq_begin_request req = store_test_request("provision", op, instance, instance);
    req.plan_id = plan;
    req.job = bytes;
    req.job_len = len;
    struct osbq_begin_reply reply = {0};
    struct osbq_error err = {0};
    if (osbq_store_begin(f->base.store, &req, &reply, &err) != 0)
        fail_msg("begin: %s", err.text);
    assert_int_equal(reply.answer, OSBQ_BEGIN_ACCEPTED);
    osbq_begin_reply_clear(&reply);
    submit_from(r, bytes, len, origin);
    free(bytes);
}

static void provision(struct fixture *f, struct runner *r, const char *op, const char *instance,
                      const char *plan)
{
    provision_from(f, r, op, instance, plan, 0);
}

/* Provisions as provision does and waits up to ms for the operation to reach state. */
static void provision_until(struct fixture *f, struct runner *r, const char *op,
                            const char *instance, const char *plan, const char *state, int64_t ms)
{
    provision(f, r, op, instance, plan);
    wait_state(f, op, state, ms);
}

/* Waits up to tries * 10 ms for r's slots to be free (a slot is given back a little after the
 * outcome is recorded); returns how many are still busy. */
static unsigned wait_idle(struct runner *r, int tries)
{
    for (int i = 0; i < tries && runner_busy(r) > 0; i++)
        osbq_clock_sleep_ms(10);
    return runner_busy(r);
}

/* Submits op's stored job to r again, as the gateways' recovery loop sends it. */
static void resubmit(struct fixture *f, struct runner *r, const char *op)
{
    redisReply *job = redisCommand(f->base.direct, "HGET t:op:%s job", op);
    assert_non_null(job);
    assert_int_equal(job->type, REDIS_REPLY_STRING);
    submit_bytes(r, job->str, job->len);
    freeReplyObject(job);
}

/* Waits up to ms for op to be running; a claim that failed (the runner dropped the job, as it
 * does when Redis does not answer in time) is resent from the stored job, as the gateways'
 * recovery loop would, up to three times. */
static void wait_running(struct fixture *f, struct runner *r, const char *op, int64_t ms)
{
    for (int sent = 1;; sent++) {
        int64_t until = osbq_clock_ms() + ms;
        while (strcmp(op_field(f, op, "state"), "running") != 0 && osbq_clock_ms() < until)
            osbq_clock_sleep_ms(10);
        if (strcmp(op_field(f, op, "state"), "running") == 0)
            return;
        if (sent == 3)
            fail_msg("operation %s: not running after %d sends", op, sent);
        resubmit(f, r, op);
    }
}

/* Checks op was given back: queued, no worker, no lease, due now in the queue. */
static void assert_released(struct fixture *f, const char *op)
{
    assert_string_equal(op_field(f, op, "state"), "queued");
    assert_string_equal(op_field(f, op, "worker"), "");
    assert_string_equal(op_field(f, op, "lease_until"), "");
    redisReply *score = redisCommand(f->base.direct, "ZSCORE t:queue %s", op);
    assert_non_null(score);
    assert_int_equal(score->type, REDIS_REPLY_STRING);
    double due = strtod(score->str, NULL);
    freeReplyObject(score);
    assert_true(due <= (double)osbq_store_now_ms());
}

static void test_success(void **state)
{
    struct fixture *f = *state;
    struct worker_metrics wm;
    struct osbq_metrics *m = new_metrics(f, &wm);
    struct runner *r = start_runner(f, &wm);
    provision_until(f, r, "op-ok", "i-ok", "plan-quick", "succeeded", 5000);
    assert_string_equal(op_field(f, "op-ok", "description"), "Provisioned.");
    assert_int_equal(wait_idle(r, 100), 0);
    assert_true(provisions(&wm, WORKER_OP_SUCCEEDED) == 1);
    assert_true(provisions(&wm, WORKER_OP_FAILED) + provisions(&wm, WORKER_OP_RELEASED) +
                    provisions(&wm, WORKER_OP_LOST) ==
                0);
    assert_true(osbq_series_value(wm.claims[WORKER_CLAIM_CLAIMED]) == 1);
    assert_true(osbq_series_value(wm.duration[0]) == 1);
    assert_true(osbq_series_value(wm.finish_retries) == 0);
    /* The render hook reads the runner's busy slots. */
    size_t len = 0;
    char *text = osbq_metrics_render(m, &len);
    assert_non_null(text);
    assert_non_null(strstr(text, "\nosbq_jobs_running 0\n"));
    assert_non_null(strstr(text, "\nosbq_worker_slots 2\n"));
    assert_non_null(strstr(text,
                           "\nosbq_worker_operations_total{kind=\"provision\",state=\"succeeded\","
                           "service=\"svc\",plan=\"plan-quick\"} 1\n"));
    free(text);
    assert_int_equal(runner_destroy(&r), 0);
    assert_null(r);
    osbq_metrics_destroy(&m);
}

/* A step that ends in progress: recorded as waiting (no worker, due at the sim's end, the slot
 * free at once, counted as a step); the stored job sent again once due (a poll) ends it. A plan's
 * maximum_polling_duration caps the due time and fails the operation past it. */
static void test_steps(void **state)
{
    struct fixture *f = *state;
    struct worker_metrics wm;
    struct osbq_metrics *m = new_metrics(f, &wm);
    struct runner *r = start_runner(f, &wm);
    provision_until(f, r, "op-steps", "i-steps", "plan-steps", "waiting", 3000);
    assert_string_equal(op_field(f, "op-steps", "description"), "Provisioning (0%)");
    assert_string_equal(op_field(f, "op-steps", "worker"), "");
    assert_string_equal(op_field(f, "op-steps", "steps"), "1");
    assert_non_null(strstr(op_field(f, "op-steps", "resume"), "until_ms"));
    assert_int_equal(wait_idle(r, 100), 0);
    assert_true(osbq_series_value(wm.steps_waiting) == 1);
    assert_true(provisions(&wm, WORKER_OP_SUCCEEDED) == 0);
    osbq_clock_sleep_ms(400);
    resubmit(f, r, "op-steps");
    wait_state(f, "op-steps", "succeeded", 3000);
    assert_string_equal(op_field(f, "op-steps", "claims"), "1");
    assert_string_equal(op_field(f, "op-steps", "resume"), "");
    assert_true(provisions(&wm, WORKER_OP_SUCCEEDED) == 1);

    /* Due no later than the accept + maximum_polling_duration; then it fails. */
    provision_until(f, r, "op-poll", "i-poll", "plan-polling", "waiting", 3000);
    double accepted = strtod(op_field(f, "op-poll", "created_ms"), NULL);
    assert_true(strtod(op_field(f, "op-poll", "due_ms"), NULL) <= accepted + 1000);
    osbq_clock_sleep_ms(1100);
    resubmit(f, r, "op-poll");
    wait_state(f, "op-poll", "failed", 3000);
    assert_string_equal(op_field(f, "op-poll", "description"),
                        "The operation did not finish within the plan's maximum_polling_duration "
                        "of 1 s.");
    assert_int_equal(runner_destroy(&r), 0);
    osbq_metrics_destroy(&m);
}

/* What runner_take_notes hands over: one call per origin. */
struct due_seen {
    unsigned calls;
    unsigned origin;
    int64_t due_ms;
    char ended[256];
};

static void collect_due(void *ctx, unsigned origin, int64_t due_ms, const char *ended)
{
    struct due_seen *seen = ctx;
    seen->calls++;
    seen->origin = origin;
    seen->due_ms = due_ms;
    (void)snprintf(seen->ended, sizeof seen->ended, "%s", ended ? ended : "");
}

/* A wait recorded for a job of one connection is noted for that connection, at the due time
 * Redis holds for the operation, with the job as ended (its step is over), and handed over
 * once; the poll's end is noted again. */
static void test_due_noted_for_origin(void **state)
{
    struct fixture *f = *state;
    struct runner *r = start_runner(f, NULL);
    provision_from(f, r, "op-due", "i-due", "plan-steps", 7);
    wait_state(f, "op-due", "waiting", 3000);
    (void)wait_idle(r, 100);
    struct due_seen seen = {0};
    runner_take_notes(r, collect_due, &seen);
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.origin, 7);
    assert_true((double)seen.due_ms == strtod(op_field(f, "op-due", "due_ms"), NULL));
    assert_string_equal(seen.ended, "op-due");
    seen = (struct due_seen){0};
    runner_take_notes(r, collect_due, &seen);
    assert_int_equal(seen.calls, 0);
    assert_int_equal(runner_destroy(&r), 0);
}

/* A backend hanging past the deadline (1 s; it keeps its lease alive until then): the
 * operation is released, the lease no longer renewed, and the slot stays busy, holding
 * nothing. At exit the hung backend returns and nothing is recorded. */
static void test_deadline(void **state)
{
    struct fixture *f = *state;
    struct worker_metrics wm;
    struct osbq_metrics *m = new_metrics(f, &wm);
    struct runner *r = start_runner(f, &wm);
    provision_until(f, r, "op-hang", "i-hang", "plan-hang", "running", 3000);
    int64_t claimed = osbq_clock_ms();
    assert_int_equal(runner_holding(r), 1);
    wait_state(f, "op-hang", "queued", 3000);
    int64_t took = osbq_clock_ms() - claimed;
    if (took < 700)
        fail_msg("released %lld ms after the claim, before the 1 s deadline", (long long)took);
    assert_released(f, "op-hang");
    assert_string_equal(op_field(f, "op-hang", "claims"), "1");
    assert_int_equal(runner_busy(r), 1);
    assert_int_equal(runner_holding(r), 0);
    assert_int_equal(runner_free_slots(r), 1);
    /* Released once, at the deadline; the abandoned backend still fills its slot. */
    assert_true(provisions(&wm, WORKER_OP_RELEASED) == 1);
    assert_true(osbq_series_value(wm.claims[WORKER_CLAIM_CLAIMED]) == 1);
    /* Past the lease: nobody renewed it nor recorded anything. */
    osbq_clock_sleep_ms(LEASE_MS / 2);
    assert_released(f, "op-hang");

    int64_t destroying = osbq_clock_ms();
    assert_int_equal(runner_destroy(&r), 0);
    if (osbq_clock_ms() - destroying > 1000)
        fail_msg("runner_destroy took %lld ms", (long long)(osbq_clock_ms() - destroying));
    assert_released(f, "op-hang");
    /* Counted once: its outcome, never recorded, is not counted again at exit. */
    assert_true(provisions(&wm, WORKER_OP_RELEASED) == 1);
    assert_true(provisions(&wm, WORKER_OP_SUCCEEDED) + provisions(&wm, WORKER_OP_FAILED) +
                    provisions(&wm, WORKER_OP_LOST) ==
                0);
    assert_true(osbq_series_value(wm.duration[0]) == 0);
    osbq_metrics_destroy(&m);
}

/* Jobs still running when the runner is destroyed (the grace is over): each operation is
 * released at once, the runner returns promptly. This runner has no metrics. */
static void test_shutdown(void **state)
{
    struct fixture *f = *state;
    struct runner *r = start_runner(f, NULL);
    provision(f, r, "op-slow1", "i-slow1", "plan-slow");
    provision(f, r, "op-slow2", "i-slow2", "plan-slow");
    wait_state(f, "op-slow1", "running", 3000);
    wait_state(f, "op-slow2", "running", 3000);
    assert_int_equal(runner_free_slots(r), 0);
    int64_t destroying = osbq_clock_ms();
    assert_int_equal(runner_destroy(&r), 0);
    if (osbq_clock_ms() - destroying > 1000)
        fail_msg("runner_destroy took %lld ms", (long long)(osbq_clock_ms() - destroying));
    assert_released(f, "op-slow1");
    assert_released(f, "op-slow2");
}

/* Redis stops answering while a job runs and when it ends: the result is recorded once Redis
 * is back (5 s later: longer than the lease), exactly once. */
static void test_finish_after_outage(void **state)
{
    struct fixture *f = *state;
    struct worker_metrics wm;
    struct osbq_metrics *m = new_metrics(f, &wm);
    struct runner *r = start_runner(f, &wm);
    provision(f, r, "op-out", "i-out", "plan-second");
    wait_running(f, r, "op-out", 3000);
    assert_int_equal(kill(f->base.redis.pid, SIGSTOP), 0);
    osbq_clock_sleep_ms(5000);
    /* The backend (1 s) ended long ago: its result waits to be recorded. */
    assert_int_equal(runner_holding(r), 1);
    assert_int_equal(kill(f->base.redis.pid, SIGCONT), 0);
    wait_state(f, "op-out", "succeeded", 8000);
    assert_string_equal(op_field(f, "op-out", "description"), "Provisioned.");
    /* The outcome may have been recorded by a try that timed out on our side but ran once Redis
     * woke: the runner learns it at its next try, after a backoff of at most 5 s. */
    assert_int_equal(wait_idle(r, 800), 0);
    /* Recorded by this worker's last try (succeeded), or by an earlier one that timed out on
     * our side, the last try then refused (lost). Whether the finish itself had to be retried
     * depends on where the outage caught the job (a lease renewal blocks the backend's wait). */
    assert_true(provisions(&wm, WORKER_OP_SUCCEEDED) + provisions(&wm, WORKER_OP_LOST) == 1);
    assert_true(provisions(&wm, WORKER_OP_RELEASED) + provisions(&wm, WORKER_OP_FAILED) == 0);
    assert_int_equal(runner_destroy(&r), 0);
    osbq_metrics_destroy(&m);
}

/* A program watched by the exec loop, with the store's calls through a pipeline as in the
 * worker: its lease is renewed without the loop's thread waiting for Redis (the renewals are
 * sent, their answers read on the loop's next turns), and an answer that the lease is lost
 * (another worker took the operation) stops the program and records nothing. */
static void test_program_lease_renewed_then_lost(void **state)
{
    struct fixture *f = *state;
    struct osbq_error err = {0};
    struct osbq_store_pipeline *pipeline = osbq_store_pipeline_start(f->base.store, &err);
    if (pipeline == NULL)
        fail_msg("pipeline: %s", err.text);
    osbq_store_use_pipeline(f->base.store, pipeline);
    struct runner *r = start_runner(f, NULL);
    provision(f, r, "op-prog", "i-prog", "plan-program");
    wait_running(f, r, "op-prog", 5000);
    char first[32];
    (void)snprintf(first, sizeof first, "%s", op_field(f, "op-prog", "lease_until"));
    /* Renewed every third of the lease (1 s): moved on within a lease and a bit. */
    int64_t until = osbq_clock_ms() + LEASE_MS + 1000;
    while (strcmp(op_field(f, "op-prog", "lease_until"), first) == 0 && osbq_clock_ms() < until)
        osbq_clock_sleep_ms(50);
    assert_string_not_equal(op_field(f, "op-prog", "lease_until"), first);
    assert_string_equal(op_field(f, "op-prog", "state"), "running");
    assert_string_equal(op_field(f, "op-prog", "worker"), WORKER_ID);

    /* Another worker takes it over: the next renewal is refused, the program stopped (SIGTERM:
     * sh and its sleep go at once), the slot freed, nothing recorded. */
    redisReply *taken = redisCommand(f->base.direct, "HSET t:op:op-prog worker w-other");
    assert_non_null(taken);
    freeReplyObject(taken);
    until = osbq_clock_ms() + LEASE_MS + 5000;
    while (runner_busy(r) > 0 && osbq_clock_ms() < until)
        osbq_clock_sleep_ms(50);
    assert_int_equal(runner_busy(r), 0);
    assert_string_equal(op_field(f, "op-prog", "state"), "running");
    assert_string_equal(op_field(f, "op-prog", "worker"), "w-other");
    assert_string_equal(op_field(f, "op-prog", "description"), "");

    assert_int_equal(runner_destroy(&r), 0);
    osbq_store_use_pipeline(f->base.store, NULL);
    osbq_store_pipeline_free(&pipeline);
}

OSBQ_TEST_MAIN(setup, teardown, cmocka_unit_test(test_success), cmocka_unit_test(test_steps),
               cmocka_unit_test(test_due_noted_for_origin), cmocka_unit_test(test_deadline),
               cmocka_unit_test(test_shutdown), cmocka_unit_test(test_finish_after_outage),
               cmocka_unit_test(test_program_lease_renewed_then_lost))
