/* Tests of the redis backend against a real redis-server (the "target"): provision checks,
 * bound users confined to their instance's keys and channels, unbind, deprovision in batches
 * with progress and cancellation, reruns of every operation, and configuration failures. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backend.h"
#include "catalog.h"
#include "catalog_text.h"
#include "config.h"
#include "fake_call.h"
#include "job.h"
#include "redis_fixture.h"
#include "test_main.h"

#define PLAN       "plan-redis"
#define RO_PLAN    "plan-redis-ro"  /* acl "+@read" */
#define ENV_PLAN   "plan-redis-env" /* target_url_env OSBQ_TEST_OTHER_TARGET */
#define BAD_PLAN   "plan-redis-bad" /* acl with a key pattern: refused */
#define URL_ENV    "OSBQ_REDIS_TARGET_URL"
#define OTHER_ENV  "OSBQ_TEST_OTHER_TARGET"
#define ADMIN_USER "admin"
#define ADMIN_PASS "admin-secret"
/* "osbq-" + 32 hex + "-": what every user name of one instance starts with. */
#define USER_PREFIX_LEN 38

static const char catalog_text[] =
    "{\"services\": [{\"name\": \"redis\", \"id\": \"svc-redis\", \"description\": \"d\","
    " \"bindable\": true, \"plans\": ["
    "  {\"id\": \"" PLAN "\", \"name\": \"shared\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"redis\"}},"
    "  {\"id\": \"" RO_PLAN "\", \"name\": \"ro\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"redis\", \"acl\": \"+@read\"}},"
    "  {\"id\": \"" ENV_PLAN "\", \"name\": \"env\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"redis\", \"target_url_env\": \"" OTHER_ENV "\"}},"
    "  {\"id\": \"" BAD_PLAN "\", \"name\": \"bad\", \"description\": \"d\","
    "   \"osbq\": {\"backend\": \"redis\", \"acl\": \"+@all ~*\"}}"
    "]}]}";

static struct osbq_catalog *catalog;
static struct redis_fixture target;
static char target_url[128];

/* Prepares f for kind on plan_id, for instance_id and binding_id (NULL: none). */
static void fake_init(struct fake_call *f, enum osbq_job_kind kind, const char *plan_id,
                      const char *instance_id, const char *binding_id)
{
    fake_call_init(f, kind, osbq_catalog_plan(catalog, plan_id), NULL);
    f->job.instance_id = instance_id;
    f->job.binding_id = binding_id;
}

/* Runs kind on the redis backend; f keeps the outcome until fake_clear. */
static int run(struct fake_call *f, enum osbq_job_kind kind, const char *plan_id,
               const char *instance_id, const char *binding_id)
{
    fake_init(f, kind, plan_id, instance_id, binding_id);
    return backend_run(backend_find("redis"), &f->call);
}

/* Runs kind and asserts it succeeded with description done. */
static void run_ok(enum osbq_job_kind kind, const char *plan_id, const char *instance_id,
                   const char *binding_id, const char *done)
{
    struct fake_call f;
    assert_int_equal(run(&f, kind, plan_id, instance_id, binding_id), 0);
    if (!f.call.result.succeeded)
        fail_msg("%s failed: %s", done, f.call.result.description);
    assert_string_equal(f.call.result.description, done);
    fake_call_clear(&f);
}

/* Runs kind and asserts it failed with description (and instance_usable as given). */
static void run_fails(enum osbq_job_kind kind, const char *plan_id, const char *instance_id,
                      const char *binding_id, const char *description, bool usable)
{
    struct fake_call f;
    assert_int_equal(run(&f, kind, plan_id, instance_id, binding_id), 0);
    assert_false(f.call.result.succeeded);
    assert_string_equal(f.call.result.description, description);
    assert_int_equal(f.call.result.instance_usable, usable);
    assert_null(f.call.result.binding);
    fake_call_clear(&f);
}

/* ---- the target server ---- */

static redisContext *connect_target(void)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", target.port, tv);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    return c;
}

/* Sends argv (a NULL-ended list) and returns the reply; NULL when the connection broke. */
static redisReply *cmd(redisContext *c, const char *const *argv)
{
    int argc = 0;
    while (argv[argc] != NULL)
        argc++;
    return redisCommandArgv(c, argc, (const char **)(uintptr_t)argv, NULL);
}

