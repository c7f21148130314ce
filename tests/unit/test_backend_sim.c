/* Unit tests of the sim backend and the backend table: outcomes and descriptions of every
 * kind, progress reports, timing, sim_fail, the dashboard URL, and cancellation. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "catalog.h"
#include "job.h"

#define INSTANT_PLAN "plan-instant"
#define TIMED_PLAN   "plan-timed"
#define LONG_PLAN    "plan-long"
#define DASH_PLAN    "plan-dash"
#define TIMED_MS     50
#define MAX_REPORTS  32

static const char catalog_text[] =
    "{\"services\": [{\"name\": \"sim\", \"id\": \"svc\", \"description\": \"d\","
    " \"bindable\": true, \"plans\": ["
    "  {\"id\": \"" INSTANT_PLAN "\", \"name\": \"instant\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"sim\"}},"
    "  {\"id\": \"" TIMED_PLAN "\", \"name\": \"timed\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"sim\", \"provision_ms\": 50, \"update_ms\": 50,"
    "    \"deprovision_ms\": 50, \"bind_ms\": 50, \"unbind_ms\": 50}},"
    "  {\"id\": \"" LONG_PLAN "\", \"name\": \"long\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"sim\", \"provision_ms\": 10000, \"dashboard\": true}},"
    "  {\"id\": \"" DASH_PLAN "\", \"name\": \"dash\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"sim\", \"dashboard\": true}}"
    "]}]}";

/* A backend call with callbacks that record what the backend does. */
struct fake {
    struct backend_call call;      /* what the backend gets */
    char reports[MAX_REPORTS][64]; /* progress texts, in order */
    int report_count;              /* progress calls made */
    int cancel_after;              /* cancel at this progress call; 0 never */
    atomic_bool cancel;            /* what cancelled() answers */
    struct osbq_job job;           /* the job; strings are literals, never cleared */
    json_t *parameters;            /* owned */
};

static struct osbq_catalog *catalog;

static int64_t now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fake_progress(struct backend_call *call, const char *description)
{
    struct fake *f = call->ctx;
    assert_true(f->report_count < MAX_REPORTS);
    (void)snprintf(f->reports[f->report_count], sizeof f->reports[0], "%s", description);
    f->report_count++;
    if (f->cancel_after > 0 && f->report_count == f->cancel_after)
        atomic_store(&f->cancel, true);
}

static bool fake_cancelled(struct backend_call *call)
{
    struct fake *f = call->ctx;
    return atomic_load(&f->cancel);
}

/* Sleeps in 1 ms slices so a cancellation from another thread stops it quickly. */
static bool fake_wait(struct backend_call *call, int64_t ms)
{
    struct fake *f = call->ctx;
    int64_t deadline = now_ms() + ms;
    while (!atomic_load(&f->cancel) && now_ms() < deadline) {
        struct timespec slice = {.tv_sec = 0, .tv_nsec = 1000000L};
        nanosleep(&slice, NULL);
    }
    return !atomic_load(&f->cancel);
}

/* Prepares f for kind on plan_id with parameters (JSON text or NULL). */
static void fake_init(struct fake *f, enum osbq_job_kind kind, const char *plan_id,
                      const char *parameters)
{
    memset(f, 0, sizeof *f);
    atomic_init(&f->cancel, false);
    f->job.operation_id = "op-1";
    f->job.kind = kind;
    f->job.instance_id = "inst-1";
    f->job.service_id = "svc";
    f->job.plan_id = (char *)plan_id;
    f->job.api_version = 217;
    f->job.attempt = 1;
    if (kind == OSBQ_JOB_BIND || kind == OSBQ_JOB_UNBIND)
        f->job.binding_id = "bind-1";
    if (parameters != NULL) {
        f->parameters = json_loads(parameters, 0, NULL);
        assert_non_null(f->parameters);
    }
    f->call.job = &f->job;
    f->call.plan = osbq_catalog_plan(catalog, plan_id);
    assert_non_null(f->call.plan);
    f->call.parameters = f->parameters;
    f->call.progress = fake_progress;
    f->call.cancelled = fake_cancelled;
    f->call.wait = fake_wait;
    f->call.ctx = f;
}

static void fake_clear(struct fake *f)
{
    backend_call_clear(&f->call);
    json_decref(f->parameters);
    f->parameters = NULL;
}

static int run_sim(struct fake *f)
{
    return backend_run(backend_find("sim"), &f->call);
}

/* The ten reports "<doing> (10%)" ... "<doing> (100%)". */
static void assert_reports(const struct fake *f, const char *doing)
{
    assert_int_equal(f->report_count, 10);
    for (int i = 0; i < 10; i++) {
        char expected[64];
        (void)snprintf(expected, sizeof expected, "%s (%d%%)", doing, (i + 1) * 10);
        assert_string_equal(f->reports[i], expected);
    }
}

