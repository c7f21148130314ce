/* The C <-> Lua contract of the store's scripts, without a server: every script's header
 * ("-- KEYS[1] op: ...", "-- ARGV[3] now: ...", as embedded from store/lua) names, in order,
 * the entries of its KEYS and ARGV enums in store/store_scripts.h. A swap, a missing or an
 * extra entry on either side fails here, before a script reads the wrong argument. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_scripts.h"

enum { NAMES_MAX = 48, NAME_MAX_LEN = 64 };

/* One side of a header: the names of KEYS or ARGV, 1-based positions in order. */
struct header_list {
    char names[NAMES_MAX][NAME_MAX_LEN];
    size_t count;
};

/* Reads the "-- <what>[n] name:" lines of text into *out. Returns 0, or -1 (with why) when a
 * line is malformed or out of order. */
static int header_parse(const char *text, const char *what, struct header_list *out, char *why,
                        size_t why_size)
{
    char mark[16];
    (void)snprintf(mark, sizeof mark, "\n-- %s[", what);
    out->count = 0;
    for (const char *at = strstr(text, mark); at != NULL; at = strstr(at + 1, mark)) {
        const char *p = at + strlen(mark);
        char *end = NULL;
        unsigned long n = strtoul(p, &end, 10);
        if (end == p || strncmp(end, "] ", 2) != 0 || n != out->count + 1 ||
            out->count == NAMES_MAX) {
            (void)snprintf(why, why_size, "%s entry %zu: bad or out-of-order position", what,
                           out->count + 1);
            return -1;
        }
        p = end + 2;
        size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
        if (len == 0 || len >= NAME_MAX_LEN || p[len] != ':') {
            (void)snprintf(why, why_size, "%s[%lu]: no \"name:\"", what, n);
            return -1;
        }
        memcpy(out->names[out->count], p, len);
        out->names[out->count][len] = '\0';
        out->count++;
    }
    return 0;
}

/* Compares one side: C names "<SCRIPT>_<KIND>_<NAME>" against the Lua names. 0, or -1 with
 * why. */
static int side_agrees(const char *script, const char *kind, const char *const *c_names,
                       size_t c_count, const struct header_list *lua, char *why, size_t why_size)
{
    if (c_count != lua->count) {
        (void)snprintf(why, why_size, "%s: %zu %s entries in C, %zu in the script", script, c_count,
                       kind, lua->count);
        return -1;
    }
    for (size_t i = 0; i < c_count; i++) {
        char expected[160];
        int n = snprintf(expected, sizeof expected, "%s_%s_%s", script, kind, lua->names[i]);
        for (int k = 0; k < n; k++)
            expected[k] = (char)toupper((unsigned char)expected[k]);
        if (c_names[i] == NULL || strcmp(c_names[i], expected) != 0) {
            (void)snprintf(why, why_size, "%s %s[%zu]: C has %s, the script %s", script,
                           strcmp(kind, "key") == 0 ? "KEYS" : "ARGV", i + 1,
                           c_names[i] ? c_names[i] : "(nothing)", lua->names[i]);
            return -1;
        }
    }
    return 0;
}

/* Whether script's text and its C contract agree; why says where not. */
static int contract_agrees(const char *script, const char *text,
                           const struct store_script_contract *c, char *why, size_t why_size)
{
    struct header_list keys, args;
    if (header_parse(text, "KEYS", &keys, why, why_size) < 0 ||
        header_parse(text, "ARGV", &args, why, why_size) < 0)
        return -1;
    if (side_agrees(script, "key", c->keys, c->key_count, &keys, why, why_size) < 0 ||
        side_agrees(script, "arg", c->args, c->arg_count, &args, why, why_size) < 0)
        return -1;
    return 0;
}

static void test_every_script_agrees(void **state)
{
    (void)state;
    for (size_t s = 0; s < SCRIPT_COUNT; s++) {
        char why[256] = "";
        const char *name = store_script_texts[s].name;
        if (contract_agrees(name, store_script_texts[s].text, &store_script_contracts[s], why,
                            sizeof why) < 0)
            fail_msg("%s.lua: %s", name, why);
        /* A script with no header at all would agree with an empty contract. */
        assert_true(store_script_contracts[s].key_count > 0);
        assert_true(store_script_contracts[s].arg_count > 0);
    }
}

/* The check itself catches a swap on the Lua side. */
static void test_swapped_script_header_fails(void **state)
{
    (void)state;
    const struct store_script_contract *claim = &store_script_contracts[SCRIPT_CLAIM];
    char why[256] = "";
    const char *good = "-- claim\n-- KEYS[1] op: x\n-- KEYS[2] queue: x\n"
                       "-- ARGV[1] worker_id: x\n-- ARGV[2] attempt: x\n-- ARGV[3] now: x\n"
                       "-- ARGV[4] lease: x\n-- ARGV[5] operation_id: x\n-- ARGV[6] prefix: x\n";
    const char *swapped = "-- claim\n-- KEYS[1] op: x\n-- KEYS[2] queue: x\n"
                          "-- ARGV[1] worker_id: x\n-- ARGV[2] now: x\n-- ARGV[3] attempt: x\n"
                          "-- ARGV[4] lease: x\n-- ARGV[5] operation_id: x\n-- ARGV[6] prefix: x\n";
    const char *short_keys =
        "-- claim\n-- KEYS[1] op: x\n"
        "-- ARGV[1] worker_id: x\n-- ARGV[2] attempt: x\n-- ARGV[3] now: x\n"
        "-- ARGV[4] lease: x\n-- ARGV[5] operation_id: x\n-- ARGV[6] prefix: x\n";
    const char *misnumbered = "-- claim\n-- KEYS[2] op: x\n-- KEYS[1] queue: x\n";
    assert_int_equal(contract_agrees("claim", good, claim, why, sizeof why), 0);
    assert_int_equal(contract_agrees("claim", swapped, claim, why, sizeof why), -1);
    assert_non_null(strstr(why, "ARGV[2]"));
    assert_int_equal(contract_agrees("claim", short_keys, claim, why, sizeof why), -1);
    assert_int_equal(contract_agrees("claim", misnumbered, claim, why, sizeof why), -1);
}

/* ... and a swap on the C side. */
static void test_swapped_enum_fails(void **state)
{
    (void)state;
    const struct store_script_contract *real = &store_script_contracts[SCRIPT_CLAIM];
    const char *args[CLAIM_ARG_COUNT];
    memcpy(args, real->args, sizeof args);
    args[CLAIM_ARG_ATTEMPT] = real->args[CLAIM_ARG_NOW];
    args[CLAIM_ARG_NOW] = real->args[CLAIM_ARG_ATTEMPT];
    struct store_script_contract swapped = *real;
    swapped.args = args;
    char why[256] = "";
    assert_int_equal(
        contract_agrees("claim", store_script_texts[SCRIPT_CLAIM].text, &swapped, why, sizeof why),
        -1);
    assert_non_null(strstr(why, "ARGV[2]"));
    args[CLAIM_ARG_NOW] = NULL; /* an enum entry its table left out */
    assert_int_equal(
        contract_agrees("claim", store_script_texts[SCRIPT_CLAIM].text, &swapped, why, sizeof why),
        -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_script_agrees),
        cmocka_unit_test(test_swapped_script_header_fails),
        cmocka_unit_test(test_swapped_enum_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
