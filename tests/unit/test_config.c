/* Unit tests for common/config.c, config_vars.c and config_values.c: every OSBQ_* variable's
 * default, good and bad values, roles, Redis URLs, *_FILE secrets, the bus advertise default and
 * --help, through a fake environment. */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "string_cases.h"
#include "temp_file.h"

#define ENV_MAX    24
#define SEEN_MAX   64
#define RENDER_MAX 512

/* 64 and 65 characters, the longest namespace allowed and one more. */
#define TEN_A          "aaaaaaaaaa"
#define NAMESPACE_64   TEN_A TEN_A TEN_A TEN_A TEN_A TEN_A "aaaa"
#define NAMESPACE_65   NAMESPACE_64 "a"
#define DEFAULT_SUFFIX "/examples/catalog.json"

/* A fake environment: name/value pairs, and a record of every name the loader asked for. */
struct fake_env {
    const char *names[ENV_MAX];
    const char *values[ENV_MAX];
    size_t count;
    char seen[SEEN_MAX][64];
    size_t seen_count;
};

/* Sets (or replaces) name; value NULL unsets it. Strings are borrowed. */
static void env_set(struct fake_env *env, const char *name, const char *value)
{
    for (size_t i = 0; i < env->count; i++) {
        if (strcmp(env->names[i], name) == 0) {
            env->values[i] = value;
            return;
        }
    }
    assert_true(env->count < ENV_MAX);
    env->names[env->count] = name;
    env->values[env->count] = value;
    env->count++;
}

static const char *fake_lookup(const char *name, void *ctx)
{
    struct fake_env *env = ctx;
    if (env->seen_count < SEEN_MAX) {
        (void)snprintf(env->seen[env->seen_count], sizeof env->seen[0], "%s", name);
        env->seen_count++;
    }
    for (size_t i = 0; i < env->count; i++)
        if (strcmp(env->names[i], name) == 0)
            return env->values[i];
    return NULL;
}

/* True when the loader asked for a name starting with prefix. */
static bool env_was_read(const struct fake_env *env, const char *prefix)
{
    for (size_t i = 0; i < env->seen_count; i++)
        if (strncmp(env->seen[i], prefix, strlen(prefix)) == 0)
            return true;
    return false;
}

/* An environment the gateway accepts: only the two required credentials. */
static void env_gateway(struct fake_env *env)
{
    memset(env, 0, sizeof *env);
    env_set(env, "OSBQ_BROKER_USERNAME", "admin");
    env_set(env, "OSBQ_BROKER_PASSWORD", "hunter2");
}

static bool is_zeroed(const struct osbq_config *cfg)
{
    static const struct osbq_config zero;
    return memcmp(cfg, &zero, sizeof zero) == 0;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const char *or_dash(const char *s)
{
    return s != NULL ? s : "-";
}

/* Loads role from env and expects success; fails the test with the error text otherwise. */
static void load_ok(struct fake_env *env, enum osbq_role role, struct osbq_config *cfg)
{
    struct osbq_error err = {0};
    memset(cfg, 0, sizeof *cfg);
    if (osbq_config_load(cfg, role, fake_lookup, env, &err) != 0)
        fail_msg("load failed: %s", err.text);
}

/* Loads role from env and expects failure with text starting "<prefix>: ", code INVALID and cfg
 * left zeroed; label names the case in failure messages. */
static void load_fails_case(struct fake_env *env, enum osbq_role role, const char *prefix,
                            struct osbq_error *err, const char *label)
{
    struct osbq_config cfg;
    char want[128];
    memset(&cfg, 0, sizeof cfg);
    memset(err, 0, sizeof *err);
    (void)snprintf(want, sizeof want, "%s: ", prefix);
    int rc = osbq_config_load(&cfg, role, fake_lookup, env, err);
    if (rc != -1) {
        osbq_config_clear(&cfg);
        fail_msg("%s: expected failure with \"%s\", got rc %d", label, want, rc);
    }
    if (!starts_with(err->text, want))
        fail_msg("%s: error \"%s\" does not start with \"%s\"", label, err->text, want);
    if (err->code != OSBQ_ERR_INVALID)
        fail_msg("%s: code %s, want INVALID", label, osbq_err_name(err->code));
    if (!is_zeroed(&cfg))
        fail_msg("%s: the config is not left zeroed", label);
}

static void load_fails(struct fake_env *env, enum osbq_role role, const char *prefix,
                       struct osbq_error *err)
{
    load_fails_case(env, role, prefix, err, prefix);
}

/* Renderers: each turns the field(s) one variable sets into a string to compare. Those of one
 * unsigned or string field (NULL as "-") differ only in the field, so a macro writes them. */
#define RENDER_UNSIGNED(name, field)                                                               \
    static void render_##name(const struct osbq_config *c, char *buf, size_t size)                 \
    {                                                                                              \
        (void)snprintf(buf, size, "%u", c->field);                                                 \
    }
#define RENDER_STRING(name, field)                                                                 \
    static void render_##name(const struct osbq_config *c, char *buf, size_t size)                 \
    {                                                                                              \
        (void)snprintf(buf, size, "%s", or_dash(c->field));                                        \
    }

RENDER_UNSIGNED(timeout, redis_timeout_ms)
RENDER_UNSIGNED(http_threads, http_threads)
RENDER_UNSIGNED(concurrency, worker_concurrency)
RENDER_UNSIGNED(exec_concurrency, worker_exec_concurrency)
RENDER_STRING(namespace, namespace_)
RENDER_STRING(catalog, catalog_path)
RENDER_STRING(username, broker_username)
RENDER_STRING(password, broker_password)
RENDER_STRING(bus_advertise, bus_advertise)

static void render_redis(const struct osbq_config *c, char *buf, size_t size)
{
    (void)snprintf(buf, size, "host=%s port=%u db=%u user=%s pass=%s", or_dash(c->redis.host),
                   (unsigned)c->redis.port, c->redis.db, or_dash(c->redis.username),
                   or_dash(c->redis.password));
}

static void render_log_level(const struct osbq_config *c, char *buf, size_t size)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    unsigned level = (unsigned)c->log_level;
    (void)snprintf(buf, size, "%s", level < 4 ? names[level] : "?");
}

