/* The C <-> Lua contract of the store's scripts, without a server: every script (as embedded
 * from store/lua) declares its keys and arguments in two tables before its code, "local KEY = {"
 * with one "  op = KEYS[1]," a line, and "local ARG = {" the same with ARGV; in order, they name
 * the entries of the script's KEYS and ARGV enums in store/store_scripts.h. The rest of the script
 * reads them only by those names (KEY.op, ARG.now), never KEYS[n] or ARGV[n]. A swap, a missing
 * or an extra entry on either side, or a name the tables do not declare fails here, before a
 * script reads the wrong argument or nil. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_scripts.h"

enum { NAMES_MAX = 48, NAME_MAX_LEN = 64 };

/* One side of a script's declaration: the names of KEYS or ARGV, 1-based positions in order,
 * and where in the text the table declaring them is (NULL when there is none). */
struct name_list {
    char names[NAMES_MAX][NAME_MAX_LEN];
    size_t count;
    const char *begin, *end;
};

/* Takes name, 1-based position n, as the next entry of out. 0, or -1 with why. */
static int name_add(struct name_list *out, const char *source, unsigned long n, const char *name,
                    size_t len, char *why, size_t why_size)
{
    if (n != out->count + 1 || out->count == NAMES_MAX) {
        (void)snprintf(why, why_size, "%s entry %zu: bad or out-of-order position", source,
                       out->count + 1);
        return -1;
    }
    if (len == 0 || len >= NAME_MAX_LEN) {
        (void)snprintf(why, why_size, "%s[%lu]: no name", source, n);
        return -1;
    }
    memcpy(out->names[out->count], name, len);
    out->names[out->count][len] = '\0';
    out->count++;
    return 0;
}

/* Reads "<source>[<n>]" at p (source: KEYS or ARGV) into *n; returns what follows, or NULL. */
static const char *position_parse(const char *p, const char *source, unsigned long *n)
{
    size_t source_len = strlen(source);
    if (strncmp(p, source, source_len) != 0 || p[source_len] != '[')
        return NULL;
    p += source_len + 1;
    char *end = NULL;
    *n = strtoul(p, &end, 10);
    return end != p && *end == ']' ? end + 1 : NULL;
}

static const char *const NAME_CHARS = "abcdefghijklmnopqrstuvwxyz_";

/* Reads the table that declares a script's keys (table "KEY", source "KEYS") or arguments
 * ("ARG", "ARGV") into *out: "local KEY = {" on a line of its own, then one entry a line,
 * "  op = KEYS[1],", each optionally followed by a comment, lines of comment only between them,
 * and "}" closing it. No table: an empty list. 0, or -1 (with why) when an entry is malformed
 * or out of order, or the table is declared twice. */
static int table_parse(const char *text, const char *table, const char *source,
                       struct name_list *out, char *why, size_t why_size)
{
    char opener[32];
    (void)snprintf(opener, sizeof opener, "\nlocal %s = {\n", table);
    out->count = 0;
    out->begin = out->end = NULL;
    const char *at = strstr(text, opener);
    if (at == NULL)
        return 0;
    if (strstr(at + 1, opener) != NULL) {
        (void)snprintf(why, why_size, "%s declared twice", table);
        return -1;
    }
    out->begin = at + 1;
    for (const char *line = at + strlen(opener); *line != '\0';) {
        const char *p = line + strspn(line, " ");
        const char *next = strchr(p, '\n');
        next = next != NULL ? next + 1 : p + strlen(p);
        if (*p == '}') {
            out->end = p + 1;
            return 0;
        }
        if (strncmp(p, "--", 2) != 0) {
            size_t len = strspn(p, NAME_CHARS);
            unsigned long n = 0;
            const char *after =
                strncmp(p + len, " = ", 3) == 0 ? position_parse(p + len + 3, source, &n) : NULL;
            if (after == NULL || *after != ',') {
                (void)snprintf(why, why_size, "%s entry %zu: not \"name = %s[n],\"", table,
                               out->count + 1, source);
                return -1;
            }
            if (name_add(out, source, n, p, len, why, why_size) < 0)
                return -1;
        }
        line = next;
    }
    (void)snprintf(why, why_size, "%s: no closing }", table);
    return -1;
}

/* Compares one side: C names "<SCRIPT>_<KIND>_<NAME>" against the Lua names. 0, or -1 with
 * why. */
