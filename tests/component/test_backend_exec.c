/* Tests of the exec backend against real programs (the scripts in tests/data/exec), called directly
 * through backend_run with a hand-built call: success with progress and a result, failures
 * (exit status, stderr tail, signal, timeout, invalid or oversized result), floods, the job on
 * stdin, the environment, cancellation of the whole process group, and programs running at
 * once. Labelled integration: every test spawns processes. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "catalog.h"
#include "catalog_text.h"
#include "clock.h"
#include "exec_watch.h"
#include "fake_call.h"
#include "job.h"
#include "string_cases.h"
#include "test_main.h"

#define EXEC_DIR OSBQ_TEST_DATA_DIR "/exec/"

/* A plan running tests/data/exec/<script> through /bin/sh (no exec bit needed), with extra
 * settings (a JSON fragment starting with a comma, or ""). */
#define PLAN(id, script, extra)                                                                    \
    "{\"id\": \"" id "\", \"name\": \"" id "\", \"description\": \"d\", \"osbq\": {\"backend\": "  \
    "\"exec\", \"command\": [\"/bin/sh\", \"" EXEC_DIR script "\"]" extra "}}"

/* The poll-style test program, run by python3. */
#define POLL_PLAN                                                                                  \
    "{\"id\": \"poll\", \"name\": \"poll\", \"description\": \"d\", \"osbq\": {\"backend\": "      \
    "\"exec\", \"command\": [\"python3\", \"" EXEC_DIR "poll.py\"]}},"

/* clang-format off: one plan a line */
static const char catalog_text[] =
    "{\"services\": [{\"name\": \"exec\", \"id\": \"svc\", \"description\": \"d\","
    " \"bindable\": true, \"plans\": [" PLAN("success", "success.sh", "") "," PLAN("echo", "echo_input.sh", "") "," PLAN("fail", "fail.sh", "") "," PLAN(
        "fail-silent", "fail_silent.sh",
        "") "," PLAN("sleep", "sleep.sh",
                     ", \"timeout_ms\": 300") "," PLAN("flood", "flood.sh",
                                                       "") "," PLAN("flood-result",
                                                                    "flood_result.sh",
                                                                    "") "," PLAN("bad-json",
                                                                                 "bad_json.sh",
                                                                                 "") "," PLAN("sign"
                                                                                              "al",
                                                                                              "sign"
                                                                                              "al."
                                                                                              "sh",
                                                                                              "") "," PLAN("env",
                                                                                                           "env."
                                                                                                           "sh",
                                                                                                           ", "
                                                                                                           "\"en"
                                                                                                           "v\":"
                                                                                                           " {"
                                                                                                           "\"EX"
                                                                                                           "TRA"
                                                                                                           "\": "
                                                                                                           "\"fr"
                                                                                                           "om "
                                                                                                           "plan"
                                                                                                           "\", "
                                                                                                           "\"OV"
                                                                                                           "ERRI"
                                                                                                           "DE\""
                                                                                                           ": "
                                                                                                           "\"ne"
                                                                                                           "w\""
                                                                                                           "}") "," PLAN("group",
                                                                                                                         "group.sh",
                                                                                                                         "") "," PLAN("ignore-stdin",
                                                                                                                                      "ignore_stdin.sh",
                                                                                                                                      "") "," POLL_PLAN
                                                                                                                                          "{\"id\": \"missing\", \"name\": \"missing\", \"description\": \"d\", \"osbq\": {\"backend\": "
                                                                                                                                          "\"exec\", \"command\": [\"/nonexistent/osbq-program\"]}}"
                                                                                                                                          "]}]}";
/* clang-format on */

static struct osbq_catalog *catalog;
/* The loop watching the programs, as the worker's runner has one. */
static struct exec_watch *watch;

/* Prepares f for kind on the exec plan plan_id, watched by the test's loop. */
static void fake_init(struct fake_call *f, enum osbq_job_kind kind, const char *plan_id)
{
    fake_call_init(f, kind, osbq_catalog_plan(catalog, plan_id), NULL);
    f->call.exec_watch = watch;
}

static int run_exec(struct fake_call *f)
{
    return backend_run(backend_find("exec"), &f->call);
}

