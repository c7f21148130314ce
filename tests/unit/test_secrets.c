/* Unit tests for common/secrets.c: the key file's format, sealing and opening, tampering, the
 * binding a value belongs to, rotation, and plaintext from before the keys. */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "secrets.h"
#include "temp_file.h"

#define KEY_A "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define KEY_B "F0E1D2C3B4A5968778695A4B3C2D1E0FF0E1D2C3B4A5968778695A4B3C2D1E0F"
#define KEY_C "3333333333333333333333333333333333333333333333333333333333333333"

static const struct osbq_secret_place place = {"osbq", "instance-1", "binding-1", NULL};
static const char credentials[] = "{\"credentials\":{\"username\":\"u\",\"password\":\"p4ss\"}}";

/* Writes text into a new temporary file of mode 0600; returns its path (static buffer). */
static const char *key_file(const char *text)
{
    static char path[64];
    temp_file_write(text, strlen(text), path, sizeof path);
    return path;
}

/* Loads text as a key file; the file is removed again. */
static struct osbq_secrets *load(const char *text, struct osbq_error *err)
{
    const char *path = key_file(text);
    struct osbq_secrets *s = osbq_secrets_load(path, err);
    (void)unlink(path);
    return s;
}

/* Expects text to be refused with an error containing want. */
static void expect_refused(const char *text, const char *want)
{
    struct osbq_error err = {0};
    struct osbq_secrets *s = load(text, &err);
    assert_null(s);
    assert_int_equal(err.code, OSBQ_ERR_INVALID);
    if (strstr(err.text, want) == NULL)
        fail_msg("error \"%s\" does not contain \"%s\"", err.text, want);
}

/* Opens text at place under secrets (NULL: no keys), which must give rc and want; what names
 * the case in a failure. */
static void assert_opens(const struct osbq_secrets *secrets, const char *text, int rc,
                         const char *want, const char *what)
{
    struct osbq_error err = {0};
    char *plain = NULL;
    int got = osbq_secrets_open(secrets, &place, text, &plain, &err);
    if (got != rc)
        fail_msg("%s: rc %d, want %d (%s)", what, got, rc, got < 0 ? err.text : "no error");
    if (plain == NULL || strcmp(plain, want) != 0)
        fail_msg("%s: opened to \"%s\", want \"%s\"", what, plain != NULL ? plain : "(none)", want);
    osbq_secrets_free_text(plain);
}

static void test_load_good(void **state)
{
    (void)state;
    struct osbq_error err = {0};
    struct osbq_secrets *s = load(KEY_A "\n" KEY_B "\r\n" KEY_C, &err);
    assert_non_null(s);
    assert_int_equal(osbq_secrets_count(s), 3);
    assert_int_equal(strlen(osbq_secrets_current_id(s)), 16);
    struct osbq_secrets *b = load(KEY_B "\n", &err);
    assert_non_null(b);
    assert_string_not_equal(osbq_secrets_current_id(s), osbq_secrets_current_id(b));
    /* The id is the key's, whatever its case or line end. */
    struct osbq_secrets *a = load(KEY_A "\r\n", &err);
    assert_string_equal(osbq_secrets_current_id(s), osbq_secrets_current_id(a));
    osbq_secrets_destroy(&s);
    osbq_secrets_destroy(&a);
    osbq_secrets_destroy(&b);
    assert_null(s);
    osbq_secrets_destroy(&s);
}

static void test_load_bad(void **state)
{
    (void)state;
    expect_refused("", "line 1: the file is empty");
    expect_refused("\n", "line 1: empty");
    expect_refused(KEY_A "\n\n" KEY_B "\n", "line 2: empty");
    expect_refused(KEY_A "\n# old key\n", "line 2: not a key");
    expect_refused(KEY_A "0\n", "line 1: not a key");
    expect_refused("0102\n", "line 1: not a key");
    expect_refused(KEY_A "\n" KEY_A, "line 2: the same key as line 1");
    expect_refused(KEY_A " \n", "line 1: not a key");
    /* 64 characters, not all hex. */
    expect_refused("g00102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
                   "line 1: not a key");
    expect_refused(" 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1\n",
                   "line 1: not a key");
    /* A key's error never quotes the key. */
    struct osbq_error err = {0};
    assert_null(load(KEY_A "\n" KEY_B "x\n", &err));
    assert_null(strstr(err.text, "F0E1"));
    assert_non_null(strstr(err.text, "line 2"));
}