static int side_agrees(const char *script, const char *kind, const char *const *c_names,
                       size_t c_count, const struct name_list *lua, char *why, size_t why_size)
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
    struct name_list keys, args;
    if (table_parse(text, "KEY", "KEYS", &keys, why, why_size) < 0 ||
        table_parse(text, "ARG", "ARGV", &args, why, why_size) < 0)
        return -1;
    if (side_agrees(script, "key", c->keys, c->key_count, &keys, why, why_size) < 0 ||
        side_agrees(script, "arg", c->args, c->arg_count, &args, why, why_size) < 0)
        return -1;
    return 0;
}

/* The line of text holding at, for a message: its start, its length in *len. */
static const char *line_around(const char *text, const char *at, int *len)
{
    const char *start = at;
    while (start > text && start[-1] != '\n')
        start--;
    *len = (int)strcspn(start, "\n");
    return start;
}

/* Whether word (KEY or ARG, at its place in text) is read as word.<name> with a name list
 * declares, after list's table; 0, or -1 with why. */
static int use_declared(const char *text, const char *word, const struct name_list *list, char *why,
                        size_t why_size)
{
    int line_len;
    const char *line = line_around(text, word, &line_len);
    const char *dot = word + 3;
    size_t len = *dot == '.' ? strspn(dot + 1, NAME_CHARS) : 0;
    if (list->begin == NULL || word < list->begin) {
        (void)snprintf(why, why_size, "%.3s read before its table: \"%.*s\"", word, line_len, line);
        return -1;
    }
    for (size_t i = 0; len > 0 && i < list->count; i++)
        if (strlen(list->names[i]) == len && strncmp(list->names[i], dot + 1, len) == 0)
            return 0;
    if (len == 0)
        (void)snprintf(why, why_size, "%.3s read other than by name: \"%.*s\"", word, line_len,
                       line);
    else
        (void)snprintf(why, why_size, "%.3s.%.*s is not declared: \"%.*s\"", word, (int)len,
                       dot + 1, line_len, line);
    return -1;
}

/* Whether the code of text reads its keys and arguments only by a declared name: KEYS and
 * ARGV only inside the tables, KEY and ARG only as KEY.<name> and ARG.<name>, after them and
 * with a name the table declares. Comments and quoted strings are skipped (the scripts use no
 * long brackets). 0, or -1 with why. */
static int reads_declared(const char *text, char *why, size_t why_size)
{
    struct name_list keys, args;
    if (table_parse(text, "KEY", "KEYS", &keys, why, why_size) < 0 ||
        table_parse(text, "ARG", "ARGV", &args, why, why_size) < 0)
        return -1;
    for (const char *p = text; *p != '\0';) {
        if (keys.begin != NULL && p >= keys.begin && p < keys.end) {
            p = keys.end;
        } else if (args.begin != NULL && p >= args.begin && p < args.end) {
            p = args.end;
        } else if (strncmp(p, "--", 2) == 0) {
            p += strcspn(p, "\n");
        } else if (*p == '\'' || *p == '"') {
            char quote = *p++;
            while (*p != '\0' && *p != quote && *p != '\n')
                p += p[0] == '\\' && p[1] != '\0' ? 2 : 1;
            if (*p == quote)
                p++;
        } else if (isalpha((unsigned char)*p) || *p == '_') {
            const char *word = p;
            while (isalnum((unsigned char)*p) || *p == '_')
                p++;
            size_t len = (size_t)(p - word);
            if (word > text && word[-1] == '.') /* a field: x.KEY is not the table */
                continue;
            bool positional =
                len == 4 && (strncmp(word, "KEYS", 4) == 0 || strncmp(word, "ARGV", 4) == 0);
            if (positional) {
                int line_len;
                const char *line = line_around(text, word, &line_len);
                (void)snprintf(why, why_size, "%.4s read outside its table: \"%.*s\"", word,
                               line_len, line);
                return -1;
            }
            if (len == 3 && strncmp(word, "KEY", 3) == 0 &&
                use_declared(text, word, &keys, why, why_size) < 0)
                return -1;
            if (len == 3 && strncmp(word, "ARG", 3) == 0 &&
                use_declared(text, word, &args, why, why_size) < 0)
                return -1;
        } else {
            p++;
        }
    }
    return 0;
}