/* Runs kind with plan's program, which must fail, and with description when it is not NULL;
 * the call is left for the caller's own checks and fake_call_clear. The plan names the case. */
static void run_failing(struct fake_call *f, enum osbq_job_kind kind, const char *plan,
                        const char *description)
{
    fake_init(f, kind, plan);
    int rc = run_exec(f);
    if (rc != 0)
        fail_msg("%s: run_exec gave %d", plan, rc);
    if (f->call.result.succeeded)
        fail_msg("%s: succeeded", plan);
    if (description != NULL && (f->call.result.description == NULL ||
                                strcmp(f->call.result.description, description) != 0))
        fail_msg("%s: description \"%s\", want \"%s\"", plan,
                 f->call.result.description != NULL ? f->call.result.description : "(none)",
                 description);
}

/* The binding's credentials, parsed (caller decrefs). */
static json_t *credentials_of(const struct fake_call *f)
{
    assert_non_null(f->call.result.binding);
    json_t *binding = json_loads(f->call.result.binding, 0, NULL);
    assert_non_null(binding);
    json_t *credentials = json_incref(json_object_get(binding, "credentials"));
    json_decref(binding);
    assert_true(json_is_object(credentials));
    return credentials;
}

/* True once pid is gone or a zombie (its parent, maybe init, has not reaped it yet). */
static bool process_gone(long pid)
{
    char path[64];
    (void)snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return true;
    char buf[512];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren == NULL || paren[1] == '\0' || paren[2] == 'Z' || paren[2] == 'X';
}

static int setup(void **state)
{
    (void)state;
    /* As the worker does (main.c): a program that exits without reading its whole stdin must
     * give the writer EPIPE, not kill it. */
    signal(SIGPIPE, SIG_IGN);
    catalog = catalog_from_text(catalog_text, sizeof catalog_text - 1);
    if (catalog == NULL)
        return -1;
    struct osbq_error err = {0};
    watch = exec_watch_new(64, &err);
    if (watch == NULL) {
        print_error("exec watch: %s\n", err.text);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    exec_watch_destroy(&watch);
    osbq_catalog_destroy(&catalog);
    return 0;
}

/* ---- tests ---- */

static void test_find(void **state)
{
    (void)state;
    const struct backend *b = fake_call_backend("exec");
    assert_non_null(b->provision);
    assert_non_null(b->update);
    assert_non_null(b->deprovision);
    assert_non_null(b->bind);
    assert_non_null(b->unbind);
}

/* Progress lines become "<text> (<percent>%)"; malformed ones are ordinary output; the last
 * progress text is the success description; the last line starting with '{' is the result. */
static void test_bind_success(void **state)
{
    (void)state;
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_BIND, "success");
    assert_int_equal(run_exec(&f), 0);
    assert_true(f.call.result.succeeded);
    assert_int_equal(f.report_count, 2);
    assert_string_equal(f.reports[0], "Creating database (40%)");
    assert_string_equal(f.reports[1], "Done creating (100%)");
    assert_string_equal(f.call.result.description, "Done creating");
    json_t *binding = json_loads(f.call.result.binding, 0, NULL);
    assert_non_null(binding);
    /* Only the spec's binding fields: no dashboard_url, no unknown keys. */
    assert_int_equal(json_object_size(binding), 3);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(binding, "credentials"), "password")),
        "p");
    assert_true(json_is_array(json_object_get(binding, "endpoints")));
    assert_true(json_is_object(json_object_get(binding, "metadata")));
    assert_null(f.call.result.dashboard_url);
    json_decref(binding);
    fake_call_clear(&f);
}

static void test_provision_success(void **state)
{
    (void)state;
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_PROVISION, "success");
    assert_int_equal(run_exec(&f), 0);
    assert_true(f.call.result.succeeded);
    assert_null(f.call.result.binding);
    assert_string_equal(f.call.result.dashboard_url, "https://dash.example/x");
    assert_string_equal(f.call.result.metadata, "{\"labels\":{\"tier\":\"gold\"}}");
    fake_call_clear(&f);

    /* Without a result or progress: "Succeeded.". */
    fake_init(&f, OSBQ_JOB_DEPROVISION, "ignore-stdin");
    assert_int_equal(run_exec(&f), 0);
    assert_true(f.call.result.succeeded);
    assert_string_equal(f.call.result.description, "Succeeded.");
    fake_call_clear(&f);
}

