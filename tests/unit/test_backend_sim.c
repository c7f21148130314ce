/* Unit tests of the sim backend and the backend table: outcomes and descriptions of every
 * kind, progress reports, timing, sim_fail and fail_on, the dashboard URL, bindings (fields,
 * randomness, rotation), the binding helpers, a bind result's credential expiry, cancellation,
 * the fault settings crash_on and hang_on, the benchmark setting cpu_ms, and a step's deadlines
 * and finish backoff. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "bind_result.h"
#include "catalog.h"
#include "catalog_text.h"
#include "clock.h"
#include "fake_call.h"
#include "job.h"
#include "step_timing.h"
#include "test_main.h"

#define INSTANT_PLAN "plan-instant"
#define TIMED_PLAN   "plan-timed"
#define LONG_PLAN    "plan-long"
#define DASH_PLAN    "plan-dash"
#define ALL_PLAN     "plan-all" /* service requires syslog_drain, route_forwarding, volume_mount */
#define ROUTE_PLAN   "plan-route" /* service requires route_forwarding only */
#define BLANKS_PLAN  "plan-fail-blanks"
#define TIMED_MS     50

/* A plan whose fail_on names one kind: "plan-fail-<kind>". */
#define FAIL_ON_PLAN(kind)                                                                         \
    "  {\"id\": \"plan-fail-" kind "\", \"name\": \"fail-" kind "\", \"description\": \"d\","      \
    "   \"osbq\": {\"backend\": \"sim\", \"fail_on\": \"" kind "\"}}"

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
    "   \"osbq\": {\"backend\": \"sim\", \"dashboard\": true}}," FAIL_ON_PLAN("provision") "," FAIL_ON_PLAN("update") "," FAIL_ON_PLAN(
        "deprovision") "," FAIL_ON_PLAN("bind") "," FAIL_ON_PLAN("unbind") ","
                                                                           "  {\"id\": "
                                                                           "\"" BLANKS_PLAN
                                                                           "\", \"name\": "
                                                                           "\"fail-blanks\", "
                                                                           "\"description\": \"d\","
                                                                           "   \"osbq\": "
                                                                           "{\"backend\": \"sim\", "
                                                                           "\"fail_on\": \" bind , "
                                                                           "unbind,provisioning,,"
                                                                           "Update\"}}"
                                                                           "]},"
                                                                           " {\"name\": "
                                                                           "\"sim-all\", \"id\": "
                                                                           "\"svc-all\", "
                                                                           "\"description\": "
                                                                           "\"d\", \"bindable\": "
                                                                           "true,"
                                                                           "  \"requires\": "
                                                                           "[\"syslog_drain\", "
                                                                           "\"route_forwarding\", "
                                                                           "\"volume_mount\"], "
                                                                           "\"plans\": ["
                                                                           "  {\"id\": \"" ALL_PLAN
                                                                           "\", \"name\": \"all\", "
                                                                           "\"description\": \"d\","
                                                                           "   \"osbq\": "
                                                                           "{\"backend\": "
                                                                           "\"sim\"}}]},"
                                                                           " {\"name\": "
                                                                           "\"sim-route\", \"id\": "
                                                                           "\"svc-route\", "
                                                                           "\"description\": "
                                                                           "\"d\", \"bindable\": "
                                                                           "true,"
                                                                           "  \"requires\": "
                                                                           "[\"route_forwarding\"],"
                                                                           " \"plans\": ["
                                                                           "  {\"id\": "
                                                                           "\"" ROUTE_PLAN
                                                                           "\", \"name\": "
                                                                           "\"route\", "
                                                                           "\"description\": \"d\","
                                                                           "   \"osbq\": "
                                                                           "{\"backend\": "
                                                                           "\"sim\"}}]}"
                                                                           "]}";

/* The fault and benchmark settings, in a catalog of their own. */
#define CRASH_PLAN     "plan-crash"     /* crash_on bind and unbind */
#define HANG_PLAN      "plan-hang"      /* hang_on provision; deadlines for provision and bind */
#define CPU_PLAN       "plan-cpu"       /* cpu_ms CPU_MS */
#define CPU_TIMED_PLAN "plan-cpu-timed" /* cpu_ms CPU_MS, provision_ms 50: two steps */
#define CPU_MS         60
#define CPU_MS_TEXT    "60"

static const char fault_catalog_text[] =
    "{\"services\": [{\"name\": \"faults\", \"id\": \"svc-faults\", \"description\": \"d\","
    " \"bindable\": true, \"plans\": ["
    "  {\"id\": \"" CRASH_PLAN "\", \"name\": \"crash\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"sim\", \"crash_on\": \" bind ,unbind\"}},"
    "  {\"id\": \"" HANG_PLAN "\", \"name\": \"hang\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"sim\", \"hang_on\": \"provision\","
    "    \"provision_deadline_s\": 2, \"bind_deadline_s\": 604800}},"
    "  {\"id\": \"" CPU_PLAN "\", \"name\": \"cpu\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"sim\", \"cpu_ms\": " CPU_MS_TEXT "}},"
    "  {\"id\": \"" CPU_TIMED_PLAN "\", \"name\": \"cpu-timed\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"sim\", \"cpu_ms\": " CPU_MS_TEXT ", \"provision_ms\": 50}}"
    "]}]}";

static struct osbq_catalog *catalog;
static struct osbq_catalog *fault_catalog;

/* Prepares f for kind on plan_id, a plan of either catalog, with parameters (JSON text or NULL). */
static void fake_init(struct fake_call *f, enum osbq_job_kind kind, const char *plan_id,
                      const char *parameters)
{
    const struct osbq_plan *plan = osbq_catalog_plan(catalog, plan_id);
    if (plan == NULL)
        plan = osbq_catalog_plan(fault_catalog, plan_id);
    fake_call_init(f, kind, plan, parameters);
}