static void render_listen(const struct osbq_config *c, char *buf, size_t size)
{
    (void)snprintf(buf, size, "host=%s port=%u", or_dash(c->listen.host), (unsigned)c->listen.port);
}

static void render_max_body(const struct osbq_config *c, char *buf, size_t size)
{
    (void)snprintf(buf, size, "%zu", c->max_body_bytes);
}

static void render_bus_bind(const struct osbq_config *c, char *buf, size_t size)
{
    (void)snprintf(buf, size, "%s port=%u", or_dash(c->bus_bind), (unsigned)c->bus_port);
}

static void render_acks(const struct osbq_config *c, char *buf, size_t size)
{
    (void)snprintf(buf, size, "%u within %u ms", c->redis_min_acks, c->redis_ack_timeout_ms);
}

typedef void (*render_fn)(const struct osbq_config *c, char *buf, size_t size);

/* One accepted setting: value NULL means unset (the default); suffix compares the end only. */
struct good_case {
    enum osbq_role role;
    const char *name;
    const char *value;
    render_fn render;
    const char *expected;
    bool suffix;
};

static const struct good_case good_cases[] = {
    /* Defaults. */
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", NULL, render_redis,
     "host=127.0.0.1 port=6379 db=0 user=- pass=-", false},
    {OSBQ_ROLE_WORKER, "OSBQ_REDIS_URL", NULL, render_redis,
     "host=127.0.0.1 port=6379 db=0 user=- pass=-", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_TIMEOUT_MS", NULL, render_timeout, "2000", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_NAMESPACE", NULL, render_namespace, "osbq", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_MIN_ACKS", NULL, render_acks, "0 within 1000 ms", false},
    {OSBQ_ROLE_WORKER, "OSBQ_REDIS_MIN_ACKS", NULL, render_acks, "0 within 1000 ms", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_CATALOG", NULL, render_catalog, DEFAULT_SUFFIX, true},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LOG_LEVEL", NULL, render_log_level, "info", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LISTEN", NULL, render_listen, "host=0.0.0.0 port=8080", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_MAX_BODY_BYTES", NULL, render_max_body, "1048576", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BUS_BIND", NULL, render_bus_bind, "tcp://0.0.0.0:5555 port=5555",
     false},
    {OSBQ_ROLE_WORKER, "OSBQ_WORKER_CONCURRENCY", NULL, render_concurrency, "16", false},
    {OSBQ_ROLE_WORKER, "OSBQ_WORKER_EXEC_CONCURRENCY", NULL, render_exec_concurrency, "256", false},
    /* Redis URLs. */
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", "redis://h", render_redis,
     "host=h port=6379 db=0 user=- pass=-", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", "redis://h:6380/3", render_redis,
     "host=h port=6380 db=3 user=- pass=-", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", "redis://user:pa%40ss@h:1/0", render_redis,
     "host=h port=1 db=0 user=user pass=pa@ss", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", "redis://:secret@h", render_redis,
     "host=h port=6379 db=0 user=- pass=secret", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", "redis://[::1]:6379", render_redis,
     "host=::1 port=6379 db=0 user=- pass=-", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", "redis://h/", render_redis,
     "host=h port=6379 db=0 user=- pass=-", false},
    {OSBQ_ROLE_WORKER, "OSBQ_REDIS_URL", "redis://redis.internal:65535/15", render_redis,
     "host=redis.internal port=65535 db=15 user=- pass=-", false},
    /* The other variables. */
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_TIMEOUT_MS", "10", render_timeout, "10", false},
    {OSBQ_ROLE_WORKER, "OSBQ_REDIS_TIMEOUT_MS", "600000", render_timeout, "600000", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_MIN_ACKS", "1", render_acks, "1 within 1000 ms", false},
    {OSBQ_ROLE_WORKER, "OSBQ_REDIS_MIN_ACKS", "16", render_acks, "16 within 1000 ms", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_ACK_TIMEOUT_MS", "10", render_acks, "0 within 10 ms", false},
    {OSBQ_ROLE_WORKER, "OSBQ_REDIS_ACK_TIMEOUT_MS", "60000", render_acks, "0 within 60000 ms",
     false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_NAMESPACE", "stack-1_prod.eu", render_namespace, "stack-1_prod.eu",
     false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_NAMESPACE", NAMESPACE_64, render_namespace, NAMESPACE_64, false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_CATALOG", "/etc/osbq/catalog.json", render_catalog,
     "/etc/osbq/catalog.json", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LOG_LEVEL", "debug", render_log_level, "debug", false},
    {OSBQ_ROLE_WORKER, "OSBQ_LOG_LEVEL", "error", render_log_level, "error", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LOG_LEVEL", "warn", render_log_level, "warn", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LISTEN", "127.0.0.1:9090", render_listen, "host=127.0.0.1 port=9090",
     false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LISTEN", "[::1]:8443", render_listen, "host=::1 port=8443", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LISTEN", "localhost:65535", render_listen,
     "host=localhost port=65535", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_HTTP_THREADS", "4", render_http_threads, "4", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_HTTP_THREADS", "256", render_http_threads, "256", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_MAX_BODY_BYTES", "1024", render_max_body, "1024", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_MAX_BODY_BYTES", "67108864", render_max_body, "67108864", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BROKER_USERNAME", "platform", render_username, "platform", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BROKER_PASSWORD", "p@ss:w0rd", render_password, "p@ss:w0rd", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BUS_BIND", "tcp://127.0.0.1:5600", render_bus_bind,
     "tcp://127.0.0.1:5600 port=5600", false},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BUS_ADVERTISE", "tcp://gw.example:7000", render_bus_advertise,
     "tcp://gw.example:7000", false},
    {OSBQ_ROLE_WORKER, "OSBQ_WORKER_CONCURRENCY", "1", render_concurrency, "1", false},
    {OSBQ_ROLE_WORKER, "OSBQ_WORKER_CONCURRENCY", "1024", render_concurrency, "1024", false},
    {OSBQ_ROLE_WORKER, "OSBQ_WORKER_EXEC_CONCURRENCY", "1", render_exec_concurrency, "1", false},
    {OSBQ_ROLE_WORKER, "OSBQ_WORKER_EXEC_CONCURRENCY", "65536", render_exec_concurrency, "65536",
     false},
};

static void test_defaults_and_good_values_parse(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof good_cases / sizeof good_cases[0]; i++) {
        const struct good_case *tc = &good_cases[i];
        struct fake_env env;
        struct osbq_config cfg;
        struct osbq_error err = {0};
        char got[RENDER_MAX];
        env_gateway(&env);
        env_set(&env, tc->name, tc->value);
        memset(&cfg, 0, sizeof cfg);
        if (osbq_config_load(&cfg, tc->role, fake_lookup, &env, &err) != 0)
            fail_msg("case %zu %s=%s: %s", i, tc->name, or_dash(tc->value), err.text);
        tc->render(&cfg, got, sizeof got);
        bool ok = tc->suffix ? ends_with(got, tc->expected) : strcmp(got, tc->expected) == 0;
        osbq_config_clear(&cfg);
        if (!ok)
            fail_msg("case %zu %s=%s: got \"%s\", want \"%s\"", i, tc->name, or_dash(tc->value),
                     got, tc->expected);
    }
}