/* What a trace (exec_watch.h) records of one run. */
struct trace_record {
    char input[4096]; /* the job line */
    size_t out_len;   /* stdout bytes seen */
    size_t err_len;   /* stderr bytes seen */
    int ends;         /* streams that reported their end */
    int ended;        /* ended calls */
    struct exec_watch_end end;
};

static void trace_input(void *ctx, const char *line, size_t n)
{
    struct trace_record *t = ctx;
    assert_true(n < sizeof t->input);
    memcpy(t->input, line, n);
    t->input[n] = '\0';
}

static void trace_output(void *ctx, int stream, const char *data, size_t n)
{
    struct trace_record *t = ctx;
    (void)data;
    if (n == 0)
        t->ends++;
    else if (stream == 1)
        t->out_len += n;
    else
        t->err_len += n;
}

static void trace_ended(void *ctx, const struct exec_watch_end *end)
{
    struct trace_record *t = ctx;
    t->ended++;
    t->end = *end;
}

/* A trace sees the job line, every byte of both streams and their ends, and how the program
 * ended, before the outcome is made; the outcome is the same as without one. */
static void test_trace(void **state)
{
    (void)state;
    struct trace_record t = {0};
    const struct exec_trace trace = {trace_input, trace_output, trace_ended, &t};
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_PROVISION, "success");
    f.call.exec_trace = &trace;
    assert_int_equal(run_exec(&f), 0);
    assert_true(f.call.result.succeeded);
    assert_non_null(strstr(t.input, "\"kind\":\"provision\""));
    assert_int_equal(t.input[strlen(t.input) - 1], '\n');
    assert_true(t.out_len > 200);
    assert_int_equal(t.err_len, strlen("warning on stderr\n"));
    assert_int_equal(t.ends, 2);
    assert_int_equal(t.ended, 1);
    assert_int_equal(t.end.stop, EXEC_WATCH_EXITED);
    assert_true(WIFEXITED(t.end.status) && WEXITSTATUS(t.end.status) == 0);
    fake_call_clear(&f);

    /* A program that cannot start: its input is traced, its end is not. */
    memset(&t, 0, sizeof t);
    fake_init(&f, OSBQ_JOB_PROVISION, "missing");
    f.call.exec_trace = &trace;
    assert_int_equal(run_exec(&f), 0);
    assert_false(f.call.result.succeeded);
    assert_true(t.input[0] == '{');
    assert_int_equal(t.ended, 0);
    fake_call_clear(&f);
}

/* The job on stdin: exactly the pinned keys, nulls for what is absent. */
static void test_stdin_fields(void **state)
{
    (void)state;
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_BIND, "echo");
    f.job.operation_id = "op-\"quoted\"";
    f.job.context = "{\"platform\":\"cloudfoundry\"}";
    f.job.bind_resource = "{\"app_guid\":\"app-1\"}";
    f.job.predecessor_binding_id = "bind-0";
    f.job.attempt = 3;
    f.parameters = json_pack("{s:s}", "size", "small");
    f.call.parameters = f.parameters;
    assert_int_equal(run_exec(&f), 0);
    assert_true(f.call.result.succeeded);
    json_t *in = credentials_of(&f);
    json_t *expected =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s}, s:{s:s}, s:{s:s}, s:s, s:i}", "kind",
                  "bind", "operation_id", "op-\"quoted\"", "instance_id", "inst-1", "binding_id",
                  "bind-1", "service_id", "svc", "plan_id", "echo", "parameters", "size", "small",
                  "context", "platform", "cloudfoundry", "bind_resource", "app_guid", "app-1",
                  "predecessor_binding_id", "bind-0", "attempt", 3);
    assert_true(json_equal(in, expected));
    json_decref(in);
    json_decref(expected);
    fake_call_clear(&f);

    /* A provision: the optional fields are there, as null. */
    fake_init(&f, OSBQ_JOB_UPDATE, "echo");
    assert_int_equal(run_exec(&f), 0);
    assert_true(f.call.result.succeeded);
    assert_null(f.call.result.binding); /* an update has no binding */
    fake_call_clear(&f);
    fake_init(&f, OSBQ_JOB_BIND, "echo");
    f.job.binding_id = NULL;
    assert_int_equal(run_exec(&f), 0);
    in = credentials_of(&f);
    assert_int_equal(json_object_size(in), 11);
    const char *nulls[] = {"binding_id", "parameters", "context", "bind_resource",
                           "predecessor_binding_id"};
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
        assert_true(json_is_null(json_object_get(in, nulls[i])));
    json_decref(in);
    fake_call_clear(&f);
}