/* A call already cancelled (its lease lost, the worker stopping) before it runs. */
static void fake_init_cancelled(struct fake_call *f, enum osbq_job_kind kind, const char *plan_id)
{
    fake_init(f, kind, plan_id, NULL);
    atomic_store(&f->cancel, true);
}

static int run_sim(struct fake_call *f)
{
    return backend_run(backend_find("sim"), &f->call);
}

/* What run_steps saw of an operation. */
struct steps_seen {
    int steps;               /* steps run */
    char first_progress[64]; /* the first step's in-progress text, or "" */
};

/* Runs sim's steps as the worker would: after a step that ended in progress, waits its
 * poll_after_ms and runs the next with what it saved. Returns the last step's answer; counts
 * the steps in seen and keeps the first step's progress text there. */
static int run_steps(struct fake_call *f, struct steps_seen *seen)
{
    memset(seen, 0, sizeof *seen);
    for (seen->steps = 1;; seen->steps++) {
        int rc = run_sim(f);
        if (rc < 0 || !f->call.result.in_progress)
            return rc;
        if (seen->steps == 1)
            (void)snprintf(seen->first_progress, sizeof seen->first_progress, "%s",
                           f->call.result.description);
        assert_true(seen->steps < 100);
        json_decref(f->resume);
        f->resume = f->call.result.resume ? json_loads(f->call.result.resume, 0, NULL) : NULL;
        int64_t after = f->call.result.poll_after_ms;
        backend_call_clear(&f->call);
        f->call.resume = f->resume;
        f->call.step = (uint32_t)seen->steps;
        osbq_clock_sleep_ms(after);
    }
}

static int setup(void **state)
{
    (void)state;
    catalog = catalog_from_text(catalog_text, sizeof catalog_text - 1);
    fault_catalog = catalog_from_text(fault_catalog_text, sizeof fault_catalog_text - 1);
    return catalog != NULL && fault_catalog != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    osbq_catalog_destroy(&catalog);
    osbq_catalog_destroy(&fault_catalog);
    return 0;
}

/* ---- tests ---- */

static void test_find(void **state)
{
    (void)state;
    (void)fake_call_backend("sim");
    assert_null(backend_find("nope"));
    assert_null(backend_find(""));
    assert_null(backend_find(NULL));
}

/* A kind the decoder would have refused (none, or out of range) reaches no backend function:
 * backend_run fails the operation, the instance still usable. */
static void test_unknown_kind_fails(void **state)
{
    (void)state;
    static const enum osbq_job_kind unknown[] = {OSBQ_JOB_KIND_NONE, (enum osbq_job_kind)99};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        struct fake_call f;
        fake_init(&f, OSBQ_JOB_PROVISION, INSTANT_PLAN, NULL);
        f.job.kind = unknown[i];
        assert_int_equal(run_sim(&f), 0);
        assert_false(f.call.result.succeeded);
        assert_true(f.call.result.instance_usable);
        assert_string_equal(f.call.result.description,
                            "The broker received an operation of an unknown kind.");
        fake_call_clear(&f);
    }
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
        struct fake_call f;
        struct steps_seen seen;
        fake_init(&f, kinds[i].kind, plan_id, NULL);
        int64_t started = osbq_clock_ms();
        assert_int_equal(run_steps(&f, &seen), 0);
        int64_t took = osbq_clock_ms() - started;
        assert_true(f.call.result.succeeded);
        assert_false(f.call.result.in_progress);
        assert_string_equal(f.call.result.description, kinds[i].done);
        assert_null(f.call.result.dashboard_url);
        assert_null(f.call.result.metadata);
        /* Only a bind hands out a binding. */
        if (kinds[i].kind == OSBQ_JOB_BIND)
            assert_non_null(f.call.result.binding);
        else
            assert_null(f.call.result.binding);
        /* A duration is a due time: one step in progress, one that ends it; 0 ms ends at once. */
        assert_int_equal(seen.steps, min_ms > 0 ? 2 : 1);
        assert_int_equal(f.report_count, 0);
        if (min_ms > 0) {
            char expected[64];
            (void)snprintf(expected, sizeof expected, "%s (0%%)", kinds[i].doing);
            assert_string_equal(seen.first_progress, expected);
        }
        if (took < min_ms || took > max_ms)
            fail_msg("%s took %lld ms, expected %lld..%lld", kinds[i].done, (long long)took,
                     (long long)min_ms, (long long)max_ms);
        fake_call_clear(&f);
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
        struct fake_call f;
        struct steps_seen seen;
        fake_init(&f, cases[i].kind, DASH_PLAN, "{\"sim_fail\": true, \"other\": 1}");
        assert_int_equal(run_steps(&f, &seen), 0);
        assert_false(f.call.result.succeeded);
        assert_string_equal(f.call.result.description,
                            "Simulated failure requested by the sim_fail parameter.");
        assert_int_equal(f.call.result.instance_usable, cases[i].instance_usable);
        assert_false(f.call.result.update_repeatable);
        /* A failed provision has no dashboard, even on a plan that gives one, and a failed
         * bind no binding. */
        assert_null(f.call.result.dashboard_url);
        assert_null(f.call.result.binding);
        assert_int_equal(f.report_count, 0);
        fake_call_clear(&f);
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
        struct fake_call f;
        fake_init(&f, OSBQ_JOB_UPDATE, INSTANT_PLAN, params[i]);
        assert_int_equal(run_sim(&f), 0);
        if (!f.call.result.succeeded)
            fail_msg("%s: failed", params[i]);
        fake_call_clear(&f);
    }
}

static void test_dashboard(void **state)
{
    (void)state;
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_PROVISION, DASH_PLAN, NULL);
    assert_int_equal(run_sim(&f), 0);
    assert_true(f.call.result.succeeded);
    assert_string_equal(f.call.result.dashboard_url, "https://sim.osbq.invalid/dashboard/inst-1");
    fake_call_clear(&f);

    fake_init(&f, OSBQ_JOB_PROVISION, INSTANT_PLAN, NULL);
    assert_int_equal(run_sim(&f), 0);
    assert_true(f.call.result.succeeded);
    assert_null(f.call.result.dashboard_url);
    fake_call_clear(&f);

    /* Only provisions give one. */
    fake_init(&f, OSBQ_JOB_UPDATE, DASH_PLAN, NULL);
    assert_int_equal(run_sim(&f), 0);
    assert_true(f.call.result.succeeded);
    assert_null(f.call.result.dashboard_url);
    fake_call_clear(&f);
}