static int setup(void **state)
{
    (void)state;
    struct osbq_error err = {0};
    if (osbq_catalog_load_text(catalog_text, sizeof catalog_text - 1, &catalog, &err) != 0) {
        print_error("catalog: %s\n", err.text);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    osbq_catalog_destroy(&catalog);
    return 0;
}

/* ---- tests ---- */

static void test_find(void **state)
{
    (void)state;
    const struct backend *sim = backend_find("sim");
    assert_non_null(sim);
    assert_string_equal(sim->name, "sim");
    assert_null(backend_find("nope"));
    assert_null(backend_find(""));
    assert_null(backend_find(NULL));
}

/* Every kind: what it reports while running and how it describes success. */
static const struct {
    enum osbq_job_kind kind;
    const char *doing;
    const char *done;
} kinds[] = {
    {OSBQ_JOB_PROVISION, "Provisioning", "Provisioned."},
    {OSBQ_JOB_UPDATE, "Updating", "Updated."},
    {OSBQ_JOB_DEPROVISION, "Deprovisioning", "Deprovisioned."},
    {OSBQ_JOB_BIND, "Binding", "Bound."},
    {OSBQ_JOB_UNBIND, "Unbinding", "Unbound."},
};

static void check_kinds(const char *plan_id, int64_t min_ms, int64_t max_ms)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        struct fake f;
        fake_init(&f, kinds[i].kind, plan_id, NULL);
        int64_t started = now_ms();
        assert_int_equal(run_sim(&f), 0);
        int64_t took = now_ms() - started;
        assert_true(f.call.result.succeeded);
        assert_string_equal(f.call.result.description, kinds[i].done);
        assert_null(f.call.result.dashboard_url);
        assert_null(f.call.result.metadata);
        assert_reports(&f, kinds[i].doing);
        if (took < min_ms || took > max_ms)
            fail_msg("%s took %lld ms, expected %lld..%lld", kinds[i].done, (long long)took,
                     (long long)min_ms, (long long)max_ms);
        fake_clear(&f);
    }
}

static void test_kinds_instant(void **state)
{
    (void)state;
    check_kinds(INSTANT_PLAN, 0, 1000);
}

static void test_kinds_timed(void **state)
{
    (void)state;
    check_kinds(TIMED_PLAN, TIMED_MS, 2000);
}

static void test_sim_fail(void **state)
{
    (void)state;
    static const struct {
        enum osbq_job_kind kind;
        bool instance_usable;
    } cases[] = {
        {OSBQ_JOB_PROVISION, false}, {OSBQ_JOB_UPDATE, true}, {OSBQ_JOB_DEPROVISION, true},
        {OSBQ_JOB_BIND, true},       {OSBQ_JOB_UNBIND, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fake f;
        fake_init(&f, cases[i].kind, DASH_PLAN, "{\"sim_fail\": true, \"other\": 1}");
        assert_int_equal(run_sim(&f), 0);
        assert_false(f.call.result.succeeded);
        assert_string_equal(f.call.result.description,
                            "Simulated failure requested by the sim_fail parameter.");
        assert_int_equal(f.call.result.instance_usable, cases[i].instance_usable);
        assert_false(f.call.result.update_repeatable);
        /* A failed provision has no dashboard, even on a plan that gives one. */
        assert_null(f.call.result.dashboard_url);
        assert_int_equal(f.report_count, 10);
        fake_clear(&f);
    }
}

/* Only the JSON value true asks for a failure. */
static void test_sim_fail_needs_true(void **state)
{
    (void)state;
    static const char *const params[] = {
        "{}",
        "{\"sim_fail\": false}",
        "{\"sim_fail\": \"true\"}",
        "{\"sim_fail\": 1}",
        "{\"nested\": {\"sim_fail\": true}}",
    };
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        struct fake f;
        fake_init(&f, OSBQ_JOB_UPDATE, INSTANT_PLAN, params[i]);
        assert_int_equal(run_sim(&f), 0);
        if (!f.call.result.succeeded)
            fail_msg("%s: failed", params[i]);
        fake_clear(&f);
    }
}

static void test_dashboard(void **state)
{
    (void)state;
    struct fake f;
    fake_init(&f, OSBQ_JOB_PROVISION, DASH_PLAN, NULL);
    assert_int_equal(run_sim(&f), 0);
    assert_true(f.call.result.succeeded);
    assert_string_equal(f.call.result.dashboard_url, "https://sim.osbq.invalid/dashboard/inst-1");
    fake_clear(&f);

    fake_init(&f, OSBQ_JOB_PROVISION, INSTANT_PLAN, NULL);
    assert_int_equal(run_sim(&f), 0);
    assert_true(f.call.result.succeeded);
    assert_null(f.call.result.dashboard_url);
    fake_clear(&f);

    /* Only provisions give one. */
    fake_init(&f, OSBQ_JOB_UPDATE, DASH_PLAN, NULL);
    assert_int_equal(run_sim(&f), 0);
    assert_true(f.call.result.succeeded);
    assert_null(f.call.result.dashboard_url);
    fake_clear(&f);
}