/* A deprovision or an unbind also names the creation it halted (docs/decisions/0051), null
 * when it halted none; other kinds do not have the key. */
static void test_stdin_halted_operation(void **state)
{
    (void)state;
    const struct {
        enum osbq_job_kind kind;
        const char *halted;
        bool has_key;
    } cases[] = {
        {OSBQ_JOB_DEPROVISION, "op-halted", true},
        {OSBQ_JOB_UNBIND, "op-halted", true},
        {OSBQ_JOB_DEPROVISION, NULL, true},
        {OSBQ_JOB_BIND, "op-halted", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct trace_record t = {0};
        const struct exec_trace trace = {trace_input, trace_output, trace_ended, &t};
        struct fake_call f;
        fake_init(&f, cases[i].kind, "echo");
        f.call.halted_operation = cases[i].halted;
        f.call.exec_trace = &trace;
        assert_int_equal(run_exec(&f), 0);
        assert_true(f.call.result.succeeded);
        json_t *in = json_loads(t.input, 0, NULL);
        assert_non_null(in);
        json_t *named = json_object_get(in, "halted_operation_id");
        if (!cases[i].has_key)
            assert_null(named);
        else if (cases[i].halted == NULL)
            assert_true(json_is_null(named));
        else
            assert_string_equal(json_string_value(named), cases[i].halted);
        json_decref(in);
        fake_call_clear(&f);
    }
}

static void test_fail_stderr(void **state)
{
    (void)state;
    struct fake_call f;
    run_failing(&f, OSBQ_JOB_PROVISION, "fail",
                "first line of noise ERROR: database \"x\" is on fire");
    assert_false(f.call.result.instance_usable);
    fake_call_clear(&f);

    run_failing(&f, OSBQ_JOB_UPDATE, "fail", NULL);
    assert_true(f.call.result.instance_usable);
    assert_false(f.call.result.update_repeatable);
    fake_call_clear(&f);
}

/* No stderr: the exit status; the failed program's result may say the instance is gone. */
static void test_fail_silent(void **state)
{
    (void)state;
    struct fake_call f;
    run_failing(&f, OSBQ_JOB_DEPROVISION, "fail-silent", "The program exited with status 7.");
    assert_false(f.call.result.instance_usable);
    fake_call_clear(&f);
}

static void test_signal(void **state)
{
    (void)state;
    struct fake_call f;
    run_failing(&f, OSBQ_JOB_UNBIND, "signal", "The program was killed by signal 9.");
    fake_call_clear(&f);
}

static void test_timeout(void **state)
{
    (void)state;
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_PROVISION, "sleep");
    int64_t start = osbq_clock_ms();
    assert_int_equal(run_exec(&f), 0);
    int64_t took = osbq_clock_ms() - start;
    assert_false(f.call.result.succeeded);
    assert_string_equal(f.call.result.description, "The program did not finish within 300 ms.");
    assert_true(took >= 300);
    assert_true(took < 2000); /* the shell and its sleep die on SIGTERM: no grace needed */
    assert_string_equal(f.reports[0], "Sleeping (10%)");
    fake_call_clear(&f);
}

static long max_rss_kb(void)
{
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
    return ru.ru_maxrss;
}

/* Megabytes of output on both pipes: read to the end, nothing kept but bounded buffers, and
 * the result after the flood still counts. */