/* Cancelled (the lease lost, the worker stopping): no outcome, nothing reported; a step that
 * ends the operation looks first. */
static void test_cancelled_step(void **state)
{
    (void)state;
    struct fake_call f;
    fake_init_cancelled(&f, OSBQ_JOB_BIND, INSTANT_PLAN);
    assert_int_equal(run_sim(&f), -1);
    assert_int_equal(f.report_count, 0);
    assert_null(f.call.result.description);
    fake_call_clear(&f);

    fake_init(&f, OSBQ_JOB_DEPROVISION, TIMED_PLAN, NULL);
    assert_int_equal(run_sim(&f), 0);
    assert_true(f.call.result.in_progress);
    atomic_store(&f.cancel, true);
    struct steps_seen seen;
    assert_int_equal(run_steps(&f, &seen), -1);
    fake_call_clear(&f);
}

/* A long operation holds nothing: its first step answers at once, in progress, due when the
 * duration has passed, with the end saved as its resume; a poll before then answers in
 * progress again, due at the same end; poll_ms (plan or sim_poll_ms) polls more often. */
static void test_long_operation_steps(void **state)
{
    (void)state;
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_PROVISION, LONG_PLAN, NULL);
    int64_t started = osbq_clock_ms();
    assert_int_equal(run_sim(&f), 0);
    assert_true(osbq_clock_ms() - started < 500);
    assert_true(f.call.result.in_progress);
    assert_false(f.call.result.succeeded);
    assert_null(f.call.result.dashboard_url);
    assert_string_equal(f.call.result.description, "Provisioning (0%)");
    assert_true(f.call.result.poll_after_ms > 9000 && f.call.result.poll_after_ms <= 10000);
    json_t *saved = json_loads(f.call.result.resume, 0, NULL);
    json_int_t until = json_integer_value(json_object_get(saved, "until_ms"));
    assert_true(until > 0);
    backend_call_clear(&f.call);
    /* An early poll (a resend, an operator's): in progress, the same end. */
    f.resume = saved;
    f.call.resume = saved;
    f.call.step = 1;
    assert_int_equal(run_sim(&f), 0);
    assert_true(f.call.result.in_progress);
    json_t *again = json_loads(f.call.result.resume, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(again, "until_ms")), until);
    json_decref(again);
    fake_call_clear(&f);

    fake_init(&f, OSBQ_JOB_PROVISION, LONG_PLAN, "{\"sim_poll_ms\": 1000}");
    assert_int_equal(run_sim(&f), 0);
    assert_int_equal(f.call.result.poll_after_ms, 1000);
    fake_call_clear(&f);

    /* A resume whose end has passed: the operation ends in this step. */
    fake_init(&f, OSBQ_JOB_PROVISION, LONG_PLAN, NULL);
    f.resume = json_pack("{s:I}", "until_ms", (json_int_t)1);
    f.call.resume = f.resume;
    f.call.step = 3;
    assert_int_equal(run_sim(&f), 0);
    assert_false(f.call.result.in_progress);
    assert_true(f.call.result.succeeded);
    assert_string_equal(f.call.result.dashboard_url, "https://sim.osbq.invalid/dashboard/inst-1");
    fake_call_clear(&f);
}

/* The step contract's helper: the resume state bounded, the delay clamped, an in-progress
 * answer replaced by an outcome given later in the same step. */
static void test_wait_for(void **state)
{
    (void)state;
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_UPDATE, INSTANT_PLAN, NULL);
    assert_int_equal(backend_call_wait_for(&f.call, "Half way.", -5, NULL), 0);
    assert_true(f.call.result.in_progress);
    assert_int_equal(f.call.result.poll_after_ms, 0);
    assert_null(f.call.result.resume);
    assert_string_equal(f.call.result.description, "Half way.");
    assert_int_equal(backend_call_wait_for(&f.call, "Later.", BACKEND_POLL_AFTER_MAX_MS * 2,
                                           json_pack("{s:s}", "job", "j-1")),
                     0);
    assert_int_equal(f.call.result.poll_after_ms, BACKEND_POLL_AFTER_MAX_MS);
    assert_string_equal(f.call.result.resume, "{\"job\":\"j-1\"}");
    backend_call_succeed(&f.call, "Done.");
    assert_false(f.call.result.in_progress);
    assert_null(f.call.result.resume);
    assert_null(f.call.resume_text);

    /* Over the limit: the operation fails, saying why. */
    char big[BACKEND_RESUME_MAX + 1];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(backend_call_wait_for(&f.call, "x", 10, json_pack("{s:s}", "s", big)), -1);
    assert_false(f.call.result.in_progress);
    assert_false(f.call.result.succeeded);
    char expected[128];
    (void)snprintf(expected, sizeof expected,
                   "The backend's resume state is %d bytes, over the %d limit.",
                   BACKEND_RESUME_MAX + 8, BACKEND_RESUME_MAX);
    assert_string_equal(f.call.result.description, expected);
    /* Not an object: fails too. */
    assert_int_equal(backend_call_wait_for(&f.call, "x", 10, json_integer(3)), -1);
    assert_string_equal(f.call.result.description,
                        "The backend's resume state is not a JSON object.");
    fake_call_clear(&f);
}

/* A backend without an entry for a kind fails that kind with a description saying so. */
static void test_unsupported_kind(void **state)
{
    (void)state;
    static const struct backend partial = {.name = "partial"};
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_BIND, INSTANT_PLAN, NULL);
    assert_int_equal(backend_run(&partial, &f.call), 0);
    assert_false(f.call.result.succeeded);
    assert_string_equal(f.call.result.description,
                        "The partial backend does not support bind yet.");
    assert_int_equal(f.report_count, 0);
    fake_call_clear(&f);
}