/* One rejected setting: the error must start with "<name>: ". */
struct bad_case {
    enum osbq_role role;
    const char *name;
    const char *value;
};

static const struct bad_case bad_cases[] = {
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", "http://h"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", "redis://"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", "redis://h:0"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", "redis://h:70000"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", "redis://h/x"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", "redis://h/1?x=1"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", "redis://h/1#frag"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", "not a url"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", ""},
    {OSBQ_ROLE_WORKER, "OSBQ_REDIS_URL", "rediss://h"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_TIMEOUT_MS", "9"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_TIMEOUT_MS", "600001"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_TIMEOUT_MS", "abc"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_TIMEOUT_MS", "-5"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_TIMEOUT_MS", " 100"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_TIMEOUT_MS", "100ms"},
    {OSBQ_ROLE_WORKER, "OSBQ_REDIS_TIMEOUT_MS", ""},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_MIN_ACKS", "17"},
    {OSBQ_ROLE_WORKER, "OSBQ_REDIS_MIN_ACKS", "-1"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_ACK_TIMEOUT_MS", "9"},
    {OSBQ_ROLE_WORKER, "OSBQ_REDIS_ACK_TIMEOUT_MS", "60001"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_NAMESPACE", "a:b"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_NAMESPACE", "a*"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_NAMESPACE", "a{b}"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_NAMESPACE", "a b"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_NAMESPACE", NAMESPACE_65},
    {OSBQ_ROLE_WORKER, "OSBQ_NAMESPACE", ""},
    {OSBQ_ROLE_GATEWAY, "OSBQ_CATALOG", ""},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LOG_LEVEL", "verbose"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LOG_LEVEL", "INFO"},
    {OSBQ_ROLE_WORKER, "OSBQ_LOG_LEVEL", ""},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LISTEN", "8080"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LISTEN", "::1:8080"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LISTEN", ":8080"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LISTEN", "[]:8080"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LISTEN", "h:0"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LISTEN", "h:65536"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_LISTEN", "h:"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_HTTP_THREADS", "257"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_HTTP_THREADS", "-1"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_HTTP_THREADS", "four"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_MAX_BODY_BYTES", "1023"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_MAX_BODY_BYTES", "67108865"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_MAX_BODY_BYTES", "1M"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BROKER_USERNAME", ""},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BROKER_USERNAME", "ad:min"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BROKER_PASSWORD", ""},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BUS_BIND", "udp://h:1"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BUS_BIND", "h:5555"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BUS_BIND", "tcp://h"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BUS_BIND", "tcp://h:0"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BUS_ADVERTISE", "tcp://0.0.0.0:1"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BUS_ADVERTISE", "tcp://*:5555"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BUS_ADVERTISE", "tcp://[::]:1"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BUS_ADVERTISE", "tcp://[0:0:0:0:0:0:0:0]:1"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BUS_ADVERTISE", "gw:5555"},
    {OSBQ_ROLE_GATEWAY, "OSBQ_BUS_ADVERTISE", "tcp://gw"},
    {OSBQ_ROLE_WORKER, "OSBQ_WORKER_CONCURRENCY", "0"},
    {OSBQ_ROLE_WORKER, "OSBQ_WORKER_CONCURRENCY", "1025"},
    {OSBQ_ROLE_WORKER, "OSBQ_WORKER_CONCURRENCY", "many"},
    {OSBQ_ROLE_WORKER, "OSBQ_WORKER_EXEC_CONCURRENCY", "0"},
    {OSBQ_ROLE_WORKER, "OSBQ_WORKER_EXEC_CONCURRENCY", "65537"},
};