/* Cancelled while running (the lease lost at a progress report): stops at once, no outcome. */
static void test_cancel_at_progress(void **state)
{
    (void)state;
    struct fake f;
    fake_init(&f, OSBQ_JOB_PROVISION, LONG_PLAN, NULL);
    /* A 10 s plan: the first report comes after 1 s, so cancel at the first. */
    f.cancel_after = 1;
    int64_t started = now_ms();
    assert_int_equal(run_sim(&f), -1);
    assert_true(now_ms() - started < 3000);
    assert_int_equal(f.report_count, 1);
    assert_false(f.call.result.succeeded);
    assert_null(f.call.result.dashboard_url);
    fake_clear(&f);

    /* At the last report: the outcome is not given either. */
    fake_init(&f, OSBQ_JOB_DEPROVISION, INSTANT_PLAN, NULL);
    f.cancel_after = 10;
    assert_int_equal(run_sim(&f), -1);
    assert_int_equal(f.report_count, 10);
    assert_null(f.call.result.description);
    fake_clear(&f);

    /* Before the start: nothing is reported. */
    fake_init(&f, OSBQ_JOB_BIND, INSTANT_PLAN, NULL);
    atomic_store(&f.cancel, true);
    assert_int_equal(run_sim(&f), -1);
    assert_int_equal(f.report_count, 0);
    fake_clear(&f);
}

static void *cancel_later(void *arg)
{
    struct fake *f = arg;
    struct timespec delay = {.tv_sec = 0, .tv_nsec = 50 * 1000000L};
    nanosleep(&delay, NULL);
    atomic_store(&f->cancel, true);
    return NULL;
}

/* Cancelled by another thread (shutdown) in the middle of a 1 s step: returns quickly. */
static void test_cancel_from_another_thread(void **state)
{
    (void)state;
    struct fake f;
    fake_init(&f, OSBQ_JOB_PROVISION, LONG_PLAN, NULL);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, cancel_later, &f), 0);
    int64_t started = now_ms();
    int rc = run_sim(&f);
    int64_t took = now_ms() - started;
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(rc, -1);
    assert_int_equal(f.report_count, 0);
    if (took > 900)
        fail_msg("took %lld ms to stop", (long long)took);
    fake_clear(&f);
}

/* A backend without an entry for a kind fails that kind with a description saying so. */
static void test_unsupported_kind(void **state)
{
    (void)state;
    static const struct backend partial = {.name = "partial"};
    struct fake f;
    fake_init(&f, OSBQ_JOB_BIND, INSTANT_PLAN, NULL);
    assert_int_equal(backend_run(&partial, &f.call), 0);
    assert_false(f.call.result.succeeded);
    assert_string_equal(f.call.result.description,
                        "The partial backend does not support bind yet.");
    assert_int_equal(f.report_count, 0);
    fake_clear(&f);
}

/* The helpers keep the strings in the call and clear them. */
static void test_call_helpers(void **state)
{
    (void)state;
    struct fake f;
    fake_init(&f, OSBQ_JOB_PROVISION, INSTANT_PLAN, NULL);
    char long_text[3 * BACKEND_DESCRIPTION_MAX];
    memset(long_text, 'x', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    backend_call_fail(&f.call, long_text, true, true);
    assert_int_equal(strlen(f.call.result.description), BACKEND_DESCRIPTION_MAX - 1);
    assert_true(f.call.result.instance_usable);
    assert_true(f.call.result.update_repeatable);
    assert_int_equal(backend_call_set_dashboard_url(&f.call, "https://a/%s", "b"), 0);
    assert_int_equal(backend_call_set_dashboard_url(&f.call, "https://c/%d", 7), 0);
    assert_string_equal(f.call.result.dashboard_url, "https://c/7");
    backend_call_succeed(&f.call, NULL);
    assert_true(f.call.result.succeeded);
    assert_null(f.call.result.description);
    fake_clear(&f);
    assert_null(f.call.result.dashboard_url);
    assert_null(f.call.dashboard_url);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_kinds_instant),
        cmocka_unit_test(test_kinds_timed),
        cmocka_unit_test(test_sim_fail),
        cmocka_unit_test(test_sim_fail_needs_true),
        cmocka_unit_test(test_dashboard),
        cmocka_unit_test(test_cancel_at_progress),
        cmocka_unit_test(test_cancel_from_another_thread),
        cmocka_unit_test(test_unsupported_kind),
        cmocka_unit_test(test_call_helpers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