/* The helpers keep the strings in the call and clear them. */
static void test_call_helpers(void **state)
{
    (void)state;
    struct fake_call f;
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
    fake_call_clear(&f);
    assert_null(f.call.result.dashboard_url);
    assert_null(f.call.dashboard_url);
}

/* ---- bindings ---- */

/* Runs a bind of binding_id on instance_id under plan_id and returns its binding, parsed
 * (caller frees); bind_resource and predecessor may be NULL. Fails the test unless the bind
 * succeeded with "Bound.". */
static json_t *bind_json(const char *plan_id, const char *instance_id, const char *binding_id,
                         const char *bind_resource, const char *predecessor)
{
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_BIND, plan_id, NULL);
    f.job.instance_id = instance_id;
    f.job.binding_id = binding_id;
    f.job.bind_resource = bind_resource;
    f.job.predecessor_binding_id = predecessor;
    assert_int_equal(run_sim(&f), 0);
    assert_true(f.call.result.succeeded);
    assert_string_equal(f.call.result.description, "Bound.");
    assert_non_null(f.call.result.binding);
    assert_ptr_equal(f.call.result.binding, f.call.binding);
    /* Compact: no blanks after separators (the ids used here hold no ": " or ", "). */
    assert_null(strstr(f.call.result.binding, ": "));
    assert_null(strstr(f.call.result.binding, ", "));
    json_error_t jerr;
    json_t *binding = json_loads(f.call.result.binding, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(binding))
        fail_msg("binding is not a JSON object: %s", jerr.text);
    fake_call_clear(&f);
    assert_null(f.call.binding);
    assert_null(f.call.result.binding);
    return binding;
}

static const char *string_at(const json_t *object, const char *key)
{
    const json_t *value = json_object_get(object, key);
    if (!json_is_string(value))
        fail_msg("\"%s\" is not a string", key);
    return json_string_value(value);
}

/* Fails unless got equals the JSON text expected. */
static void assert_json(const json_t *got, const char *expected)
{
    json_t *want = json_loads(expected, 0, NULL);
    assert_non_null(want);
    if (!json_equal(got, want)) {
        char *text = json_dumps(got, JSON_COMPACT);
        fail_msg("got %s, expected %s", text ? text : "(null)", expected);
    }
    json_decref(want);
}

/* Fails unless text is n characters, each of them in set. */
static void assert_charset(const char *text, size_t n, const char *set)
{
    if (strlen(text) != n || strspn(text, set) != n)
        fail_msg("\"%s\": expected %zu characters of [%s]", text, n, set);
}

#define HEX_LOWER "0123456789abcdef"
#define BASE64URL "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
#define ENDPOINTS "[{\"host\": \"sim.osbq.invalid\", \"ports\": [\"6379\"], \"protocol\": \"tcp\"}]"

/* The credentials every sim binding has; returns them (borrowed from binding). */
static const json_t *check_credentials(const json_t *binding, const char *instance_id,
                                       const char *escaped_instance_id)
{
    const json_t *credentials = json_object_get(binding, "credentials");
    assert_true(json_is_object(credentials));
    assert_string_equal(string_at(credentials, "host"), "sim.osbq.invalid");
    assert_true(json_is_integer(json_object_get(credentials, "port")));
    assert_int_equal(json_integer_value(json_object_get(credentials, "port")), 6379);
    const char *username = string_at(credentials, "username");
    assert_true(strncmp(username, "b-", 2) == 0);
    assert_charset(username + 2, 16, HEX_LOWER);
    const char *password = string_at(credentials, "password");
    assert_charset(password, 32, BASE64URL);
    char uri[256];
    (void)snprintf(uri, sizeof uri, "sim://%s:%s@sim.osbq.invalid:6379/%s", username, password,
                   escaped_instance_id);
    assert_string_equal(string_at(credentials, "uri"), uri);
    char prefix[128];
    (void)snprintf(prefix, sizeof prefix, "%s:", instance_id);
    assert_string_equal(string_at(credentials, "key_prefix"), prefix);
    return credentials;
}

/* A service that requires nothing: credentials and endpoints, nothing else. */
static void test_bind_plain(void **state)
{
    (void)state;
    /* A route without route_forwarding gives no route service. */
    json_t *binding =
        bind_json(INSTANT_PLAN, "inst-1", "bind-1", "{\"route\": \"app.example.com\"}", NULL);
    const json_t *credentials = check_credentials(binding, "inst-1", "inst-1");
    assert_int_equal(json_object_size(credentials), 6);
    assert_null(json_object_get(credentials, "rotated_from"));
    assert_json(json_object_get(binding, "endpoints"), ENDPOINTS);
    assert_int_equal(json_object_size(binding), 2);
    json_decref(binding);
}

/* A service that requires all three permissions, with a route: every field. */
static void test_bind_requires_all(void **state)
{
    (void)state;
    json_t *binding = bind_json(ALL_PLAN, "inst-1", "bind-1",
                                "{\"app_guid\": \"app-1\", \"route\": \"app.example.com\"}", NULL);
    check_credentials(binding, "inst-1", "inst-1");
    assert_json(json_object_get(binding, "endpoints"), ENDPOINTS);
    assert_string_equal(string_at(binding, "syslog_drain_url"),
                        "syslog-tls://sim.osbq.invalid:6514/bind-1");
    assert_string_equal(string_at(binding, "route_service_url"),
                        "https://sim.osbq.invalid/route/bind-1");
    assert_json(json_object_get(binding, "volume_mounts"),
                "[{\"driver\": \"sim\", \"container_dir\": \"/var/vcap/data/bind-1\","
                " \"mode\": \"rw\", \"device_type\": \"shared\","
                " \"device\": {\"volume_id\": \"bind-1\", \"mount_config\": {}}}]");
    assert_int_equal(json_object_size(binding), 5);
    json_decref(binding);

    /* No route in bind_resource (or none at all): no route service, the rest stays. */
    static const char *const resources[] = {NULL, "{\"app_guid\": \"app-1\"}", "{\"route\": \"\"}",
                                            "{\"route\": 7}"};
    for (size_t i = 0; i < sizeof resources / sizeof resources[0]; i++) {
        binding = bind_json(ALL_PLAN, "inst-1", "bind-1", resources[i], NULL);
        if (json_object_get(binding, "route_service_url") != NULL)
            fail_msg("route_service_url with bind_resource %s", resources[i]);
        assert_non_null(json_object_get(binding, "syslog_drain_url"));
        assert_non_null(json_object_get(binding, "volume_mounts"));
        assert_int_equal(json_object_size(binding), 4);
        json_decref(binding);
    }
}