static void test_bad_values_fail_naming_the_variable(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const struct bad_case *tc = &bad_cases[i];
        struct fake_env env;
        struct osbq_error err;
        env_gateway(&env);
        env_set(&env, tc->name, tc->value);
        char label[160];
        (void)snprintf(label, sizeof label, "case %zu %s=\"%s\"", i, tc->name, tc->value);
        load_fails_case(&env, tc->role, tc->name, &err, label);
    }
}

static void test_http_threads_zero_means_cores(void **state)
{
    (void)state;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned want = cores > 0 ? (unsigned)cores : 1;
    static const char *const values[] = {NULL, "0"};
    for (size_t i = 0; i < 2; i++) {
        struct fake_env env;
        struct osbq_config cfg;
        env_gateway(&env);
        env_set(&env, "OSBQ_HTTP_THREADS", values[i]);
        load_ok(&env, OSBQ_ROLE_GATEWAY, &cfg);
        assert_true(cfg.http_threads >= 1);
        assert_int_equal(cfg.http_threads, want);
        osbq_config_clear(&cfg);
    }
}

static void test_gateway_requires_credentials(void **state)
{
    (void)state;
    struct fake_env env;
    struct osbq_error err;

    memset(&env, 0, sizeof env);
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_BROKER_USERNAME", &err);

    memset(&env, 0, sizeof env);
    env_set(&env, "OSBQ_BROKER_USERNAME", "admin");
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_BROKER_PASSWORD", &err);

    memset(&env, 0, sizeof env);
    env_set(&env, "OSBQ_BROKER_PASSWORD", "hunter2");
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_BROKER_USERNAME", &err);
}

/* With OSBQ_PLATFORMS the broker credentials are optional, but still both or neither; the
 * path must name a readable file. */
static void test_platforms_make_credentials_optional(void **state)
{
    (void)state;
    struct fake_env env;
    struct osbq_error err = {0};
    struct osbq_config cfg;
    const char *file = OSBQ_SOURCE_DIR "/examples/catalog.json"; /* any readable file */

    memset(&env, 0, sizeof env);
    env_set(&env, "OSBQ_PLATFORMS", file);
    assert_int_equal(osbq_config_load(&cfg, OSBQ_ROLE_GATEWAY, fake_lookup, &env, &err), 0);
    assert_string_equal(cfg.platforms_path, file);
    assert_null(cfg.broker_username);
    assert_null(cfg.broker_password);
    osbq_config_clear(&cfg);

    env_set(&env, "OSBQ_BROKER_USERNAME", "admin");
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_BROKER_PASSWORD", &err);
    env_set(&env, "OSBQ_BROKER_PASSWORD", "hunter2");
    assert_int_equal(osbq_config_load(&cfg, OSBQ_ROLE_GATEWAY, fake_lookup, &env, &err), 0);
    assert_string_equal(cfg.broker_username, "admin");
    osbq_config_clear(&cfg);

    memset(&env, 0, sizeof env);
    env_set(&env, "OSBQ_PLATFORMS", "/nonexistent/platforms.json");
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_PLATFORMS", &err);
}

static void test_gateway_loads_credentials(void **state)
{
    (void)state;
    struct fake_env env;
    struct osbq_config cfg;
    env_gateway(&env);
    load_ok(&env, OSBQ_ROLE_GATEWAY, &cfg);
    assert_string_equal(cfg.broker_username, "admin");
    assert_string_equal(cfg.broker_password, "hunter2");
    assert_int_equal(cfg.worker_concurrency, 0);
    osbq_config_clear(&cfg);
    assert_true(is_zeroed(&cfg));
}

static void test_worker_does_not_read_gateway_variables(void **state)
{
    (void)state;
    static const char *const gateway_only[] = {
        "OSBQ_BROKER_USERNAME", "OSBQ_BROKER_PASSWORD", "OSBQ_LISTEN",        "OSBQ_HTTP_THREADS",
        "OSBQ_MAX_BODY_BYTES",  "OSBQ_BUS_BIND",        "OSBQ_BUS_ADVERTISE",
    };
    struct fake_env env;
    struct osbq_config cfg;
    memset(&env, 0, sizeof env);
    /* Bad values the worker must never look at. */
    env_set(&env, "OSBQ_LISTEN", "junk");
    env_set(&env, "OSBQ_BUS_BIND", "junk");
    env_set(&env, "OSBQ_BROKER_USERNAME", "");
    env_set(&env, "OSBQ_BROKER_PASSWORD_FILE", "/nonexistent/osbq-secret");
    load_ok(&env, OSBQ_ROLE_WORKER, &cfg);
    for (size_t i = 0; i < sizeof gateway_only / sizeof gateway_only[0]; i++)
        if (env_was_read(&env, gateway_only[i]))
            fail_msg("the worker read %s", gateway_only[i]);
    assert_true(env_was_read(&env, "OSBQ_WORKER_CONCURRENCY"));
    assert_true(env_was_read(&env, "OSBQ_REDIS_URL"));
    assert_null(cfg.broker_username);
    assert_null(cfg.broker_password);
    assert_null(cfg.listen.host);
    assert_null(cfg.bus_bind);
    assert_null(cfg.bus_advertise);
    assert_int_equal(cfg.worker_concurrency, 16);
    osbq_config_clear(&cfg);
}

