/* Unit tests for bus/bus_curve.c: loading the bus's certificates for each role, and every
 * way a certificate file can be unfit (named by the variable at fault). Certificates are made
 * with czmq's zcert in a temporary directory. */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bus_curve.h"

struct fixture {
    char dir[64];
    char path[160];
};

/* dir/name, in f->path. */
static const char *at(struct fixture *f, const char *name)
{
    (void)snprintf(f->path, sizeof f->path, "%s/%s", f->dir, name);
    return f->path;
}

/* A path kept past at's next call, which reuses f->path. */
struct path {
    char s[160];
};

static struct path kept_at(struct fixture *f, const char *name)
{
    struct path p;
    (void)snprintf(p.s, sizeof p.s, "%s", at(f, name));
    return p;
}

/* Saves a new key pair as dir/name and dir/name_secret; returns its public key (owned). */
static char *new_pair(struct fixture *f, const char *name)
{
    zcert_t *cert = zcert_new();
    assert_non_null(cert);
    assert_int_equal(zcert_save(cert, at(f, name)), 0);
    char *key = strdup(zcert_public_txt(cert));
    zcert_destroy(&cert);
    return key;
}

static void write_file(struct fixture *f, const char *name, const char *text)
{
    FILE *out = fopen(at(f, name), "w");
    assert_non_null(out);
    fputs(text, out);
    fclose(out);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    (void)snprintf(f->dir, sizeof f->dir, "/tmp/osbq-bus-curve-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    zdir_t *dir = zdir_new(f->dir, NULL);
    if (dir != NULL)
        zdir_remove(dir, true);
    zdir_destroy(&dir);
    free(f);
    return 0;
}

/* Loads for role with the given paths (NULL: unset). */
static int load(struct osbq_bus_curve *curve, enum osbq_role role, char *server, char *client,
                char *clients_dir, const char **variable, struct osbq_error *err)
{
    struct osbq_config cfg = {
        .bus_server_cert = server, .bus_client_cert = client, .bus_clients_dir = clients_dir};
    return osbq_bus_curve_load(curve, &cfg, role, variable, err);
}

static void test_off_without_settings(void **state)
{
    (void)state;
    struct osbq_bus_curve curve;
    struct osbq_error err = {0};
    const char *variable = NULL;
    assert_int_equal(load(&curve, OSBQ_ROLE_GATEWAY, NULL, NULL, NULL, &variable, &err), 0);
    assert_false(osbq_bus_curve_on(&curve));
    assert_int_equal(load(&curve, OSBQ_ROLE_WORKER, NULL, NULL, NULL, &variable, &err), 0);
    assert_false(osbq_bus_curve_on(&curve));
    osbq_bus_curve_clear(&curve);
}

static void test_gateway_loads_the_secret_certificate(void **state)
{
    struct fixture *f = *state;
    char *key = new_pair(f, "gateways");
    struct path secret = kept_at(f, "gateways_secret");
    struct osbq_bus_curve curve;
    struct osbq_error err = {0};
    const char *variable = NULL;
    assert_int_equal(load(&curve, OSBQ_ROLE_GATEWAY, secret.s, NULL, f->dir, &variable, &err), 0);
    assert_true(osbq_bus_curve_on(&curve));
    assert_string_equal(zcert_public_txt(curve.own), key);
    assert_string_equal(curve.server_public, "");
    osbq_bus_curve_clear(&curve);
    assert_false(osbq_bus_curve_on(&curve));
    free(key);
}

static void test_worker_takes_the_public_or_the_secret_server_file(void **state)
{
    struct fixture *f = *state;
    char *server_key = new_pair(f, "gateways");
    char *client_key = new_pair(f, "worker");
    struct path client = kept_at(f, "worker_secret");
    const char *names[] = {"gateways", "gateways_secret"};
    for (size_t i = 0; i < 2; i++) {
        struct path server = kept_at(f, names[i]);
        struct osbq_bus_curve curve;
        struct osbq_error err = {0};
        const char *variable = NULL;
        assert_int_equal(load(&curve, OSBQ_ROLE_WORKER, server.s, client.s, NULL, &variable, &err),
                         0);
        assert_string_equal(curve.server_public, server_key);
        assert_string_equal(zcert_public_txt(curve.own), client_key);
        osbq_bus_curve_clear(&curve);
    }
    free(server_key);
    free(client_key);
}

/* Expects the load to fail, naming variable, with text in the message; a failure names the
 * case by its role and server file, as the tables of these cases tell them apart. */
static void expect_failure(enum osbq_role role, char *server, char *client, char *clients_dir,
                           const char *want_variable, const char *text)
{
    struct osbq_bus_curve curve;
    struct osbq_error err = {0};
    const char *variable = NULL;
    int rc = load(&curve, role, server, client, clients_dir, &variable, &err);
    if (rc != -1 || osbq_bus_curve_on(&curve))
        fail_msg("role %d, %s: rc %d, on %d", (int)role, server, rc, osbq_bus_curve_on(&curve));
    if (variable == NULL || strcmp(variable, want_variable) != 0)
        fail_msg("role %d, %s: variable %s, want %s", (int)role, server,
                 variable != NULL ? variable : "(none)", want_variable);
    if (strstr(err.text, text) == NULL)
        fail_msg("role %d, %s: \"%s\" does not say \"%s\"", (int)role, server, err.text, text);
}

static void test_public_file_where_a_secret_key_is_needed(void **state)
{
    struct fixture *f = *state;
    free(new_pair(f, "gateways"));
    free(new_pair(f, "worker"));
    /* zcert_load prefers name_secret beside name: a public file alone. */
    struct path lone = kept_at(f, "lone");
    assert_int_equal(rename(at(f, "worker"), lone.s), 0);
    struct path server = kept_at(f, "gateways");
    expect_failure(OSBQ_ROLE_WORKER, server.s, lone.s, NULL, "OSBQ_BUS_CURVE_CLIENT_CERT",
                   "holds no secret key");
    expect_failure(OSBQ_ROLE_GATEWAY, lone.s, NULL, f->dir, "OSBQ_BUS_CURVE_SERVER_CERT",
                   "holds no secret key");
}

static void test_not_a_certificate(void **state)
{
    struct fixture *f = *state;
    free(new_pair(f, "worker"));
    struct path client = kept_at(f, "worker_secret");
    write_file(f, "junk", "this is not = a \"certificate\n");
    struct path junk = kept_at(f, "junk");
    write_file(f, "empty", "");
    struct path empty = kept_at(f, "empty");
    const struct {
        enum osbq_role role;
        char *server, *client, *clients_dir;
    } cases[] = {
        {OSBQ_ROLE_WORKER, junk.s, client.s, NULL},
        {OSBQ_ROLE_WORKER, empty.s, client.s, NULL},
        {OSBQ_ROLE_GATEWAY, junk.s, NULL, f->dir},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_failure(cases[i].role, cases[i].server, cases[i].client, cases[i].clients_dir,
                       "OSBQ_BUS_CURVE_SERVER_CERT", "holds no CurveZMQ certificate");
}

static void test_secret_key_of_another_pair(void **state)
{
    struct fixture *f = *state;
    zcert_t *a = zcert_new(), *b = zcert_new();
    char text[512];
    (void)snprintf(text, sizeof text, "curve\n    public-key = \"%s\"\n    secret-key = \"%s\"\n",
                   zcert_public_txt(a), zcert_secret_txt(b));
    zcert_destroy(&a);
    zcert_destroy(&b);
    write_file(f, "mixed_secret", text);
    struct path mixed = kept_at(f, "mixed_secret");
    expect_failure(OSBQ_ROLE_GATEWAY, mixed.s, NULL, f->dir, "OSBQ_BUS_CURVE_SERVER_CERT",
                   "the secret key does not match the public key");
}

static void test_clients_directory_with_a_key_twice(void **state)
{
    struct fixture *f = *state;
    free(new_pair(f, "worker"));
    struct osbq_error err = {0};
    zactor_t *auth = osbq_bus_auth_start(f->dir, false, &err);
    assert_non_null(auth);
    zactor_destroy(&auth);
    struct path copy = kept_at(f, "worker-again");
    zcert_t *cert = zcert_load(at(f, "worker"));
    assert_int_equal(zcert_save_public(cert, copy.s), 0);
    zcert_destroy(&cert);
    assert_null(osbq_bus_auth_start(f->dir, false, &err));
    assert_non_null(strstr(err.text, "hold the same public key"));
    assert_null(osbq_bus_auth_start(at(f, "missing"), false, &err));
}

int main(void)
{
    zsys_handler_set(NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_without_settings),
        cmocka_unit_test_setup_teardown(test_gateway_loads_the_secret_certificate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_worker_takes_the_public_or_the_secret_server_file,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_public_file_where_a_secret_key_is_needed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_not_a_certificate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_secret_key_of_another_pair, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clients_directory_with_a_key_twice, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