/* A service that requires route_forwarding only: the route service and nothing else extra. */
static void test_bind_requires_route(void **state)
{
    (void)state;
    json_t *binding =
        bind_json(ROUTE_PLAN, "inst-1", "bind-1", "{\"route\": \"app.example.com\"}", NULL);
    assert_string_equal(string_at(binding, "route_service_url"),
                        "https://sim.osbq.invalid/route/bind-1");
    assert_null(json_object_get(binding, "syslog_drain_url"));
    assert_null(json_object_get(binding, "volume_mounts"));
    assert_int_equal(json_object_size(binding), 3);
    json_decref(binding);
}

/* Ids are percent-encoded where they become part of a URL or path, kept as they are
 * elsewhere; an id of dots cannot climb out of a directory. */
static void test_bind_escapes_ids(void **state)
{
    (void)state;
    json_t *binding = bind_json(ALL_PLAN, "inst 1?", "b\xc3\xa9 1.x", "{\"route\": \"r\"}", NULL);
    check_credentials(binding, "inst 1?", "inst%201%3F");
    assert_string_equal(string_at(binding, "syslog_drain_url"),
                        "syslog-tls://sim.osbq.invalid:6514/b%C3%A9%201.x");
    assert_string_equal(string_at(binding, "route_service_url"),
                        "https://sim.osbq.invalid/route/b%C3%A9%201.x");
    const json_t *mount = json_array_get(json_object_get(binding, "volume_mounts"), 0);
    assert_string_equal(string_at(mount, "container_dir"), "/var/vcap/data/b%C3%A9%201.x");
    assert_string_equal(string_at(json_object_get(mount, "device"), "volume_id"), "b\xc3\xa9 1.x");
    json_decref(binding);

    binding = bind_json(ALL_PLAN, "..", "..", NULL, NULL);
    check_credentials(binding, "..", "%2E%2E");
    mount = json_array_get(json_object_get(binding, "volume_mounts"), 0);
    assert_string_equal(string_at(mount, "container_dir"), "/var/vcap/data/%2E%2E");
    json_decref(binding);
}

/* Every bind draws fresh credentials: no two bindings share a username or password. */
static void test_bind_random(void **state)
{
    (void)state;
    enum { BINDS = 8 };
    char usernames[BINDS][64];
    char passwords[BINDS][64];
    for (int i = 0; i < BINDS; i++) {
        json_t *binding = bind_json(INSTANT_PLAN, "inst-1", "bind-1", NULL, NULL);
        const json_t *credentials = json_object_get(binding, "credentials");
        (void)snprintf(usernames[i], sizeof usernames[i], "%s", string_at(credentials, "username"));
        (void)snprintf(passwords[i], sizeof passwords[i], "%s", string_at(credentials, "password"));
        json_decref(binding);
        for (int j = 0; j < i; j++) {
            assert_string_not_equal(usernames[i], usernames[j]);
            assert_string_not_equal(passwords[i], passwords[j]);
        }
    }
}

/* A rotation names its predecessor inside the credentials; everything else is fresh. */
static void test_bind_rotation(void **state)
{
    (void)state;
    json_t *old = bind_json(INSTANT_PLAN, "inst-1", "bind-0", NULL, NULL);
    json_t *binding = bind_json(INSTANT_PLAN, "inst-1", "bind-1", NULL, "bind-0");
    const json_t *credentials = check_credentials(binding, "inst-1", "inst-1");
    assert_string_equal(string_at(credentials, "rotated_from"), "bind-0");
    assert_int_equal(json_object_size(credentials), 7);
    assert_string_not_equal(string_at(credentials, "password"),
                            string_at(json_object_get(old, "credentials"), "password"));
    json_decref(binding);
    json_decref(old);
}

/* bind_ms passes (the bind waiting between two steps) before the binding is handed out. */
static void test_bind_timed(void **state)
{
    (void)state;
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_BIND, TIMED_PLAN, NULL);
    int64_t started = osbq_clock_ms();
    assert_int_equal(run_sim(&f), 0);
    /* In progress: no binding yet. */
    assert_true(f.call.result.in_progress);
    assert_null(f.call.result.binding);
    backend_call_clear(&f.call);
    fake_call_clear(&f);
    fake_init(&f, OSBQ_JOB_BIND, TIMED_PLAN, NULL);
    struct steps_seen seen;
    assert_int_equal(run_steps(&f, &seen), 0);
    assert_true(osbq_clock_ms() - started >= TIMED_MS);
    assert_string_equal(seen.first_progress, "Binding (0%)");
    assert_true(f.call.result.succeeded);
    assert_non_null(f.call.result.binding);
    fake_call_clear(&f);
}

/* ---- fail_on ---- */