static void test_flood(void **state)
{
    (void)state;
    long before = max_rss_kb();
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_BIND, "flood");
    int64_t start = osbq_clock_ms();
    assert_int_equal(run_exec(&f), 0);
    assert_true(osbq_clock_ms() - start < 20000);
    assert_true(f.call.result.succeeded);
    json_t *credentials = credentials_of(&f);
    assert_true(json_is_true(json_object_get(credentials, "flooded")));
    json_decref(credentials);
    fake_call_clear(&f);
    /* 11 MB went through; the backend keeps about 200 KB. */
    assert_true(max_rss_kb() - before < 4096);

    run_failing(&f, OSBQ_JOB_BIND, "flood-result", NULL);
    assert_null(f.call.result.binding);
    assert_non_null(strstr(f.call.result.description, "is longer than 65536 bytes"));
    fake_call_clear(&f);
}

static void test_bad_json(void **state)
{
    (void)state;
    struct fake_call f;
    run_failing(&f, OSBQ_JOB_BIND, "bad-json",
                "The program's result (its last stdout line starting with '{') is not a "
                "valid JSON object.");
    assert_null(f.call.result.binding);
    /* Never the program's output in a description. */
    assert_null(strstr(f.call.result.description, "hunter2"));
    fake_call_clear(&f);
}

/* The plan's env is added (overriding the worker's), the worker's OSBQ_* settings are not
 * passed, the rest of its environment is. */
static void test_env(void **state)
{
    (void)state;
    assert_int_equal(setenv("OSBQ_BROKER_PASSWORD", "secret1", 1), 0);
    assert_int_equal(setenv("OSBQ_REDIS_URL", "redis://secret2", 1), 0);
    assert_int_equal(setenv("OSBQ_SECRET_KEY", "secret3", 1), 0);
    assert_int_equal(setenv("OSBQ_ANYTHING", "secret4", 1), 0);
    assert_int_equal(setenv("OVERRIDE", "old", 1), 0);
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_BIND, "env");
    assert_int_equal(run_exec(&f), 0);
    assert_true(f.call.result.succeeded);
    json_t *credentials = credentials_of(&f);
    assert_string_equal(json_string_value(json_object_get(credentials, "extra")), "from plan");
    assert_string_equal(json_string_value(json_object_get(credentials, "override")), "new");
    assert_string_equal(json_string_value(json_object_get(credentials, "osbq")), "");
    assert_true(json_is_true(json_object_get(credentials, "path_set")));
    json_decref(credentials);
    fake_call_clear(&f);
    unsetenv("OSBQ_BROKER_PASSWORD");
    unsetenv("OSBQ_REDIS_URL");
    unsetenv("OSBQ_SECRET_KEY");
    unsetenv("OSBQ_ANYTHING");
    unsetenv("OVERRIDE");
}

/* group.sh's progress: once it reported its pids, the call is cancelled and the worker exiting. */
static void exit_on_pids(struct fake_call *f, const char *description)
{
    long pids[2];
    if (sscanf(description, "pids %ld %ld (10%%)", &pids[0], &pids[1]) == 2) {
        atomic_store(&f->exiting, true);
        atomic_store(&f->cancel, true);
    }
}

/* A cancelled call kills the program's whole group (its grandchild too, even though both
 * ignore SIGTERM, as the worker is exiting) and returns -1 without an outcome. */
static void test_cancel_kills_group(void **state)
{
    (void)state;
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_PROVISION, "group");
    f.on_progress = exit_on_pids;
    int64_t start = osbq_clock_ms();
    assert_int_equal(run_exec(&f), -1);
    assert_true(osbq_clock_ms() - start < 1500); /* exiting: SIGKILL at once, no grace */
    long pids[2] = {0, 0};
    for (int i = 0; i < f.report_count && i < FAKE_CALL_REPORTS; i++)
        (void)sscanf(f.reports[i], "pids %ld %ld (10%%)", &pids[0], &pids[1]);
    assert_true(pids[0] > 0 && pids[1] > 0);
    assert_null(f.call.result.description);
    /* The program is reaped by the backend; the grandchild is reparented, so allow its new
     * parent a moment. */
    assert_true(process_gone(pids[0]));
    for (int i = 0; i < 100 && !process_gone(pids[1]); i++)
        osbq_clock_sleep_ms(10);
    assert_true(process_gone(pids[1]));
    assert_int_equal(kill((pid_t)pids[0], 0) < 0 ? errno : 0, ESRCH); /* reaped, no zombie */
    fake_call_clear(&f);

    /* Cancelled before it starts: nothing runs. */
    fake_init(&f, OSBQ_JOB_PROVISION, "success");
    atomic_store(&f.cancel, true);
    assert_int_equal(run_exec(&f), -1);
    assert_int_equal(f.report_count, 0);
    fake_call_clear(&f);
}