/* Asserts argv answers without error (and, when want is not NULL, the string want). */
static void expect_ok(redisContext *c, const char *const *argv, const char *want)
{
    redisReply *r = cmd(c, argv);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", argv[0], r->str);
    if (want != NULL) {
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        assert_string_equal(r->str, want);
    }
    freeReplyObject(r);
}

/* Asserts argv is refused with an error starting with prefix. */
static void expect_error(redisContext *c, const char *const *argv, const char *prefix)
{
    redisReply *r = cmd(c, argv);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_ERROR || strncmp(r->str, prefix, strlen(prefix)) != 0)
        fail_msg("%s %s: expected %s..., got type %d %s", argv[0], argv[1] ? argv[1] : "", prefix,
                 r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
    freeReplyObject(r);
}

/* A connection logged in as user with password; NULL when the login is refused. */
static redisContext *login(const char *user, const char *password)
{
    redisContext *c = connect_target();
    redisReply *r = redisCommand(c, "AUTH %s %s", user, password);
    assert_non_null(r);
    bool ok = r->type != REDIS_REPLY_ERROR;
    if (!ok)
        assert_string_equal(r->str,
                            "WRONGPASS invalid username-password pair or user is disabled.");
    freeReplyObject(r);
    if (!ok) {
        redisFree(c);
        return NULL;
    }
    return c;
}

static redisContext *admin(void)
{
    redisContext *c = login(ADMIN_USER, ADMIN_PASS);
    assert_non_null(c);
    return c;
}

/* Keys matching pattern in database db, counted with KEYS (the test's own server). */
static size_t count_keys(int db, const char *pattern)
{
    redisContext *c = admin();
    redisReply *r = redisCommand(c, "SELECT %d", db);
    freeReplyObject(r);
    r = redisCommand(c, "KEYS %s", pattern);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    size_t n = r->elements;
    freeReplyObject(r);
    redisFree(c);
    return n;
}

/* Users whose names start with the first USER_PREFIX_LEN characters of username. */
static size_t count_users_like(const char *username)
{
    redisContext *c = admin();
    redisReply *r = redisCommand(c, "ACL USERS");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    size_t n = 0;
    for (size_t i = 0; i < r->elements; i++)
        if (strncmp(r->element[i]->str, username, USER_PREFIX_LEN) == 0)
            n++;
    freeReplyObject(r);
    redisFree(c);
    return n;
}

/* True when c's session still answers PING (a killed client reads EOF). */
static bool alive(redisContext *c)
{
    redisReply *r = redisCommand(c, "PING");
    bool ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    return ok;
}

/* ---- bindings ---- */

struct creds {
    char username[128];
    char password[128];
    char uri[512];
    char key_prefix[128];
};

/* Binds binding_id of instance_id on plan_id and returns its credentials, checking the shape
 * of the binding on the way. */
static void bind_creds(const char *plan_id, const char *instance_id, const char *binding_id,
                       struct creds *out)
{
    struct fake_call f;
    assert_int_equal(run(&f, OSBQ_JOB_BIND, plan_id, instance_id, binding_id), 0);
    if (!f.call.result.succeeded)
        fail_msg("bind failed: %s", f.call.result.description);
    assert_string_equal(f.call.result.description, "Bound.");
    json_t *b = json_loads(f.call.result.binding, 0, NULL);
    assert_non_null(b);
    char port[8];
    (void)snprintf(port, sizeof port, "%d", target.port);
    const char *host = NULL, *user = NULL, *password = NULL, *uri = NULL, *prefix = NULL;
    const char *ep_host = NULL, *ep_port = NULL, *protocol = NULL;
    json_int_t port_number = 0;
    json_error_t err;
    if (json_unpack_ex(b, &err, JSON_STRICT,
                       "{s:{s:s, s:I, s:s, s:s, s:s, s:s}, s:[{s:s, s:[s], s:s}]}", "credentials",
                       "host", &host, "port", &port_number, "username", &user, "password",
                       &password, "uri", &uri, "key_prefix", &prefix, "endpoints", "host", &ep_host,
                       "ports", &ep_port, "protocol", &protocol) != 0)
        fail_msg("binding: %s", err.text);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port_number, target.port);
    assert_string_equal(ep_host, "127.0.0.1");
    assert_string_equal(ep_port, port);
    assert_string_equal(protocol, "tcp");
    assert_int_equal(strncmp(user, "osbq-", 5), 0);
    assert_true(strlen(password) >= 24);
    assert_int_equal(strncmp(prefix, "osbq:", 5), 0);
    assert_int_equal(prefix[strlen(prefix) - 1], ':');
    char want_uri[512];
    (void)snprintf(want_uri, sizeof want_uri, "redis://%s:%s@127.0.0.1:%d", user, password,
                   target.port);
    assert_string_equal(uri, want_uri);
    /* The URI is one osbq's own parser (and so redis-cli -u) reads back. */
    struct osbq_redis_addr addr = {0};
    struct osbq_error perr = {0};
    assert_int_equal(osbq_redis_addr_parse(uri, &addr, &perr), 0);
    assert_string_equal(addr.username, user);
    assert_string_equal(addr.password, password);
    osbq_redis_addr_clear(&addr);
    (void)snprintf(out->username, sizeof out->username, "%s", user);
    (void)snprintf(out->password, sizeof out->password, "%s", password);
    (void)snprintf(out->uri, sizeof out->uri, "%s", uri);
    (void)snprintf(out->key_prefix, sizeof out->key_prefix, "%s", prefix);
    json_decref(b);
    fake_call_clear(&f);
}