static void check_fail_on(const char *plan_id, enum osbq_job_kind kind, bool fails)
{
    static const bool usable[] = {
        [OSBQ_JOB_PROVISION] = false, [OSBQ_JOB_UPDATE] = true, [OSBQ_JOB_DEPROVISION] = true,
        [OSBQ_JOB_BIND] = true,       [OSBQ_JOB_UNBIND] = true,
    };
    struct fake_call f;
    fake_init(&f, kind, plan_id, NULL);
    assert_int_equal(run_sim(&f), 0);
    assert_int_equal(f.report_count, 0);
    if (!fails) {
        if (!f.call.result.succeeded)
            fail_msg("%s on %s failed", osbq_job_kind_name(kind), plan_id);
        fake_call_clear(&f);
        return;
    }
    if (f.call.result.succeeded)
        fail_msg("%s on %s succeeded", osbq_job_kind_name(kind), plan_id);
    assert_string_equal(f.call.result.description,
                        "Simulated failure requested by the plan's fail_on setting.");
    assert_int_equal(f.call.result.instance_usable, usable[kind]);
    assert_false(f.call.result.update_repeatable);
    assert_null(f.call.result.binding);
    fake_call_clear(&f);
}

/* A plan naming one kind fails exactly that kind. */
static void test_fail_on_each_kind(void **state)
{
    (void)state;
    for (size_t p = 0; p < sizeof kinds / sizeof kinds[0]; p++) {
        char plan_id[64];
        (void)snprintf(plan_id, sizeof plan_id, "plan-fail-%s", osbq_job_kind_name(kinds[p].kind));
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            check_fail_on(plan_id, kinds[k].kind, p == k);
    }
}

/* A list with blanks and empty entries; only whole, exact kind names count. */
static void test_fail_on_list(void **state)
{
    (void)state;
    /* " bind , unbind,provisioning,,Update" */
    check_fail_on(BLANKS_PLAN, OSBQ_JOB_BIND, true);
    check_fail_on(BLANKS_PLAN, OSBQ_JOB_UNBIND, true);
    check_fail_on(BLANKS_PLAN, OSBQ_JOB_PROVISION, false);
    check_fail_on(BLANKS_PLAN, OSBQ_JOB_UPDATE, false);
    check_fail_on(BLANKS_PLAN, OSBQ_JOB_DEPROVISION, false);
}

/* ---- the binding helpers ---- */

static void test_set_binding(void **state)
{
    (void)state;
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_BIND, INSTANT_PLAN, NULL);
    /* Not an object, or nothing: refused, the reference released (ASan would see a leak). */
    assert_int_equal(backend_call_set_binding(&f.call, json_string("x")), -1);
    assert_int_equal(backend_call_set_binding(&f.call, NULL), -1);
    assert_null(f.call.result.binding);

    assert_int_equal(backend_call_set_binding(&f.call, json_pack("{s:{s:s}, s:[]}", "credentials",
                                                                 "password", "p w", "endpoints")),
                     0);
    assert_string_equal(f.call.result.binding,
                        "{\"credentials\":{\"password\":\"p w\"},\"endpoints\":[]}");
    /* A second one replaces the first. */
    assert_int_equal(backend_call_set_binding(&f.call, json_object()), 0);
    assert_string_equal(f.call.result.binding, "{}");
    assert_int_equal(backend_call_set_binding(&f.call, json_string("x")), -1);
    assert_string_equal(f.call.result.binding, "{}");

    /* A failure hands out no binding. */
    backend_call_fail(&f.call, "no", true, false);
    assert_null(f.call.result.binding);
    fake_call_clear(&f);
    assert_null(f.call.binding);
}

/* ---- a bind result's credential lifetime ---- */

/* 2026-11-22T02:40:00Z: an hour before the spec-format example below. */
#define FIXED_NOW ((time_t)1795315200)

/* bind_result_add_expiry on the JSON text before gives after (rc 0). */
static void check_expiry(const char *before, int64_t ttl_s, time_t now, const char *after)
{
    json_t *binding = json_loads(before, 0, NULL);
    assert_non_null(binding);
    assert_int_equal(bind_result_add_expiry(binding, ttl_s, now), 0);
    assert_json(binding, after);
    json_decref(binding);
}

static void test_expiry(void **state)
{
    (void)state;
    /* An hour: expires at +1 h, renew at +48 min. */
    check_expiry("{}", 3600, FIXED_NOW,
                 "{\"metadata\": {\"expires_at\": \"2026-11-22T03:40:00.0Z\","
                 " \"renew_before\": \"2026-11-22T03:28:00.0Z\"}}");
    /* The rest of the binding is kept. */
    check_expiry("{\"credentials\": {\"password\": \"p\"}, \"endpoints\": []}", 3600, FIXED_NOW,
                 "{\"credentials\": {\"password\": \"p\"}, \"endpoints\": [],"
                 " \"metadata\": {\"expires_at\": \"2026-11-22T03:40:00.0Z\","
                 " \"renew_before\": \"2026-11-22T03:28:00.0Z\"}}");
    /* The minimum lifetime, odd: 80% of 61 s rounds down to 48 s. */
    check_expiry("{}", 61, FIXED_NOW,
                 "{\"metadata\": {\"expires_at\": \"2026-11-22T02:41:01.0Z\","
                 " \"renew_before\": \"2026-11-22T02:40:48.0Z\"}}");
    /* Thirty days from 2028-02-01, across a leap day: 24 days to renew. */
    check_expiry("{}", 30 * 86400, (time_t)1832976000,
                 "{\"metadata\": {\"expires_at\": \"2028-03-02T00:00:00.0Z\","
                 " \"renew_before\": \"2028-02-25T00:00:00.0Z\"}}");
    /* Other metadata stays; a renew_before given alone is replaced, so it never falls after
     * expires_at. */
    check_expiry("{\"metadata\": {\"renew_before\": \"2099-01-01T00:00:00.0Z\", \"x\": 1}}", 3600,
                 FIXED_NOW,
                 "{\"metadata\": {\"expires_at\": \"2026-11-22T03:40:00.0Z\","
                 " \"renew_before\": \"2026-11-22T03:28:00.0Z\", \"x\": 1}}");
    /* The backend's own lifetime wins. */
    check_expiry("{\"metadata\": {\"expires_at\": \"2030-01-01T00:00:00.0Z\"}}", 3600, FIXED_NOW,
                 "{\"metadata\": {\"expires_at\": \"2030-01-01T00:00:00.0Z\"}}");
    /* No lifetime: nothing added. */
    check_expiry("{}", 0, FIXED_NOW, "{}");

    /* Metadata that is not an object, or a binding that is not one: refused. */
    json_t *binding = json_pack("{s:s}", "metadata", "soon");
    assert_int_equal(bind_result_add_expiry(binding, 3600, FIXED_NOW), -1);
    json_decref(binding);
    binding = json_array();
    assert_int_equal(bind_result_add_expiry(binding, 3600, FIXED_NOW), -1);
    json_decref(binding);
    assert_int_equal(bind_result_add_expiry(NULL, 3600, FIXED_NOW), -1);
}

