/* The kit's command line (kit/kit_options.c): options in both spellings, operations, repeated
 * and checked values, and the JSON values options give inline or in a file. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job.h"
#include "kit_options.h"
#include "temp_file.h"
#include "test_main.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof(a)[0]))

static int parse(int argc, const char *const *argv, struct kit_options *o, char *err, size_t size)
{
    return kit_options_parse(argc, (char **)(void *)argv, o, err, size);
}

static void test_defaults(void **state)
{
    (void)state;
    const char *argv[] = {"osbq-exec-kit"};
    struct kit_options o;
    char err[256];
    assert_int_equal(parse(ARGC(argv), argv, &o, err, sizeof err), 0);
    assert_null(o.catalog);
    assert_int_equal(o.plan_count, 0);
    assert_int_equal(o.op_count, 0);
    assert_false(o.check);
    assert_false(o.quiet);
}

static void test_options_and_operations(void **state)
{
    (void)state;
    const char *argv[] = {"osbq-exec-kit",
                          "--catalog",
                          "c.json",
                          "--plan=small",
                          "--plan",
                          "svc/large",
                          "--params",
                          "{\"a\": 1}",
                          "--update-params={}",
                          "--bind-params",
                          "@b.json",
                          "--context",
                          "{\"platform\": \"cf\"}",
                          "--bind-resource={\"app_guid\": \"x\"}",
                          "--update-plan",
                          "large",
                          "--instance",
                          "i-1",
                          "--binding=b-1",
                          "--env",
                          "WORK_SECONDS=1",
                          "--env=EMPTY=",
                          "--check",
                          "--quiet",
                          "provision",
                          "fetch",
                          "--",
                          "deprovision"};
    struct kit_options o;
    char err[256];
    assert_int_equal(parse(ARGC(argv), argv, &o, err, sizeof err), 0);
    assert_string_equal(o.catalog, "c.json");
    assert_int_equal(o.plan_count, 2);
    assert_string_equal(o.plans[0], "small");
    assert_string_equal(o.plans[1], "svc/large");
    assert_string_equal(o.parameters, "{\"a\": 1}");
    assert_string_equal(o.update_parameters, "{}");
    assert_string_equal(o.bind_parameters, "@b.json");
    assert_string_equal(o.context, "{\"platform\": \"cf\"}");
    assert_string_equal(o.bind_resource, "{\"app_guid\": \"x\"}");
    assert_string_equal(o.update_plan, "large");
    assert_string_equal(o.instance_id, "i-1");
    assert_string_equal(o.binding_id, "b-1");
    assert_int_equal(o.env_count, 2);
    assert_string_equal(o.env[0], "WORK_SECONDS=1");
    assert_string_equal(o.env[1], "EMPTY=");
    assert_true(o.check);
    assert_true(o.quiet);
    assert_int_equal(o.op_count, 3);
    assert_int_equal(o.ops[0], KIT_OP_PROVISION);
    assert_int_equal(o.ops[1], KIT_OP_FETCH);
    assert_int_equal(o.ops[2], KIT_OP_DEPROVISION);
    assert_string_equal(kit_op_name(o.ops[2]), "deprovision");
}

/* kit_plan.c's run_listed finds an operation's job kind by its name: each operation but fetch is
 * named as its job kind. */