/* "<key_prefix><suffix>" */
static const char *key(const struct creds *c, const char *suffix, char *buf, size_t size)
{
    (void)snprintf(buf, size, "%s%s", c->key_prefix, suffix);
    return buf;
}

/* ---- setup ---- */

static int setup(void **state)
{
    (void)state;
    catalog = catalog_from_text(catalog_text, sizeof catalog_text - 1);
    if (catalog == NULL)
        return -1;
    if (redis_fixture_start(&target) < 0) {
        print_error("cannot start %s\n", redis_fixture_server());
        return -1;
    }
    /* The target as an operator would set it up: an administrator with a password, and no
     * anonymous access. */
    redisContext *c = connect_target();
    redisReply *r = redisCommand(c, "ACL SETUSER " ADMIN_USER " on >" ADMIN_PASS " ~* &* +@all");
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    r = redisCommand(c, "ACL SETUSER default off");
    ok = ok && r != NULL && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    redisFree(c);
    if (!ok)
        return -1;
    (void)snprintf(target_url, sizeof target_url,
                   "redis://" ADMIN_USER ":" ADMIN_PASS "@127.0.0.1:%d", target.port);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    redis_fixture_stop(&target);
    osbq_catalog_destroy(&catalog);
    return 0;
}

/* Each test starts with the target URL set, the other variable unset. */
static int each(void **state)
{
    (void)state;
    unsetenv(OTHER_ENV);
    return setenv(URL_ENV, target_url, 1);
}

/* ---- tests ---- */

static void test_find(void **state)
{
    (void)state;
    (void)fake_call_backend("redis");
}

static void test_env_missing(void **state)
{
    (void)state;
    unsetenv(URL_ENV);
    run_fails(OSBQ_JOB_PROVISION, PLAN, "inst-env", NULL,
              "OSBQ_REDIS_TARGET_URL is not set on the worker.", false);
    run_fails(OSBQ_JOB_BIND, PLAN, "inst-env", "b",
              "OSBQ_REDIS_TARGET_URL is not set on the worker.", true);
    run_fails(OSBQ_JOB_UNBIND, PLAN, "inst-env", "b",
              "OSBQ_REDIS_TARGET_URL is not set on the worker.", true);
    run_fails(OSBQ_JOB_DEPROVISION, PLAN, "inst-env", NULL,
              "OSBQ_REDIS_TARGET_URL is not set on the worker.", true);
    /* An empty value is as good as none. */
    setenv(URL_ENV, "", 1);
    run_fails(OSBQ_JOB_PROVISION, PLAN, "inst-env", NULL,
              "OSBQ_REDIS_TARGET_URL is not set on the worker.", false);
}

/* target_url_env names the variable; the default one is not looked at then. */
static void test_env_setting(void **state)
{
    (void)state;
    run_fails(OSBQ_JOB_PROVISION, ENV_PLAN, "inst-env", NULL,
              "OSBQ_TEST_OTHER_TARGET is not set on the worker.", false);
    setenv(OTHER_ENV, target_url, 1);
    unsetenv(URL_ENV);
    run_ok(OSBQ_JOB_PROVISION, ENV_PLAN, "inst-env", NULL, "Provisioned.");
}