/* ---- fault settings (test-only) ---- */

/* Runs kind on plan_id in a child process; returns its wait status. */
static int run_in_child(enum osbq_job_kind kind, const char *plan_id)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* No core file, and no log line in the test's output. */
        struct rlimit none = {0, 0};
        (void)setrlimit(RLIMIT_CORE, &none);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            (void)dup2(devnull, STDERR_FILENO);
        struct fake_call f;
        fake_init(&f, kind, plan_id, NULL);
        int rc = run_sim(&f);
        _exit(rc == 0 && f.call.result.succeeded ? 0 : 3);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

/* crash_on kills the process with SIGABRT as the operation starts; other kinds run. */
static void test_crash_on(void **state)
{
    (void)state;
    static const enum osbq_job_kind crashing[] = {OSBQ_JOB_BIND, OSBQ_JOB_UNBIND};
    for (size_t i = 0; i < sizeof crashing / sizeof crashing[0]; i++) {
        int status = run_in_child(crashing[i], CRASH_PLAN);
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
            fail_msg("%s: status %#x, expected death by SIGABRT", osbq_job_kind_name(crashing[i]),
                     (unsigned)status);
    }
    int status = run_in_child(OSBQ_JOB_PROVISION, CRASH_PLAN);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

struct hang_run {
    struct fake_call f; /* the call */
    atomic_bool done;   /* the backend returned */
    int rc;             /* what it returned */
};

static void *hang_thread(void *arg)
{
    struct hang_run *h = arg;
    h->rc = run_sim(&h->f);
    atomic_store(&h->done, true);
    return NULL;
}

/* Waits up to ms for h to return; true when it did. */
static bool returns_within(struct hang_run *h, int64_t ms)
{
    int64_t until = osbq_clock_ms() + ms;
    while (!atomic_load(&h->done) && osbq_clock_ms() < until)
        osbq_clock_sleep_ms(5);
    return atomic_load(&h->done);
}

/* hang_on: never returns while the call is live, ignores cancellation (without spinning: a few
 * waits per 100 ms at most), and returns -1 with no outcome once the process exits. */
static void test_hang_on(void **state)
{
    (void)state;
    static struct hang_run h;
    fake_init(&h.f, OSBQ_JOB_PROVISION, HANG_PLAN, NULL);
    atomic_init(&h.done, false);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, hang_thread, &h), 0);
    /* It keeps its lease alive (it sits in wait) and reports nothing. */
    assert_false(returns_within(&h, 300));
    assert_true(atomic_load(&h.f.waits) >= 1);

    atomic_store(&h.f.cancel, true);
    int waits = atomic_load(&h.f.waits);
    assert_false(returns_within(&h, 400));
    int spent = atomic_load(&h.f.waits) - waits;
    if (spent > 10)
        fail_msg("%d waits in 400 ms once cancelled: spinning", spent);

    int64_t exiting_at = osbq_clock_ms();
    atomic_store(&h.f.exiting, true);
    assert_true(returns_within(&h, 1000));
    int64_t took = osbq_clock_ms() - exiting_at;
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(h.rc, -1);
    if (took > 500)
        fail_msg("took %lld ms to return once exiting", (long long)took);
    assert_int_equal(h.f.report_count, 0);
    assert_false(h.f.call.result.succeeded);
    assert_null(h.f.call.result.description);
    fake_call_clear(&h.f);

    /* Exiting before it starts: returns at once. */
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_PROVISION, HANG_PLAN, NULL);
    atomic_store(&f.exiting, true);
    assert_int_equal(run_sim(&f), -1);
    fake_call_clear(&f);

    /* Kinds it does not name run as usual. */
    fake_init(&f, OSBQ_JOB_UPDATE, HANG_PLAN, NULL);
    assert_int_equal(run_sim(&f), 0);
    assert_true(f.call.result.succeeded);
    assert_int_equal(f.report_count, 0);
    fake_call_clear(&f);
}

/* ---- cpu_ms (benchmark setting) ---- */

/* The calling thread's CPU time in ms. */
static double thread_cpu_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Runs kind on plan_id as the worker would (every step); returns the CPU time it took on this
 * thread, in ms, with the call's outcome in f and its steps in seen. */
static double cpu_of_steps(struct fake_call *f, enum osbq_job_kind kind, const char *plan_id,
                           struct steps_seen *seen)
{
    fake_init(f, kind, plan_id, NULL);
    double before = thread_cpu_ms();
    assert_int_equal(run_steps(f, seen), 0);
    return thread_cpu_ms() - before;
}

/* Each step burns cpu_ms of the calling thread's CPU time (not a sleep), for every kind,
 * looking at its call between slices (waits of 0 ms: the lease is renewed when due); then the
 * operation goes on as the plan says. A shared machine slows the wall clock, not this count;
 * the upper bound only catches a burn far past its mark. */