static void test_gateway_does_not_read_worker_concurrency(void **state)
{
    (void)state;
    struct fake_env env;
    struct osbq_config cfg;
    env_gateway(&env);
    env_set(&env, "OSBQ_WORKER_CONCURRENCY", "junk");
    load_ok(&env, OSBQ_ROLE_GATEWAY, &cfg);
    assert_false(env_was_read(&env, "OSBQ_WORKER_CONCURRENCY"));
    assert_int_equal(cfg.worker_concurrency, 0);
    osbq_config_clear(&cfg);
}

/* A secret file: the variable (without _FILE), its bytes, and the value expected (NULL: error). */
struct file_case {
    const char *name;
    const char *content;
    size_t len;
    const char *expected;
};

#define BYTES(s) s, sizeof s - 1

static const struct file_case file_cases[] = {
    {"OSBQ_BROKER_PASSWORD", BYTES("secret\n"), "secret"},
    {"OSBQ_BROKER_PASSWORD", BYTES("secret\r\n"), "secret"},
    {"OSBQ_BROKER_PASSWORD", BYTES("secret"), "secret"},
    {"OSBQ_BROKER_PASSWORD", BYTES("pa:ss word\n"), "pa:ss word"},
    {"OSBQ_BROKER_PASSWORD", BYTES(""), NULL},
    {"OSBQ_BROKER_PASSWORD", BYTES("\n"), NULL},
    {"OSBQ_BROKER_PASSWORD", BYTES("sec\0ret"), NULL},
    {"OSBQ_BROKER_USERNAME", BYTES("platform\n"), "platform"},
    {"OSBQ_BROKER_USERNAME", BYTES("plat:form\n"), NULL},
    {"OSBQ_BROKER_USERNAME", BYTES(""), NULL},
};

static void test_secret_files(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof file_cases / sizeof file_cases[0]; i++) {
        const struct file_case *tc = &file_cases[i];
        char path[64], file_var[64];
        struct fake_env env;
        (void)snprintf(file_var, sizeof file_var, "%s_FILE", tc->name);
        temp_file_write(tc->content, tc->len, path, sizeof path);
        env_gateway(&env);
        env_set(&env, tc->name, NULL);
        env_set(&env, file_var, path);
        char label[96];
        (void)snprintf(label, sizeof label, "case %zu %s", i, file_var);
        if (tc->expected != NULL) {
            struct osbq_config cfg;
            load_ok(&env, OSBQ_ROLE_GATEWAY, &cfg);
            const char *got = strcmp(tc->name, "OSBQ_BROKER_PASSWORD") == 0 ? cfg.broker_password
                                                                            : cfg.broker_username;
            bool ok = got != NULL && strcmp(got, tc->expected) == 0;
            osbq_config_clear(&cfg);
            assert_int_equal(remove(path), 0);
            if (!ok)
                fail_msg("%s: got \"%s\", want \"%s\"", label, or_dash(got), tc->expected);
        } else {
            struct osbq_error err;
            load_fails_case(&env, OSBQ_ROLE_GATEWAY, file_var, &err, label);
            assert_int_equal(remove(path), 0);
        }
    }
}

static void test_secret_file_too_large_is_rejected(void **state)
{
    (void)state;
    static char big[4097];
    char path[64];
    struct fake_env env;
    struct osbq_error err;
    memset(big, 'x', sizeof big);
    temp_file_write(big, sizeof big, path, sizeof path);
    env_gateway(&env);
    env_set(&env, "OSBQ_BROKER_PASSWORD", NULL);
    env_set(&env, "OSBQ_BROKER_PASSWORD_FILE", path);
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_BROKER_PASSWORD_FILE", &err);
    assert_int_equal(remove(path), 0);

    /* 4096 bytes is the largest accepted. */
    struct osbq_config cfg;
    temp_file_write(big, sizeof big - 1, path, sizeof path);
    env_set(&env, "OSBQ_BROKER_PASSWORD_FILE", path);
    load_ok(&env, OSBQ_ROLE_GATEWAY, &cfg);
    assert_int_equal(strlen(cfg.broker_password), sizeof big - 1);
    osbq_config_clear(&cfg);
    assert_int_equal(remove(path), 0);
}

static void test_secret_file_missing_names_the_file_variable(void **state)
{
    (void)state;
    struct fake_env env;
    struct osbq_error err;
    env_gateway(&env);
    env_set(&env, "OSBQ_BROKER_PASSWORD", NULL);
    env_set(&env, "OSBQ_BROKER_PASSWORD_FILE", "/nonexistent/osbq-test/password");
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_BROKER_PASSWORD_FILE", &err);
    assert_non_null(strstr(err.text, "/nonexistent/osbq-test/password"));
}

static void test_secret_and_secret_file_both_set_is_an_error(void **state)
{
    (void)state;
    static const char *const names[] = {"OSBQ_BROKER_USERNAME", "OSBQ_BROKER_PASSWORD"};
    for (size_t i = 0; i < 2; i++) {
        char path[64], file_var[64];
        struct fake_env env;
        struct osbq_config cfg;
        struct osbq_error err = {0};
        (void)snprintf(file_var, sizeof file_var, "%s_FILE", names[i]);
        temp_file_write(BYTES("value\n"), path, sizeof path);
        env_gateway(&env);
        env_set(&env, file_var, path);
        memset(&cfg, 0, sizeof cfg);
        int rc = osbq_config_load(&cfg, OSBQ_ROLE_GATEWAY, fake_lookup, &env, &err);
        assert_int_equal(remove(path), 0);
        assert_int_equal(rc, -1);
        assert_int_equal(err.code, OSBQ_ERR_INVALID);
        assert_true(is_zeroed(&cfg));
        /* The text names both variables (it reads "set either NAME or NAME_FILE, not both"). */
        assert_non_null(strstr(err.text, names[i]));
        assert_non_null(strstr(err.text, file_var));
    }
}