static void test_bad_targets(void **state)
{
    (void)state;
    char url[160];
    (void)snprintf(url, sizeof url, "redis://" ADMIN_USER ":" ADMIN_PASS "@127.0.0.1:%d",
                   redis_fixture_free_port());
    setenv(URL_ENV, url, 1);
    run_fails(OSBQ_JOB_PROVISION, PLAN, "inst-bad", NULL,
              "The plan's Redis server is not reachable.", false);
    run_fails(OSBQ_JOB_BIND, PLAN, "inst-bad", "b", "The plan's Redis server is not reachable.",
              true);

    (void)snprintf(url, sizeof url, "redis://" ADMIN_USER ":wrong@127.0.0.1:%d", target.port);
    setenv(URL_ENV, url, 1);
    run_fails(OSBQ_JOB_PROVISION, PLAN, "inst-bad", NULL,
              "The broker could not log in to the plan's Redis server.", false);

    setenv(URL_ENV, "http://admin:secret@127.0.0.1:1", 1);
    run_fails(OSBQ_JOB_PROVISION, PLAN, "inst-bad", NULL,
              "OSBQ_REDIS_TARGET_URL on the worker is not a valid redis:// URL.", false);

    /* An administrator who may not manage users: provision says what is missing. */
    redisContext *c = admin();
    const char *const weak[] = {"ACL", "SETUSER", "weak",    "on", ">weak-secret",
                                "~*",  "+@all",   "-@admin", NULL};
    expect_ok(c, weak, NULL);
    (void)snprintf(url, sizeof url, "redis://weak:weak-secret@127.0.0.1:%d", target.port);
    setenv(URL_ENV, url, 1);
    run_fails(OSBQ_JOB_PROVISION, PLAN, "inst-bad", NULL,
              "The plan's Redis server cannot manage users for the broker: it needs Redis 6 or "
              "later, and an administrator allowed to run ACL commands.",
              false);
    const char *const del[] = {"ACL", "DELUSER", "weak", NULL};
    expect_ok(c, del, NULL);
    redisFree(c);
}

static void test_bad_acl(void **state)
{
    (void)state;
    static const char text[] = "The plan's acl setting may only hold command rules (+@read, "
                               "-@admin, +get, allcommands, ...).";
    run_fails(OSBQ_JOB_PROVISION, BAD_PLAN, "inst-acl", NULL, text, false);
    run_fails(OSBQ_JOB_BIND, BAD_PLAN, "inst-acl", "b", text, true);
    /* No user was made: only the test's administrator and the (disabled) default user. */
    redisContext *c = admin();
    redisReply *r = redisCommand(c, "ACL USERS");
    assert_non_null(r);
    assert_int_equal(r->elements, 2);
    freeReplyObject(r);
    redisFree(c);
}

/* Provision and update create nothing, however often they run. */
static void test_provision_update(void **state)
{
    (void)state;
    run_ok(OSBQ_JOB_PROVISION, PLAN, "inst-p", NULL, "Provisioned.");
    run_ok(OSBQ_JOB_PROVISION, PLAN, "inst-p", NULL, "Provisioned.");
    run_ok(OSBQ_JOB_UPDATE, PLAN, "inst-p", NULL, "Updated.");
    run_ok(OSBQ_JOB_UPDATE, PLAN, "inst-p", NULL, "Updated.");
    assert_int_equal(count_keys(0, "osbq:*"), 0);
}

static void test_bind_confined(void **state)
{
    (void)state;
    struct creds a, b;
    char k[256], other[256];
    run_ok(OSBQ_JOB_PROVISION, PLAN, "inst-a", NULL, "Provisioned.");
    run_ok(OSBQ_JOB_PROVISION, PLAN, "inst-b", NULL, "Provisioned.");
    bind_creds(PLAN, "inst-a", "bind-a", &a);
    bind_creds(PLAN, "inst-b", "bind-b", &b);
    assert_string_not_equal(a.key_prefix, b.key_prefix);
    assert_string_not_equal(a.username, b.username);

    redisContext *c = login(a.username, a.password);
    assert_non_null(c);
    const char *const set[] = {"SET", key(&a, "greeting", k, sizeof k), "hello", NULL};
    expect_ok(c, set, NULL);
    const char *const get[] = {"GET", k, NULL};
    expect_ok(c, get, "hello");
    const char *const publish[] = {"PUBLISH", key(&a, "news", other, sizeof other), "x", NULL};
    expect_ok(c, publish, NULL);

    /* Another instance's keys and channels, keys outside any prefix, admin commands. */
    const char *const set_b[] = {"SET", key(&b, "greeting", other, sizeof other), "x", NULL};
    expect_error(c, set_b, "NOPERM");
    const char *const get_b[] = {"GET", other, NULL};
    expect_error(c, get_b, "NOPERM");
    const char *const set_bare[] = {"SET", "greeting", "x", NULL};
    expect_error(c, set_bare, "NOPERM");
    const char *const publish_b[] = {"PUBLISH", key(&b, "news", other, sizeof other), "x", NULL};
    expect_error(c, publish_b, "NOPERM");
    const char *const config[] = {"CONFIG", "GET", "maxmemory", NULL};
    expect_error(c, config, "NOPERM");
    const char *const flushall[] = {"FLUSHALL", NULL};
    expect_error(c, flushall, "NOPERM");
    const char *const keys[] = {"KEYS", "*", NULL};
    expect_error(c, keys, "NOPERM");
    const char *const setuser[] = {"ACL", "SETUSER", a.username, "~*", NULL};
    expect_error(c, setuser, "NOPERM");
    redisFree(c);

    /* The other binding sees its own key space only, empty so far. */
    c = login(b.username, b.password);
    assert_non_null(c);
    const char *const get_a[] = {"GET", k, NULL};
    expect_error(c, get_a, "NOPERM");
    redisFree(c);
}