/* A job far larger than a pipe's buffer to a program that never reads it. */
static void test_ignored_stdin(void **state)
{
    (void)state;
    struct fake_call f;
    fake_init(&f, OSBQ_JOB_PROVISION, "ignore-stdin");
    size_t len = 4u * 1024u * 1024u;
    char *big = malloc(len + 1);
    assert_non_null(big);
    memset(big, 'a', len);
    big[len] = '\0';
    f.parameters = json_pack("{s:s}", "big", big);
    free(big);
    f.call.parameters = f.parameters;
    assert_int_equal(run_exec(&f), 0);
    assert_true(f.call.result.succeeded);
    fake_call_clear(&f);
}

static void test_missing_program(void **state)
{
    (void)state;
    struct fake_call f;
    run_failing(&f, OSBQ_JOB_BIND, "missing", "The broker could not start the service's program.");
    fake_call_clear(&f);
}

/* Runs one step of the poll program: the first (resume NULL) or the poll after a step that
 * saved resume (JSON text), with parameters (JSON text, or NULL). */
static int run_poll_step(struct fake_call *f, enum osbq_job_kind kind, const char *resume,
                         uint32_t step, const char *parameters)
{
    fake_init(f, kind, "poll");
    json_t *saved = resume != NULL ? json_loads(resume, 0, NULL) : NULL;
    f->call.resume = saved;
    f->call.step = step;
    if (parameters != NULL) {
        f->parameters = json_loads(parameters, 0, NULL);
        assert_non_null(f->parameters);
        f->call.parameters = f->parameters;
    }
    int rc = run_exec(f);
    json_decref(saved);
    f->call.resume = NULL;
    return rc;
}

/* A poll-style program: in progress with its resume state, in progress again from a poll (which
 * gets kind "poll", "of", "step" and the state back), then ended; each step a new program. */
static void test_poll_steps(void **state)
{
    (void)state;
    struct fake_call f;
    assert_int_equal(run_poll_step(&f, OSBQ_JOB_PROVISION, NULL, 0, NULL), 0);
    assert_true(f.call.result.in_progress);
    assert_false(f.call.result.succeeded);
    assert_int_equal(f.call.result.poll_after_ms, 200);
    assert_string_equal(f.call.result.description, "Started (1 of 3)");
    assert_string_equal(f.call.result.resume, "{\"n\":1,\"of\":\"provision\"}");
    assert_int_equal(f.report_count, 1);
    fake_call_clear(&f);

    assert_int_equal(
        run_poll_step(&f, OSBQ_JOB_PROVISION, "{\"n\": 1, \"of\": \"provision\"}", 1, NULL), 0);
    assert_true(f.call.result.in_progress);
    assert_string_equal(f.call.result.description, "Working (2 of 3)");
    assert_string_equal(f.call.result.resume, "{\"n\":2,\"of\":\"provision\"}");
    fake_call_clear(&f);

    assert_int_equal(
        run_poll_step(&f, OSBQ_JOB_PROVISION, "{\"n\": 2, \"of\": \"provision\"}", 2, NULL), 0);
    assert_false(f.call.result.in_progress);
    assert_true(f.call.result.succeeded);
    assert_string_equal(f.call.result.description, "Ready after 2 polls");
    assert_string_equal(f.call.result.dashboard_url, "https://dash.example/inst-1");
    assert_null(f.call.result.resume);
    fake_call_clear(&f);
}