static void test_cpu_ms(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        struct fake_call f;
        struct steps_seen seen;
        double spent = cpu_of_steps(&f, kinds[i].kind, CPU_PLAN, &seen);
        if (spent < CPU_MS || spent > 4 * CPU_MS)
            fail_msg("%s: %.1f ms of CPU, expected %d or a little more", kinds[i].done, spent,
                     CPU_MS);
        assert_true(f.call.result.succeeded);
        assert_string_equal(f.call.result.description, kinds[i].done);
        assert_int_equal(seen.steps, 1);
        assert_true(atomic_load(&f.waits) >= CPU_MS / 10);
        fake_call_clear(&f);
    }
    /* A plan without it burns nothing to speak of. */
    struct fake_call f;
    struct steps_seen seen;
    double spent = cpu_of_steps(&f, OSBQ_JOB_PROVISION, INSTANT_PLAN, &seen);
    if (spent > CPU_MS / 2)
        fail_msg("the instant plan took %.1f ms of CPU", spent);
    assert_int_equal(atomic_load(&f.waits), 0);
    fake_call_clear(&f);
}

/* Every step burns it: an operation of two steps (in progress, then due) takes twice. */
static void test_cpu_ms_every_step(void **state)
{
    (void)state;
    struct fake_call f;
    struct steps_seen seen;
    double spent = cpu_of_steps(&f, OSBQ_JOB_PROVISION, CPU_TIMED_PLAN, &seen);
    assert_int_equal(seen.steps, 2);
    assert_true(f.call.result.succeeded);
    assert_string_equal(seen.first_progress, "Provisioning (0%)");
    if (spent < 2 * CPU_MS || spent > 8 * CPU_MS)
        fail_msg("%.1f ms of CPU over 2 steps, expected %d or a little more", spent, 2 * CPU_MS);
    fake_call_clear(&f);
}

/* A cancelled call stops burning at its next look, with no outcome. */
static void test_cpu_ms_cancelled(void **state)
{
    (void)state;
    struct fake_call f;
    fake_init_cancelled(&f, OSBQ_JOB_BIND, CPU_PLAN);
    double before = thread_cpu_ms();
    assert_int_equal(run_sim(&f), -1);
    double spent = thread_cpu_ms() - before;
    if (spent > CPU_MS / 2)
        fail_msg("a cancelled call burned %.1f ms of CPU", spent);
    assert_int_equal(atomic_load(&f.waits), 1);
    assert_false(f.call.result.succeeded);
    assert_null(f.call.result.description);
    assert_null(f.call.result.binding);
    fake_call_clear(&f);
}

/* ---- a step's deadlines and finish backoff ---- */

static void test_deadline(void **state)
{
    (void)state;
    const struct osbq_plan *hang = osbq_catalog_plan(fault_catalog, HANG_PLAN);
    const struct osbq_plan *plain = osbq_catalog_plan(catalog, INSTANT_PLAN);
    assert_non_null(hang);
    assert_non_null(plain);
    /* The plan's setting per kind, the default for the others. */
    assert_int_equal(step_deadline_s(hang, OSBQ_JOB_PROVISION), 2);
    assert_int_equal(step_deadline_s(hang, OSBQ_JOB_BIND), STEP_DEADLINE_S_MAX);
    assert_int_equal(step_deadline_s(hang, OSBQ_JOB_UPDATE), OSBQ_CATALOG_DEADLINE_S_DEFAULT);
    assert_int_equal(step_deadline_s(plain, OSBQ_JOB_DEPROVISION), OSBQ_CATALOG_DEADLINE_S_DEFAULT);
    /* Fail-safe: no plan (gone from the catalog), an unknown kind. */
    assert_int_equal(step_deadline_s(NULL, OSBQ_JOB_PROVISION), OSBQ_CATALOG_DEADLINE_S_DEFAULT);
    assert_int_equal(step_deadline_s(hang, OSBQ_JOB_KIND_NONE), OSBQ_CATALOG_DEADLINE_S_DEFAULT);
    assert_int_equal(step_deadline_s(hang, (enum osbq_job_kind)99),
                     OSBQ_CATALOG_DEADLINE_S_DEFAULT);
}

static void test_finish_backoff(void **state)
{
    (void)state;
    static const int64_t expected[] = {100, 200, 400, 800, 1600, 3200, 5000, 5000};
    int64_t backoff = 0;
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        backoff = step_finish_backoff_ms(backoff);
        assert_int_equal(backoff, expected[i]);
    }
    assert_int_equal(step_finish_backoff_ms(-5), 100);
    assert_int_equal(step_finish_backoff_ms(INT64_MAX / 4), 5000);
}

OSBQ_TEST_MAIN(setup, teardown, cmocka_unit_test(test_find),
               cmocka_unit_test(test_unknown_kind_fails), cmocka_unit_test(test_kinds_instant),
               cmocka_unit_test(test_kinds_timed), cmocka_unit_test(test_sim_fail),
               cmocka_unit_test(test_sim_fail_needs_true), cmocka_unit_test(test_dashboard),
               cmocka_unit_test(test_cancelled_step), cmocka_unit_test(test_long_operation_steps),
               cmocka_unit_test(test_wait_for), cmocka_unit_test(test_unsupported_kind),
               cmocka_unit_test(test_call_helpers), cmocka_unit_test(test_bind_plain),
               cmocka_unit_test(test_bind_requires_all), cmocka_unit_test(test_bind_requires_route),
               cmocka_unit_test(test_bind_escapes_ids), cmocka_unit_test(test_bind_random),
               cmocka_unit_test(test_bind_rotation), cmocka_unit_test(test_bind_timed),
               cmocka_unit_test(test_fail_on_each_kind), cmocka_unit_test(test_fail_on_list),
               cmocka_unit_test(test_set_binding), cmocka_unit_test(test_expiry),
               cmocka_unit_test(test_crash_on), cmocka_unit_test(test_hang_on),
               cmocka_unit_test(test_cpu_ms), cmocka_unit_test(test_cpu_ms_every_step),
               cmocka_unit_test(test_cpu_ms_cancelled), cmocka_unit_test(test_deadline),
               cmocka_unit_test(test_finish_backoff))