static void test_bind_read_only(void **state)
{
    (void)state;
    struct creds ro;
    char k[256];
    bind_creds(RO_PLAN, "inst-ro", "bind-ro", &ro);
    redisContext *a = admin();
    const char *const seed[] = {"SET", key(&ro, "k", k, sizeof k), "v", NULL};
    expect_ok(a, seed, NULL);
    redisFree(a);
    redisContext *c = login(ro.username, ro.password);
    assert_non_null(c);
    const char *const get[] = {"GET", k, NULL};
    expect_ok(c, get, "v");
    const char *const set[] = {"SET", k, "w", NULL};
    expect_error(c, set, "NOPERM");
    redisFree(c);
}

/* A rerun of a bind leaves exactly one live set: the same user with only the new password,
 * and sessions of the old one disconnected. */
static void test_bind_rerun(void **state)
{
    (void)state;
    struct creds first, second;
    bind_creds(PLAN, "inst-r", "bind-r", &first);
    redisContext *old_session = login(first.username, first.password);
    assert_non_null(old_session);
    bind_creds(PLAN, "inst-r", "bind-r", &second);
    assert_string_equal(first.username, second.username);
    assert_string_equal(first.key_prefix, second.key_prefix);
    assert_string_not_equal(first.password, second.password);
    assert_null(login(first.username, first.password));
    redisContext *c = login(second.username, second.password);
    assert_non_null(c);
    assert_true(alive(c));
    assert_false(alive(old_session));
    redisFree(c);
    redisFree(old_session);
    assert_int_equal(count_users_like(second.username), 1);
}

static void test_unbind(void **state)
{
    (void)state;
    struct creds u, keep;
    bind_creds(PLAN, "inst-u", "bind-u", &u);
    bind_creds(PLAN, "inst-u", "bind-keep", &keep);
    redisContext *session = login(u.username, u.password);
    assert_non_null(session);
    run_ok(OSBQ_JOB_UNBIND, PLAN, "inst-u", "bind-u", "Unbound.");
    assert_false(alive(session));
    redisFree(session);
    assert_null(login(u.username, u.password));
    /* The instance's other binding is untouched. */
    redisContext *c = login(keep.username, keep.password);
    assert_non_null(c);
    redisFree(c);
    /* Again, and a binding that never existed: nothing to do. */
    run_ok(OSBQ_JOB_UNBIND, PLAN, "inst-u", "bind-u", "Unbound.");
    run_ok(OSBQ_JOB_UNBIND, PLAN, "inst-u", "bind-never", "Unbound.");
    assert_int_equal(count_users_like(keep.username), 1);
}

/* Writes n keys "<prefix>k<i>" as the bound user c, pipelined. */
static void fill(redisContext *c, const struct creds *cr, int n)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(redisAppendCommand(c, "SET %sk%d v", cr->key_prefix, i), REDIS_OK);
    for (int i = 0; i < n; i++) {
        redisReply *r = NULL;
        assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
}