/* A poll that fails ends the operation failed, with its stderr. */
static void test_poll_fails(void **state)
{
    (void)state;
    struct fake_call f;
    assert_int_equal(run_poll_step(&f, OSBQ_JOB_UPDATE, "{\"n\": 1, \"of\": \"update\"}", 1,
                                   "{\"mode\": \"fail_poll\"}"),
                     0);
    assert_false(f.call.result.in_progress);
    assert_false(f.call.result.succeeded);
    assert_string_equal(f.call.result.description, "poll failed: the job broke");
    fake_call_clear(&f);
}

/* In-progress lines that break the protocol fail the operation, saying how. */
static void test_poll_invalid_lines(void **state)
{
    (void)state;
    /* given: the step's parameters; want: the operation's description. */
    static const struct string_case cases[] = {
        {"{\"mode\": \"huge_resume\"}",
         "The program's resume state is 5010 bytes, over the limit of 4096."},
        {"{\"mode\": \"no_after\"}", "The program answered in progress without a valid "
                                     "poll_after_s (a number of seconds, 0 or more)."},
        {"{\"after\": -1}", "The program answered in progress without a valid poll_after_s (a "
                            "number of seconds, 0 or more)."},
        {"{\"after\": \"soon\"}", "The program answered in progress without a valid "
                                  "poll_after_s (a number of seconds, 0 or more)."},
        {"{\"mode\": \"bad_resume\"}",
         "The program answered in progress with a resume that is not an object."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fake_call f;
        assert_int_equal(run_poll_step(&f, OSBQ_JOB_BIND, NULL, 0, cases[i].given), 0);
        assert_false(f.call.result.in_progress);
        assert_false(f.call.result.succeeded);
        assert_string_equal(f.call.result.description, cases[i].want);
        fake_call_clear(&f);
    }
}

#define PARALLEL 4

/* The parallel runs, and when each started and ended (ms), to see them overlap. */
static struct fake_call parallel_fakes[PARALLEL];
static int64_t run_started[PARALLEL], run_ended[PARALLEL];

static void *run_thread(void *arg)
{
    struct fake_call *f = arg;
    size_t i = (size_t)(f - parallel_fakes);
    run_started[i] = osbq_clock_ms();
    (void)run_exec(f);
    run_ended[i] = osbq_clock_ms();
    return NULL;
}

/* Programs run at once on different threads: four 200 ms programs overlap (every run started
 * before any ended), which holds however slow a loaded machine makes each of them. */
static void test_parallel(void **state)
{
    (void)state;
    struct fake_call *f = parallel_fakes;
    pthread_t threads[PARALLEL];
    for (int i = 0; i < PARALLEL; i++) {
        fake_init(&f[i], OSBQ_JOB_PROVISION, "ignore-stdin");
        assert_int_equal(pthread_create(&threads[i], NULL, run_thread, &f[i]), 0);
    }
    int64_t last_start = 0, first_end = INT64_MAX;
    for (int i = 0; i < PARALLEL; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_true(f[i].call.result.succeeded);
        fake_call_clear(&f[i]);
        last_start = run_started[i] > last_start ? run_started[i] : last_start;
        first_end = run_ended[i] < first_end ? run_ended[i] : first_end;
    }
    assert_true(last_start < first_end);
}

OSBQ_TEST_MAIN(setup, teardown, cmocka_unit_test(test_find), cmocka_unit_test(test_bind_success),
               cmocka_unit_test(test_provision_success), cmocka_unit_test(test_trace),
               cmocka_unit_test(test_stdin_fields), cmocka_unit_test(test_stdin_halted_operation),
               cmocka_unit_test(test_fail_stderr), cmocka_unit_test(test_fail_silent),
               cmocka_unit_test(test_signal), cmocka_unit_test(test_timeout),
               cmocka_unit_test(test_flood), cmocka_unit_test(test_bad_json),
               cmocka_unit_test(test_env), cmocka_unit_test(test_cancel_kills_group),
               cmocka_unit_test(test_ignored_stdin), cmocka_unit_test(test_missing_program),
               cmocka_unit_test(test_parallel), cmocka_unit_test(test_poll_steps),
               cmocka_unit_test(test_poll_fails), cmocka_unit_test(test_poll_invalid_lines))