static void test_every_script_agrees(void **state)
{
    (void)state;
    for (size_t s = 0; s < SCRIPT_COUNT; s++) {
        char why[256] = "";
        const char *name = store_script_texts[s].name;
        const char *text = store_script_texts[s].text;
        if (contract_agrees(name, text, &store_script_contracts[s], why, sizeof why) < 0)
            fail_msg("%s.lua: %s", name, why);
        if (reads_declared(text, why, sizeof why) < 0)
            fail_msg("%s.lua: %s", name, why);
        /* A script with no tables at all would agree with an empty contract. */
        assert_true(store_script_contracts[s].key_count > 0);
        assert_true(store_script_contracts[s].arg_count > 0);
    }
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

/* The tables: claim's declaration, then a body. */
#define CLAIM_TABLES                                                                               \
    "-- claim\n"                                                                                   \
    "local KEY = {\n"                                                                              \
    "  op = KEYS[1],     -- the operation hash\n"                                                  \
    "  queue = KEYS[2],\n"                                                                         \
    "}\n"                                                                                          \
    "local ARG = {\n"                                                                              \
    "  worker_id = ARGV[1],\n"                                                                     \
    "  attempt = ARGV[2],  -- a comment\n"                                                         \
    "                      -- over two lines\n"                                                    \
    "  now = ARGV[3],\n"                                                                           \
    "  lease = ARGV[4],\n"                                                                         \
    "  operation_id = ARGV[5],\n"                                                                  \
    "  prefix = ARGV[6],\n"                                                                        \
    "}\n"

/* The check itself catches a swap on the Lua side, and a misnumbered, missing or unclosed table
 * or one declared twice. */
static void test_swapped_script_table_fails(void **state)
{
    (void)state;
    const struct store_script_contract *claim = &store_script_contracts[SCRIPT_CLAIM];
    char why[256] = "";
    const char *swapped = "-- claim\n"
                          "local KEY = {\n  op = KEYS[1],\n  queue = KEYS[2],\n}\n"
                          "local ARG = {\n  worker_id = ARGV[1],\n  now = ARGV[2],\n"
                          "  attempt = ARGV[3],\n  lease = ARGV[4],\n  operation_id = ARGV[5],\n"
                          "  prefix = ARGV[6],\n}\n";
    const char *swapped_keys = "-- claim\nlocal KEY = {\n  queue = KEYS[1],\n  op = KEYS[2],\n}\n";
    const char *misnumbered = "-- claim\nlocal KEY = {\n  op = KEYS[2],\n  queue = KEYS[1],\n}\n";
    const char *short_keys = "-- claim\nlocal KEY = {\n  op = KEYS[1],\n}\n";
    const char *unclosed = "-- claim\nlocal KEY = {\n  op = KEYS[1],\n";
    const char *twice = CLAIM_TABLES "local KEY = {\n  op = KEYS[1],\n}\n";
    assert_int_equal(contract_agrees("claim", CLAIM_TABLES, claim, why, sizeof why), 0);
    assert_int_equal(contract_agrees("claim", swapped, claim, why, sizeof why), -1);
    assert_non_null(strstr(why, "ARGV[2]"));
    assert_int_equal(contract_agrees("claim", swapped_keys, claim, why, sizeof why), -1);
    assert_non_null(strstr(why, "KEYS[1]"));
    assert_int_equal(contract_agrees("claim", misnumbered, claim, why, sizeof why), -1);
    assert_int_equal(contract_agrees("claim", short_keys, claim, why, sizeof why), -1);
    assert_int_equal(contract_agrees("claim", unclosed, claim, why, sizeof why), -1);
    assert_int_equal(contract_agrees("claim", twice, claim, why, sizeof why), -1);
}

/* A body reads its keys and arguments by the names its tables declare, and only so. */
static void test_undeclared_name_fails(void **state)
{
    (void)state;
    char why[256] = "";
    const char *good = CLAIM_TABLES "local op = redis.call('HGET', KEY.op, 'KEYS') -- ARGV[1]\n"
                                    "return ARG.now .. \"ARG.nope\" .. op.KEY\n";
    const char *undeclared = CLAIM_TABLES "return ARG.nope\n";
    const char *positional = CLAIM_TABLES "return ARGV[3]\n";
    const char *whole = CLAIM_TABLES "return unpack(ARG)\n";
    const char *before = "-- claim\nlocal early = KEY.op\n" CLAIM_TABLES;
    const char *no_table = "-- claim\nreturn KEY.op\n";
    assert_int_equal(reads_declared(good, why, sizeof why), 0);
    assert_int_equal(reads_declared(undeclared, why, sizeof why), -1);
    assert_non_null(strstr(why, "ARG.nope"));
    assert_int_equal(reads_declared(positional, why, sizeof why), -1);
    assert_non_null(strstr(why, "ARGV"));
    assert_int_equal(reads_declared(whole, why, sizeof why), -1);
    assert_int_equal(reads_declared(before, why, sizeof why), -1);
    assert_int_equal(reads_declared(no_table, why, sizeof why), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_script_agrees),
        cmocka_unit_test(test_swapped_enum_fails),
        cmocka_unit_test(test_swapped_script_table_fails),
        cmocka_unit_test(test_undeclared_name_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