static void test_load_too_many(void **state)
{
    (void)state;
    char text[OSBQ_SECRETS_KEYS_MAX * 66 + 80];
    size_t at = 0;
    for (unsigned i = 0; i < OSBQ_SECRETS_KEYS_MAX + 1; i++) {
        unsigned char key[32];
        randombytes_buf(key, sizeof key);
        sodium_bin2hex(text + at, 65, key, sizeof key);
        at += 64;
        text[at++] = '\r';
        text[at++] = '\n';
        text[at] = '\0';
        if (i == OSBQ_SECRETS_KEYS_MAX - 1) {
            struct osbq_error err = {0};
            struct osbq_secrets *s = load(text, &err);
            assert_non_null(s);
            assert_int_equal(osbq_secrets_count(s), OSBQ_SECRETS_KEYS_MAX);
            osbq_secrets_destroy(&s);
        }
    }
    expect_refused(text, "line 17: more than 16 keys");
}

static void test_load_mode(void **state)
{
    (void)state;
    struct osbq_error err = {0};
    const char *path = key_file(KEY_A "\n");
    assert_int_equal(chmod(path, 0620), 0);
    assert_null(osbq_secrets_load(path, &err));
    assert_non_null(strstr(err.text, "writable by group or others"));
    assert_int_equal(chmod(path, 0644), 0); /* readable: a warning only */
    struct osbq_secrets *s = osbq_secrets_load(path, &err);
    assert_non_null(s);
    osbq_secrets_destroy(&s);
    (void)unlink(path);
    assert_null(osbq_secrets_load("/nonexistent/osbq-keys", &err));
    assert_non_null(strstr(err.text, "cannot open"));
}

/* A Kubernetes Secret volume: the key is a link through ..data to a timestamped directory;
 * it is read. A link to something that is not a regular file is refused. */
static void test_load_through_links(void **state)
{
    (void)state;
    char dir[64];
    (void)snprintf(dir, sizeof dir, "/tmp/osbq-test-secret-volume-XXXXXX");
    assert_non_null(mkdtemp(dir));
    char stamp[96], data[96], file[128], link[96], dir_link[96];
    (void)snprintf(stamp, sizeof stamp, "%s/..2026_01_01", dir);
    (void)snprintf(data, sizeof data, "%s/..data", dir);
    (void)snprintf(file, sizeof file, "%s/secret_keys", stamp);
    (void)snprintf(link, sizeof link, "%s/secret_keys", dir);
    (void)snprintf(dir_link, sizeof dir_link, "%s/a_directory", dir);
    assert_int_equal(mkdir(stamp, 0755), 0);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    assert_true(fputs(KEY_A "\n", f) >= 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(file, 0440), 0);
    assert_int_equal(symlink("..2026_01_01", data), 0);
    assert_int_equal(symlink("..data/secret_keys", link), 0);
    struct osbq_error err = {0};
    struct osbq_secrets *s = osbq_secrets_load(link, &err);
    if (s == NULL)
        fail_msg("%s", err.text);
    assert_int_equal(osbq_secrets_count(s), 1);
    osbq_secrets_destroy(&s);
    assert_int_equal(symlink("..2026_01_01", dir_link), 0);
    assert_null(osbq_secrets_load(dir_link, &err));
    assert_non_null(strstr(err.text, "not a regular file"));
    (void)unlink(dir_link);
    (void)unlink(link);
    (void)unlink(data);
    (void)unlink(file);
    (void)rmdir(stamp);
    (void)rmdir(dir);
}

static void test_round_trip(void **state)
{
    (void)state;
    struct osbq_error err = {0};
    struct osbq_secrets *s = load(KEY_A "\n", &err);
    char *sealed = osbq_secrets_seal(s, &place, credentials, strlen(credentials));
    assert_non_null(sealed);
    assert_true(osbq_secrets_is_sealed(sealed));
    assert_null(strstr(sealed, "p4ss"));
    char head[64];
    (void)snprintf(head, sizeof head, "osbq:v1:%s:", osbq_secrets_current_id(s));
    assert_memory_equal(sealed, head, strlen(head));
    /* A fresh nonce each time: the same plaintext never seals to the same text. */
    char *again = osbq_secrets_seal(s, &place, credentials, strlen(credentials));
    assert_string_not_equal(sealed, again);
    assert_opens(s, sealed, 1, credentials, "the first sealing");
    assert_opens(s, again, 1, credentials, "the second sealing");
    /* An empty value seals and opens too. */
    char *empty = osbq_secrets_seal(s, &place, "", 0);
    assert_opens(s, empty, 1, "", "an empty value");
    free(empty);
    free(sealed);
    free(again);
    osbq_secrets_destroy(&s);
}