static void test_deprovision(void **state)
{
    (void)state;
    struct creds d1, d2, other;
    char pattern[256], other_pattern[256];
    run_ok(OSBQ_JOB_PROVISION, PLAN, "inst-d", NULL, "Provisioned.");
    bind_creds(PLAN, "inst-d", "bind-d1", &d1);
    bind_creds(PLAN, "inst-d", "bind-d2", &d2);
    bind_creds(PLAN, "inst-other", "bind-o", &other);
    (void)snprintf(pattern, sizeof pattern, "%s*", d1.key_prefix);
    (void)snprintf(other_pattern, sizeof other_pattern, "%s*", other.key_prefix);

    redisContext *c = login(d1.username, d1.password);
    assert_non_null(c);
    fill(c, &d1, 1200);
    /* ACLs do not keep a user in one database: deprovision cleans them all. */
    const char *const select3[] = {"SELECT", "3", NULL};
    expect_ok(c, select3, NULL);
    fill(c, &d1, 5);
    redisFree(c);
    c = login(other.username, other.password);
    assert_non_null(c);
    fill(c, &other, 10);
    redisFree(c);
    assert_int_equal(count_keys(0, pattern), 1200);
    assert_int_equal(count_keys(3, pattern), 5);

    struct fake_call f;
    assert_int_equal(run(&f, OSBQ_JOB_DEPROVISION, PLAN, "inst-d", NULL), 0);
    if (!f.call.result.succeeded)
        fail_msg("deprovision failed: %s", f.call.result.description);
    assert_string_equal(f.call.result.description, "Deprovisioned.");
    assert_string_equal(f.reports[0], "Deleting users");
    assert_true(f.report_count > 3); /* several batches */
    assert_string_equal(f.last_report, "Deleting keys (1205 deleted)");
    fake_call_clear(&f);

    assert_int_equal(count_keys(0, pattern), 0);
    assert_int_equal(count_keys(3, pattern), 0);
    assert_int_equal(count_users_like(d1.username), 0);
    assert_null(login(d2.username, d2.password));
    /* Another instance keeps its keys and its user. */
    assert_int_equal(count_keys(0, other_pattern), 10);
    assert_int_equal(count_users_like(other.username), 1);

    /* A rerun, and a deprovision of an instance that never had anything, find nothing. */
    assert_int_equal(run(&f, OSBQ_JOB_DEPROVISION, PLAN, "inst-d", NULL), 0);
    assert_true(f.call.result.succeeded);
    assert_string_equal(f.last_report, "Deleting keys (0 deleted)");
    fake_call_clear(&f);
    run_ok(OSBQ_JOB_DEPROVISION, PLAN, "inst-never", NULL, "Deprovisioned.");
}

/* Cancelled between batches: -1 and no outcome; the rerun finishes the job. */
static void test_deprovision_cancelled(void **state)
{
    (void)state;
    struct creds cr;
    char pattern[256];
    bind_creds(PLAN, "inst-c", "bind-c", &cr);
    (void)snprintf(pattern, sizeof pattern, "%s*", cr.key_prefix);
    redisContext *c = login(cr.username, cr.password);
    assert_non_null(c);
    fill(c, &cr, 3000);
    redisFree(c);

    struct fake_call f;
    fake_init(&f, OSBQ_JOB_DEPROVISION, PLAN, "inst-c", NULL);
    f.cancel_after = 2; /* "Deleting users", then the first batch */
    assert_int_equal(backend_run(backend_find("redis"), &f.call), -1);
    assert_int_equal(f.report_count, 2);
    assert_null(f.call.result.description);
    fake_call_clear(&f);
    size_t left = count_keys(0, pattern);
    assert_true(left > 0 && left < 3000);

    run_ok(OSBQ_JOB_DEPROVISION, PLAN, "inst-c", NULL, "Deprovisioned.");
    assert_int_equal(count_keys(0, pattern), 0);
}

OSBQ_TEST_MAIN(setup, teardown, cmocka_unit_test_setup(test_find, each),
               cmocka_unit_test_setup(test_env_missing, each),
               cmocka_unit_test_setup(test_env_setting, each),
               cmocka_unit_test_setup(test_bad_targets, each),
               cmocka_unit_test_setup(test_bad_acl, each),
               cmocka_unit_test_setup(test_provision_update, each),
               cmocka_unit_test_setup(test_bind_confined, each),
               cmocka_unit_test_setup(test_bind_read_only, each),
               cmocka_unit_test_setup(test_bind_rerun, each),
               cmocka_unit_test_setup(test_unbind, each),
               cmocka_unit_test_setup(test_deprovision, each),
               cmocka_unit_test_setup(test_deprovision_cancelled, each))