static void test_ops_named_as_job_kinds(void **state)
{
    (void)state;
    const struct {
        enum kit_op op;
        enum osbq_job_kind kind;
    } want[] = {{KIT_OP_PROVISION, OSBQ_JOB_PROVISION},
                {KIT_OP_UPDATE, OSBQ_JOB_UPDATE},
                {KIT_OP_BIND, OSBQ_JOB_BIND},
                {KIT_OP_UNBIND, OSBQ_JOB_UNBIND},
                {KIT_OP_DEPROVISION, OSBQ_JOB_DEPROVISION},
                {KIT_OP_FETCH, OSBQ_JOB_KIND_NONE}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_int_equal(osbq_job_kind_from_name(kit_op_name(want[i].op)), want[i].kind);
}

static void test_help_and_version(void **state)
{
    (void)state;
    const char *argv[] = {"osbq-exec-kit", "-h", "--version"};
    struct kit_options o;
    char err[256];
    assert_int_equal(parse(ARGC(argv), argv, &o, err, sizeof err), 0);
    assert_true(o.help);
    assert_true(o.version);
}

/* Each bad line is refused with a reason naming what is wrong. */
static void test_refused(void **state)
{
    (void)state;
    static const struct {
        const char *argv[4];
        int argc;
        const char *reason;
    } cases[] = {
        {{"k", "--frobnicate"}, 2, "unknown option --frobnicate"},
        {{"k", "--catalog"}, 2, "--catalog needs a value"},
        {{"k", "--catalog", ""}, 3, "--catalog needs a non-empty value"},
        {{"k", "--catalog", "a", "--catalog=b"}, 4, "--catalog given twice"},
        {{"k", "--check=yes"}, 2, "--check takes no value"},
        {{"k", "--env", "NOEQUALS"}, 3, "--env wants NAME=VALUE"},
        {{"k", "--env", "=x"}, 3, "--env wants NAME=VALUE"},
        {{"k", "--env", "1A=x"}, 3, "--env wants NAME=VALUE"},
        {{"k", "--env", "A-B=x"}, 3, "--env wants NAME=VALUE"},
        {{"k", "--plan", ""}, 3, "--plan needs a plan id or name"},
        {{"k", "provision", "poll"}, 3, "unknown operation poll"},
        {{"k", "--a-very-long-option-name-indeed=1"}, 2, "unknown option --a-very-long"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct kit_options o;
        char err[256] = "";
        assert_int_equal(parse(cases[i].argc, cases[i].argv, &o, err, sizeof err), -1);
        if (strstr(err, cases[i].reason) == NULL)
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err, cases[i].reason);
    }
}

static void test_too_many(void **state)
{
    (void)state;
    const char *argv[2 * KIT_ENV_MAX + 3];
    int argc = 0;
    argv[argc++] = "k";
    for (int i = 0; i <= KIT_ENV_MAX; i++) {
        argv[argc++] = "--env";
        argv[argc++] = "A=1";
    }
    struct kit_options o;
    char err[256];
    assert_int_equal(parse(argc, argv, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "more than"));
}

static void test_json_arg(void **state)
{
    (void)state;
    json_t *v = NULL;
    char err[256];
    assert_int_equal(kit_json_arg("--params", "{\"size\": 3}", &v, err, sizeof err), 0);
    assert_int_equal(json_integer_value(json_object_get(v, "size")), 3);
    json_decref(v);

    assert_int_equal(kit_json_arg("--params", "[1]", &v, err, sizeof err), -1);
    assert_string_equal(err, "--params: not a JSON object");
    assert_int_equal(kit_json_arg("--params", "{\"a\": ", &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "--params: not JSON"));
    assert_int_equal(kit_json_arg("--params", "{\"a\": 1, \"a\": 2}", &v, err, sizeof err), -1);

    static const char context[] = "{\"platform\": \"kubernetes\"}\n";
    char path[32];
    temp_file_write(context, sizeof context - 1, path, sizeof path);
    char arg[64];
    (void)snprintf(arg, sizeof arg, "@%s", path);
    assert_int_equal(kit_json_arg("--context", arg, &v, err, sizeof err), 0);
    assert_string_equal(json_string_value(json_object_get(v, "platform")), "kubernetes");
    json_decref(v);
    unlink(path);
    assert_int_equal(kit_json_arg("--context", arg, &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot read"));
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_defaults),
               cmocka_unit_test(test_options_and_operations),
               cmocka_unit_test(test_ops_named_as_job_kinds),
               cmocka_unit_test(test_help_and_version), cmocka_unit_test(test_refused),
               cmocka_unit_test(test_too_many), cmocka_unit_test(test_json_arg))