static void test_tampered(void **state)
{
    (void)state;
    struct osbq_error err = {0};
    struct osbq_secrets *s = load(KEY_A "\n", &err);
    char *sealed = osbq_secrets_seal(s, &place, credentials, strlen(credentials));
    size_t len = strlen(sealed);
    size_t head = strlen("osbq:v1:") + 17;
    /* Every byte of nonce, ciphertext and tag matters: flip each base64 character in turn. */
    for (size_t i = head; i < len; i++) {
        char saved = sealed[i];
        sealed[i] = saved == 'A' ? 'B' : 'A';
        char *plain = NULL;
        int rc = osbq_secrets_open(s, &place, sealed, &plain, &err);
        sealed[i] = saved;
        /* The last character may carry unused bits: a strict decoder refuses those too. */
        if (rc != -1)
            fail_msg("byte %zu altered still opens", i);
        assert_null(plain);
        assert_int_equal(err.code, OSBQ_ERR_INTERNAL);
    }
    char *plain = NULL;
    /* Truncated, malformed and unknown versions. */
    sealed[len - 8] = '\0';
    assert_int_equal(osbq_secrets_open(s, &place, sealed, &plain, &err), -1);
    assert_int_equal(osbq_secrets_open(s, &place, "osbq:v1:short", &plain, &err), -1);
    assert_non_null(strstr(err.text, "malformed"));
    assert_int_equal(osbq_secrets_open(s, &place, "osbq:v9:0011223344556677:AAAA", &plain, &err),
                     -1);
    assert_non_null(strstr(err.text, "format"));
    free(sealed);
    osbq_secrets_destroy(&s);
}

static void test_other_place(void **state)
{
    (void)state;
    struct osbq_error err = {0};
    struct osbq_secrets *s = load(KEY_A "\n", &err);
    char *sealed = osbq_secrets_seal(s, &place, credentials, strlen(credentials));
    static const struct osbq_secret_place others[] = {
        {"osbq", "instance-1", "binding-2", NULL},
        {"osbq", "instance-2", "binding-1", NULL},
        {"other", "instance-1", "binding-1", NULL},
        /* The parts' boundaries count: not the same place as instance-1 / binding-1. */
        {"osbq", "instance-1binding-1", "", NULL},
        /* Another field of the same record is another place (decision 0058). */
        {"osbq", "instance-1", "binding-1", "parameters"},
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        char *plain = NULL;
        assert_int_equal(osbq_secrets_open(s, &others[i], sealed, &plain, &err), -1);
        assert_non_null(strstr(err.text, "does not open"));
        assert_null(plain);
    }
    free(sealed);
    osbq_secrets_destroy(&s);
}

static void test_wrong_key(void **state)
{
    (void)state;
    struct osbq_error err = {0};
    struct osbq_secrets *a = load(KEY_A "\n", &err);
    struct osbq_secrets *b = load(KEY_B "\n" KEY_C "\n", &err);
    char *sealed = osbq_secrets_seal(a, &place, credentials, strlen(credentials));
    char *plain = NULL;
    assert_int_equal(osbq_secrets_open(b, &place, sealed, &plain, &err), -1);
    assert_null(plain);
    assert_non_null(strstr(err.text, osbq_secrets_current_id(a)));
    assert_non_null(strstr(err.text, "not in OSBQ_SECRET_KEY_FILE"));
    /* No keys at all: the same clear refusal. */
    assert_int_equal(osbq_secrets_open(NULL, &place, sealed, &plain, &err), -1);
    assert_non_null(strstr(err.text, "OSBQ_SECRET_KEY_FILE is not set"));
    assert_non_null(strstr(err.text, osbq_secrets_current_id(a)));
    /* A forged id naming b's key does not make a's ciphertext open under b. */
    memcpy(sealed + strlen("osbq:v1:"), osbq_secrets_current_id(b), 16);
    assert_int_equal(osbq_secrets_open(b, &place, sealed, &plain, &err), -1);
    assert_non_null(strstr(err.text, "does not open"));
    free(sealed);
    osbq_secrets_destroy(&a);
    osbq_secrets_destroy(&b);
}