/* The paths of the security settings: unset means off, a readable file or directory is kept,
 * anything else stops start-up naming the variable; the pairs must be set together. */
static void test_security_paths(void **state)
{
    (void)state;
    char file[64], dir[] = "/tmp/osbq-test-config-dir-XXXXXX";
    temp_file_write(BYTES("x\n"), file, sizeof file);
    assert_non_null(mkdtemp(dir));
    struct fake_env env;
    struct osbq_config cfg;
    struct osbq_error err;

    env_gateway(&env);
    load_ok(&env, OSBQ_ROLE_GATEWAY, &cfg);
    assert_null(cfg.tls_cert_path);
    assert_null(cfg.secret_key_file);
    assert_null(cfg.bus_server_cert);
    assert_int_equal(cfg.max_header_bytes, 16384);
    osbq_config_clear(&cfg);

    env_set(&env, "OSBQ_TLS_CERT", file);
    env_set(&env, "OSBQ_TLS_KEY", file);
    env_set(&env, "OSBQ_SECRET_KEY_FILE", file);
    env_set(&env, "OSBQ_BUS_CURVE_SERVER_CERT", file);
    env_set(&env, "OSBQ_BUS_CURVE_CLIENTS_DIR", dir);
    env_set(&env, "OSBQ_MAX_HEADER_BYTES", "1024");
    load_ok(&env, OSBQ_ROLE_GATEWAY, &cfg);
    assert_string_equal(cfg.tls_cert_path, file);
    assert_string_equal(cfg.tls_key_path, file);
    assert_string_equal(cfg.secret_key_file, file);
    assert_string_equal(cfg.bus_server_cert, file);
    assert_string_equal(cfg.bus_clients_dir, dir);
    assert_int_equal(cfg.max_header_bytes, 1024);
    osbq_config_clear(&cfg);

    env_set(&env, "OSBQ_TLS_KEY", NULL);
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_TLS_KEY", &err);
    env_set(&env, "OSBQ_TLS_KEY", file);
    env_set(&env, "OSBQ_TLS_CERT", NULL);
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_TLS_CERT", &err);
    env_set(&env, "OSBQ_TLS_CERT", "/nonexistent/cert.pem");
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_TLS_CERT", &err);
    assert_non_null(strstr(err.text, "/nonexistent/cert.pem"));
    env_set(&env, "OSBQ_TLS_CERT", dir);
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_TLS_CERT", &err);
    env_set(&env, "OSBQ_TLS_CERT", file);
    env_set(&env, "OSBQ_BUS_CURVE_CLIENTS_DIR", file);
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_BUS_CURVE_CLIENTS_DIR", &err);
    env_set(&env, "OSBQ_BUS_CURVE_CLIENTS_DIR", NULL);
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_BUS_CURVE_CLIENTS_DIR", &err);
    env_set(&env, "OSBQ_BUS_CURVE_CLIENTS_DIR", dir);
    env_set(&env, "OSBQ_MAX_HEADER_BYTES", "1023");
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_MAX_HEADER_BYTES", &err);
    env_set(&env, "OSBQ_MAX_HEADER_BYTES", "1048577");
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_MAX_HEADER_BYTES", &err);

    /* A worker pairs the gateways' certificate with its own, and reads no TLS setting. */
    memset(&env, 0, sizeof env);
    env_set(&env, "OSBQ_BUS_CURVE_SERVER_CERT", file);
    load_fails(&env, OSBQ_ROLE_WORKER, "OSBQ_BUS_CURVE_CLIENT_CERT", &err);
    env_set(&env, "OSBQ_BUS_CURVE_CLIENT_CERT", file);
    env_set(&env, "OSBQ_TLS_CERT", "/nonexistent");
    load_ok(&env, OSBQ_ROLE_WORKER, &cfg);
    assert_string_equal(cfg.bus_client_cert, file);
    assert_null(cfg.tls_cert_path);
    assert_false(env_was_read(&env, "OSBQ_TLS"));
    osbq_config_clear(&cfg);

    assert_int_equal(unlink(file), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* OSBQ_REDIS_SENTINELS: a list of host:port (IPv6 in brackets), at most 16, set together with
 * OSBQ_REDIS_MASTER_NAME; ctl reads them too. */
static void test_sentinels(void **state)
{
    (void)state;
    struct fake_env env;
    struct osbq_config cfg;
    struct osbq_error err;
    memset(&env, 0, sizeof env);
    env_set(&env, "OSBQ_REDIS_SENTINELS", "10.0.0.1:26379,[::1]:26380,s3:1");
    env_set(&env, "OSBQ_REDIS_MASTER_NAME", "osbq-primary");
    load_ok(&env, OSBQ_ROLE_CTL, &cfg);
    assert_int_equal(cfg.sentinel_count, 3);
    assert_string_equal(cfg.sentinels[0].host, "10.0.0.1");
    assert_int_equal(cfg.sentinels[0].port, 26379);
    assert_string_equal(cfg.sentinels[1].host, "::1");
    assert_string_equal(cfg.sentinels[2].host, "s3");
    assert_string_equal(cfg.redis_master_name, "osbq-primary");
    osbq_config_clear(&cfg);
    env_set(&env, "OSBQ_REDIS_MASTER_NAME", NULL);
    load_fails(&env, OSBQ_ROLE_WORKER, "OSBQ_REDIS_MASTER_NAME", &err);
    env_set(&env, "OSBQ_REDIS_MASTER_NAME", "a b");
    load_fails(&env, OSBQ_ROLE_WORKER, "OSBQ_REDIS_MASTER_NAME", &err);
    env_set(&env, "OSBQ_REDIS_MASTER_NAME", "m");
    env_set(&env, "OSBQ_REDIS_SENTINELS", "h:1,h:0");
    load_fails(&env, OSBQ_ROLE_WORKER, "OSBQ_REDIS_SENTINELS", &err);
    env_set(&env, "OSBQ_REDIS_SENTINELS", ",,,");
    load_fails(&env, OSBQ_ROLE_WORKER, "OSBQ_REDIS_SENTINELS", &err);
    env_set(&env, "OSBQ_REDIS_SENTINELS",
            "h:1,h:2,h:3,h:4,h:5,h:6,h:7,h:8,h:9,h:10,h:11,h:12,"
            "h:13,h:14,h:15,h:16,h:17");
    load_fails(&env, OSBQ_ROLE_WORKER, "OSBQ_REDIS_SENTINELS", &err);
    assert_non_null(strstr(err.text, "at most 16"));
    env_set(&env, "OSBQ_REDIS_SENTINELS", NULL);
    load_fails(&env, OSBQ_ROLE_WORKER, "OSBQ_REDIS_SENTINELS", &err);
}

static void test_bus_advertise_defaults_to_bound_address(void **state)
{
    (void)state;
    /* given: OSBQ_BUS_BIND; want: the address advertised. */
    static const struct string_case cases[] = {
        {"tcp://127.0.0.1:5600", "tcp://127.0.0.1:5600"},
        {"tcp://10.1.2.3:1", "tcp://10.1.2.3:1"},
        {"tcp://gateway.local:6000", "tcp://gateway.local:6000"},
        {"tcp://[::1]:5600", "tcp://[::1]:5600"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fake_env env;
        struct osbq_config cfg;
        env_gateway(&env);
        env_set(&env, "OSBQ_BUS_BIND", cases[i].given);
        load_ok(&env, OSBQ_ROLE_GATEWAY, &cfg);
        bool ok = strcmp(cfg.bus_advertise, cases[i].want) == 0;
        if (!ok)
            fail_msg("bind %s: advertise \"%s\", want \"%s\"", cases[i].given, cfg.bus_advertise,
                     cases[i].want);
        osbq_config_clear(&cfg);
    }
}

static void test_bus_advertise_wildcard_bind_uses_host_name(void **state)
{
    (void)state;
    static const char *const binds[] = {NULL, "tcp://0.0.0.0:5555", "tcp://*:5555",
                                        "tcp://[::]:5555"};
    char host[256] = {0}, want[300];
    assert_int_equal(gethostname(host, sizeof host - 1), 0);
    (void)snprintf(want, sizeof want, "tcp://%s:5555", host);
    for (size_t i = 0; i < sizeof binds / sizeof binds[0]; i++) {
        struct fake_env env;
        struct osbq_config cfg;
        env_gateway(&env);
        env_set(&env, "OSBQ_BUS_BIND", binds[i]);
        load_ok(&env, OSBQ_ROLE_GATEWAY, &cfg);
        const char *adv = cfg.bus_advertise;
        assert_non_null(adv);
        assert_true(starts_with(adv, "tcp://"));
        assert_true(ends_with(adv, ":5555"));
        assert_null(strstr(adv, "0.0.0.0"));
        assert_null(strstr(adv, "*"));
        assert_string_equal(adv, want);
        assert_int_equal(cfg.bus_port, 5555);
        osbq_config_clear(&cfg);
    }
}

static void test_bus_advertise_explicit_value_wins(void **state)
{
    (void)state;
    struct fake_env env;
    struct osbq_config cfg;
    env_gateway(&env);
    env_set(&env, "OSBQ_BUS_BIND", "tcp://0.0.0.0:5555");
    env_set(&env, "OSBQ_BUS_ADVERTISE", "tcp://[fd00::1]:5555");
    load_ok(&env, OSBQ_ROLE_GATEWAY, &cfg);
    assert_string_equal(cfg.bus_advertise, "tcp://[fd00::1]:5555");
    assert_string_equal(cfg.bus_bind, "tcp://0.0.0.0:5555");
    osbq_config_clear(&cfg);
}

static void test_first_error_wins_in_table_order(void **state)
{
    (void)state;
    struct fake_env env;
    struct osbq_error err;
    env_gateway(&env);
    env_set(&env, "OSBQ_NAMESPACE", "bad:ns");
    env_set(&env, "OSBQ_REDIS_URL", "http://h");
    load_fails(&env, OSBQ_ROLE_GATEWAY, "OSBQ_REDIS_URL", &err);
    assert_non_null(strstr(err.text, "http"));
}

static void test_redis_addr_parse_without_variable_name(void **state)
{
    (void)state;
    struct osbq_redis_addr addr = {0};
    struct osbq_error err = {0};
    assert_int_equal(osbq_redis_addr_parse("redis://u:p@example.org:7000/2", &addr, &err), 0);
    assert_string_equal(addr.host, "example.org");
    assert_int_equal(addr.port, 7000);
    assert_int_equal(addr.db, 2);
    assert_string_equal(addr.username, "u");
    assert_string_equal(addr.password, "p");
    osbq_redis_addr_clear(&addr);
    assert_null(addr.host);
    assert_null(addr.password);

    assert_int_equal(osbq_redis_addr_parse("http://h", &addr, &err), -1);
    assert_int_equal(err.code, OSBQ_ERR_INVALID);
    assert_null(strstr(err.text, "OSBQ_"));
    assert_null(addr.host);
}

static void test_clear_accepts_zeroed_config(void **state)
{
    (void)state;
    struct osbq_config cfg;
    memset(&cfg, 0, sizeof cfg);
    osbq_config_clear(&cfg);
    assert_true(is_zeroed(&cfg));
}

/* Prints role's help into a string; the caller frees it. */
static char *help_text(enum osbq_role role)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    osbq_config_print_help(out, role);
    assert_int_equal(fclose(out), 0);
    assert_non_null(text);
    return text;
}

static const char *const common_vars[] = {
    "OSBQ_REDIS_URL", "OSBQ_REDIS_TIMEOUT_MS", "OSBQ_NAMESPACE", "OSBQ_CATALOG", "OSBQ_LOG_LEVEL",
};

static const char *const gateway_vars[] = {
    "OSBQ_LISTEN",
    "OSBQ_HTTP_THREADS",
    "OSBQ_MAX_BODY_BYTES",
    "OSBQ_BROKER_USERNAME",
    "OSBQ_BROKER_USERNAME_FILE",
    "OSBQ_BROKER_PASSWORD",
    "OSBQ_BROKER_PASSWORD_FILE",
    "OSBQ_BUS_BIND",
    "OSBQ_BUS_ADVERTISE",
};

/* Checks that every name in names is (listed) or is not (!listed) in text. */
static bool check_listed(const char *text, const char *const *names, size_t count, bool listed)
{
    bool ok = true;
    for (size_t i = 0; i < count; i++) {
        if ((strstr(text, names[i]) != NULL) != listed) {
            print_error("%s %s\n", names[i], listed ? "is missing" : "is listed");
            ok = false;
        }
    }
    return ok;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const worker_vars[] = {"OSBQ_WORKER_CONCURRENCY"};

static void test_help_lists_gateway_variables_only(void **state)
{
    (void)state;
    char *text = help_text(OSBQ_ROLE_GATEWAY);
    bool ok = check_listed(text, common_vars, COUNT(common_vars), true);
    ok &= check_listed(text, gateway_vars, COUNT(gateway_vars), true);
    ok &= check_listed(text, worker_vars, COUNT(worker_vars), false);
    free(text);
    assert_true(ok);
}

static void test_help_lists_worker_variables_only(void **state)
{
    (void)state;
    char *text = help_text(OSBQ_ROLE_WORKER);
    bool ok = check_listed(text, common_vars, COUNT(common_vars), true);
    ok &= check_listed(text, worker_vars, COUNT(worker_vars), true);
    ok &= check_listed(text, gateway_vars, COUNT(gateway_vars), false);
    free(text);
    assert_true(ok);
}

static void test_misspelt_variable_suggests_the_close_name(void **state)
{
    (void)state;
    assert_true(osbq_config_known("OSBQ_WORKER_CONCURRENCY"));
    assert_true(osbq_config_known("OSBQ_BROKER_PASSWORD_FILE"));
    assert_false(osbq_config_known("OSBQ_LOG_LEVEL_FILE"));
    assert_false(osbq_config_known("OSBQ_WORKER_CONCURENCY"));
    assert_string_equal(osbq_config_suggest("OSBQ_WORKER_CONCURENCY"), "OSBQ_WORKER_CONCURRENCY");
    assert_string_equal(osbq_config_suggest("OSBQ_LOG_LEVLE"), "OSBQ_LOG_LEVEL");
    assert_null(osbq_config_suggest("OSBQ_SOMETHING_ELSE_ENTIRELY"));
}

static void test_log_format_parses(void **state)
{
    (void)state;
    struct fake_env env = {0};
    struct osbq_config cfg;
    struct osbq_error err;
    env_set(&env, "OSBQ_LOG_FORMAT", "json");
    load_ok(&env, OSBQ_ROLE_WORKER, &cfg);
    assert_int_equal(cfg.log_format, OSBQ_LOG_JSON);
    osbq_config_clear(&cfg);
    env_set(&env, "OSBQ_LOG_FORMAT", "yaml");
    load_fails(&env, OSBQ_ROLE_WORKER, "OSBQ_LOG_FORMAT", &err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_good_values_parse),
        cmocka_unit_test(test_bad_values_fail_naming_the_variable),
        cmocka_unit_test(test_http_threads_zero_means_cores),
        cmocka_unit_test(test_gateway_requires_credentials),
        cmocka_unit_test(test_gateway_loads_credentials),
        cmocka_unit_test(test_worker_does_not_read_gateway_variables),
        cmocka_unit_test(test_gateway_does_not_read_worker_concurrency),
        cmocka_unit_test(test_secret_files),
        cmocka_unit_test(test_secret_file_too_large_is_rejected),
        cmocka_unit_test(test_secret_file_missing_names_the_file_variable),
        cmocka_unit_test(test_secret_and_secret_file_both_set_is_an_error),
        cmocka_unit_test(test_security_paths),
        cmocka_unit_test(test_sentinels),
        cmocka_unit_test(test_bus_advertise_defaults_to_bound_address),
        cmocka_unit_test(test_bus_advertise_wildcard_bind_uses_host_name),
        cmocka_unit_test(test_bus_advertise_explicit_value_wins),
        cmocka_unit_test(test_first_error_wins_in_table_order),
        cmocka_unit_test(test_redis_addr_parse_without_variable_name),
        cmocka_unit_test(test_clear_accepts_zeroed_config),
        cmocka_unit_test(test_help_lists_gateway_variables_only),
        cmocka_unit_test(test_help_lists_worker_variables_only),
        cmocka_unit_test(test_platforms_make_credentials_optional),
        cmocka_unit_test(test_misspelt_variable_suggests_the_close_name),
        cmocka_unit_test(test_log_format_parses),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
