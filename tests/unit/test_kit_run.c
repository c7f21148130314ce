/* The kit's judgement of a step (kit/kit_run.c): which failures are the worker refusing what
 * the program did, and when a step run twice does not converge. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "kit_run.h"
#include "test_main.h"

/* A waitpid status: exited with code, or killed by sig. */
#define EXITED(code) ((code) << 8)
#define KILLED(sig)  (sig)

static void test_verdict(void **state)
{
    (void)state;
    const struct osbq_op_result ok = {.succeeded = true};
    const struct osbq_op_result failed = {.succeeded = false};
    const struct osbq_op_result waiting = {.in_progress = true};
    const struct exec_watch_end exit0 = {.stop = EXEC_WATCH_EXITED, .status = EXITED(0)};
    const struct exec_watch_end exit1 = {.stop = EXEC_WATCH_EXITED, .status = EXITED(1)};
    const struct exec_watch_end killed = {.stop = EXEC_WATCH_EXITED, .status = KILLED(SIGKILL)};
    const struct exec_watch_end timeout = {.stop = EXEC_WATCH_TIMEOUT, .status = KILLED(SIGTERM)};
    const struct exec_watch_end lost = {.stop = EXEC_WATCH_EXITED, .lost = true};

    assert_int_equal(kit_verdict_of(0, &ok, &exit0), KIT_SUCCEEDED);
    assert_int_equal(kit_verdict_of(0, &waiting, &exit0), KIT_IN_PROGRESS);
    assert_int_equal(kit_verdict_of(-1, &failed, &exit0), KIT_CANCELLED);
    /* Exit 0, yet failed: an answer the worker refuses (a bad result line, resume, binding). */
    assert_int_equal(kit_verdict_of(0, &failed, &exit0), KIT_REFUSED);
    assert_int_equal(kit_verdict_of(0, &failed, &timeout), KIT_REFUSED);
    /* The program's own failures. */
    assert_int_equal(kit_verdict_of(0, &failed, &exit1), KIT_FAILED);
    assert_int_equal(kit_verdict_of(0, &failed, &killed), KIT_FAILED);
    assert_int_equal(kit_verdict_of(0, &failed, &lost), KIT_FAILED);
    assert_int_equal(kit_verdict_of(0, &failed, NULL), KIT_FAILED);
    assert_string_equal(kit_verdict_name(KIT_REFUSED), "REFUSED");
}

static struct kit_outcome outcome(enum kit_verdict verdict, const char *binding)
{
    struct kit_outcome o = {.verdict = verdict};
    (void)snprintf(o.description, sizeof o.description, "%s", kit_verdict_name(verdict));
    o.binding = binding != NULL ? strdup(binding) : NULL;
    return o;
}

static bool agrees(enum osbq_job_kind kind, enum kit_verdict a, const char *binding_a,
                   enum kit_verdict b, const char *binding_b, char *why, size_t size)
{
    struct kit_outcome first = outcome(a, binding_a), second = outcome(b, binding_b);
    why[0] = '\0';
    bool ok = kit_rerun_agrees(kind, &first, &second, why, size);
    kit_outcome_clear(&first);
    kit_outcome_clear(&second);
    return ok;
}

static void test_rerun(void **state)
{
    (void)state;
    char why[512];
    /* The same end twice. */
    assert_true(
        agrees(OSBQ_JOB_PROVISION, KIT_SUCCEEDED, NULL, KIT_SUCCEEDED, NULL, why, sizeof why));
    assert_true(agrees(OSBQ_JOB_UPDATE, KIT_FAILED, NULL, KIT_FAILED, NULL, why, sizeof why));
    /* In progress may move on, either way, but not to a refusal. */
    assert_true(
        agrees(OSBQ_JOB_PROVISION, KIT_IN_PROGRESS, NULL, KIT_SUCCEEDED, NULL, why, sizeof why));
    assert_true(
        agrees(OSBQ_JOB_PROVISION, KIT_IN_PROGRESS, NULL, KIT_FAILED, NULL, why, sizeof why));
    assert_false(
        agrees(OSBQ_JOB_PROVISION, KIT_IN_PROGRESS, NULL, KIT_REFUSED, NULL, why, sizeof why));
    assert_non_null(strstr(why, "refused"));
    /* An ended step that ends otherwise: not converging. */
    assert_false(
        agrees(OSBQ_JOB_PROVISION, KIT_SUCCEEDED, NULL, KIT_FAILED, NULL, why, sizeof why));
    assert_non_null(strstr(why, "succeeded the first time ended failed"));
    assert_false(
        agrees(OSBQ_JOB_DEPROVISION, KIT_SUCCEEDED, NULL, KIT_IN_PROGRESS, NULL, why, sizeof why));
    /* A bind: new values are fine (a new password), other fields are not. */
    assert_true(agrees(OSBQ_JOB_BIND, KIT_SUCCEEDED, "{\"credentials\": {\"u\": 1, \"p\": 2}}",
                       KIT_SUCCEEDED, "{\"credentials\": {\"p\": 3, \"u\": 1}}", why, sizeof why));
    assert_false(agrees(OSBQ_JOB_BIND, KIT_SUCCEEDED, "{\"credentials\": {\"u\": 1, \"p\": 2}}",
                        KIT_SUCCEEDED, "{\"credentials\": {\"u\": 1}}", why, sizeof why));
    assert_non_null(strstr(why, "credentials {u} instead of {p,u}"));
    assert_false(agrees(OSBQ_JOB_BIND, KIT_SUCCEEDED, "{\"credentials\": {}, \"endpoints\": []}",
                        KIT_SUCCEEDED, "{\"credentials\": {}}", why, sizeof why));
    assert_false(agrees(OSBQ_JOB_BIND, KIT_SUCCEEDED, "{\"credentials\": {}}", KIT_SUCCEEDED, NULL,
                        why, sizeof why));
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_verdict), cmocka_unit_test(test_rerun))