static void test_rotation(void **state)
{
    (void)state;
    struct osbq_error err = {0};
    struct osbq_secrets *old = load(KEY_A "\n", &err);
    struct osbq_secrets *rotated = load(KEY_B "\n" KEY_A "\n", &err);
    char *before = osbq_secrets_seal(old, &place, credentials, strlen(credentials));
    char *after = osbq_secrets_seal(rotated, &place, credentials, strlen(credentials));
    /* New values name the new first key. */
    assert_memory_equal(after + strlen("osbq:v1:"), osbq_secrets_current_id(rotated), 16);
    assert_memory_not_equal(after + strlen("osbq:v1:"), osbq_secrets_current_id(old), 16);
    assert_opens(rotated, before, 1, credentials, "sealed before the rotation");
    assert_opens(rotated, after, 1, credentials, "sealed after the rotation");
    char *plain = NULL;
    /* The old ring cannot read what the new first key sealed. */
    assert_int_equal(osbq_secrets_open(old, &place, after, &plain, &err), -1);
    free(before);
    free(after);
    osbq_secrets_destroy(&old);
    osbq_secrets_destroy(&rotated);
}

static void test_plaintext_passthrough(void **state)
{
    (void)state;
    struct osbq_error err = {0};
    struct osbq_secrets *s = load(KEY_A "\n", &err);
    /* Written before keys were configured: read as it is, with keys or without. */
    assert_false(osbq_secrets_is_sealed(credentials));
    assert_opens(s, credentials, 0, credentials, "plaintext with keys");
    assert_opens(NULL, credentials, 0, credentials, "plaintext without keys");
    /* Not NULL beforehand, so that the refusal is seen to set it to NULL. */
    char stale[] = "stale";
    char *plain = stale;
    /* Anything with the prefix is sealed and must open: no fallback to plaintext. */
    assert_true(osbq_secrets_is_sealed("osbq:"));
    assert_int_equal(osbq_secrets_open(s, &place, "osbq:", &plain, &err), -1);
    assert_null(plain);
    osbq_secrets_free_text(NULL);
    osbq_secrets_destroy(&s);
}

/* A request's values are sealed field by field (decision 0058), and opened in place. */
static void test_fields_in_place(void **state)
{
    (void)state;
    struct osbq_error err = {0};
    struct osbq_secrets *s = load(KEY_A "\n", &err);
    static const struct osbq_secret_place parameters = {"osbq", "instance-1", "", "parameters"};
    static const struct osbq_secret_place context = {"osbq", "instance-1", "", "context"};
    const char *value = "{\"password\":\"hunter2\"}";
    char *text = osbq_secrets_seal(s, &parameters, value, strlen(value));
    assert_non_null(text);
    assert_null(strstr(text, "hunter2"));
    char *kept = strdup(text);
    /* Moved into another field of the same record, it does not open, and stays as it was. */
    assert_int_equal(osbq_secrets_open_in_place(s, &context, &text, &err), -1);
    assert_string_equal(text, kept);
    assert_int_equal(osbq_secrets_open_in_place(s, &parameters, &text, &err), 1);
    assert_string_equal(text, value);
    /* Plaintext (a previous release's) and NULL are left as they are. */
    assert_int_equal(osbq_secrets_open_in_place(s, &parameters, &text, &err), 0);
    assert_string_equal(text, value);
    osbq_secrets_free_text(text);
    text = NULL;
    assert_int_equal(osbq_secrets_open_in_place(s, &parameters, &text, &err), 0);
    assert_null(text);
    /* Without keys, a sealed value does not open and says why. */
    assert_int_equal(osbq_secrets_open_in_place(NULL, &parameters, &kept, &err), -1);
    assert_non_null(strstr(err.text, "OSBQ_SECRET_KEY_FILE is not set"));
    free(kept);
    osbq_secrets_destroy(&s);
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_good),
        cmocka_unit_test(test_load_bad),
        cmocka_unit_test(test_load_too_many),
        cmocka_unit_test(test_load_mode),
        cmocka_unit_test(test_load_through_links),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_tampered),
        cmocka_unit_test(test_other_place),
        cmocka_unit_test(test_wrong_key),
        cmocka_unit_test(test_rotation),
        cmocka_unit_test(test_plaintext_passthrough),
        cmocka_unit_test(test_fields_in_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
