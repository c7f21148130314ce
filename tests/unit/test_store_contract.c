/* The C <-> Lua contract of the store's scripts, without a server: every script (as embedded
 * from store/lua) declares its keys and arguments before its code, one a line:
 * "local key_op = KEYS[1]" and "local arg_now = ARGV[3]", each optionally followed by a comment
 * (decision 0046). In order, they name the entries of the script's KEYS and ARGV enums in
 * store/store_scripts.h. The rest of the script reads them only by those names (key_op, arg_now),
 * never KEYS[n] or ARGV[n]. A swap, a missing or an extra entry on either side, or a name the
 * declarations do not declare fails here, before a script reads the wrong argument or nil. */
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
#include "test_main.h"

enum { NAMES_MAX = 48, NAME_MAX_LEN = 64 };

/* One side of a script's declarations: the names of KEYS or ARGV, 1-based positions in order,
 * and where in the text the first of them is (NULL when there is none). */
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

/* The length of the declaration at line ("local <prefix><name> = <source>[<n>]", then the
 * line's end, or spaces and a comment), its name and position in *name, *name_len and *n; 0
 * when line declares nothing of prefix; -1 when it starts as one but is malformed. */
static int declaration_parse(const char *line, const char *prefix, const char *source,
                             const char **name, size_t *name_len, unsigned long *n)
{
    char opener[16];
    (void)snprintf(opener, sizeof opener, "local %s", prefix);
    if (strncmp(line, opener, strlen(opener)) != 0)
        return 0;
    *name = line + strlen(opener);
    *name_len = strspn(*name, NAME_CHARS);
    const char *p = *name + *name_len;
    const char *after = strncmp(p, " = ", 3) == 0 ? position_parse(p + 3, source, n) : NULL;
    if (after == NULL)
        return -1;
    after += strspn(after, " ");
    if (*after != '\0' && *after != '\n' && strncmp(after, "--", 2) != 0)
        return -1;
    return (int)(strcspn(line, "\n"));
}

/* Reads the declarations of a script's keys (prefix "key_", source "KEYS") or arguments
 * ("arg_", "ARGV") into *out: every line that starts "local key_", in the text's order. None:
 * an empty list. 0, or -1 (with why) when one is malformed or out of order (declared twice
 * included). */
static int declarations_parse(const char *text, const char *prefix, const char *source,
                              struct name_list *out, char *why, size_t why_size)
{
    out->count = 0;
    out->begin = out->end = NULL;
    for (const char *line = text; *line != '\0';) {
        const char *name = NULL;
        size_t len = 0;
        unsigned long n = 0;
        int found = declaration_parse(line, prefix, source, &name, &len, &n);
        if (found < 0) {
            (void)snprintf(why, why_size, "%s entry %zu: not \"local %sname = %s[n]\"", source,
                           out->count + 1, prefix, source);
            return -1;
        }
        if (found > 0) {
            if (name_add(out, source, n, name, len, why, why_size) < 0)
                return -1;
            if (out->begin == NULL)
                out->begin = line;
            out->end = line + found;
        }
        const char *next = strchr(line, '\n');
        line = next != NULL ? next + 1 : line + strlen(line);
    }
    return 0;
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
    if (declarations_parse(text, "key_", "KEYS", &keys, why, why_size) < 0 ||
        declarations_parse(text, "arg_", "ARGV", &args, why, why_size) < 0)
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

/* Whether word (key_<name> or arg_<name>, at its place in text, len long) names an entry
 * list declares, after its declaration; 0, or -1 with why. */
static int use_declared(const char *text, const char *word, size_t len,
                        const struct name_list *list, char *why, size_t why_size)
{
    int line_len;
    const char *line = line_around(text, word, &line_len);
    const char *name = word + 4;
    size_t name_len = len - 4;
    for (size_t i = 0; i < list->count; i++) {
        if (strlen(list->names[i]) != name_len || strncmp(list->names[i], name, name_len) != 0)
            continue;
        if (list->begin == NULL || word < list->begin) {
            (void)snprintf(why, why_size, "%.*s read before its declaration: \"%.*s\"", (int)len,
                           word, line_len, line);
            return -1;
        }
        return 0;
    }
    (void)snprintf(why, why_size, "%.*s is not declared: \"%.*s\"", (int)len, word, line_len, line);
    return -1;
}

/* Whether the code of text reads its keys and arguments only by a declared name: KEYS and
 * ARGV only in the declarations, key_<name> and arg_<name> only with a name they declare,
 * after it. Comments and quoted strings are skipped (the scripts use no long brackets). 0, or
 * -1 with why. */
static int reads_declared(const char *text, char *why, size_t why_size)
{
    struct name_list keys, args;
    if (declarations_parse(text, "key_", "KEYS", &keys, why, why_size) < 0 ||
        declarations_parse(text, "arg_", "ARGV", &args, why, why_size) < 0)
        return -1;
    for (const char *p = text; *p != '\0';) {
        const char *name = NULL;
        size_t name_len = 0;
        unsigned long n = 0;
        bool line_start = p == text || p[-1] == '\n';
        int declaration = 0;
        if (line_start) {
            declaration = declaration_parse(p, "key_", "KEYS", &name, &name_len, &n);
            if (declaration == 0)
                declaration = declaration_parse(p, "arg_", "ARGV", &name, &name_len, &n);
        }
        if (declaration > 0) {
            p += declaration;
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
            if (word > text && word[-1] == '.') /* a field: x.arg_now is not the argument */
                continue;
            bool positional =
                len == 4 && (strncmp(word, "KEYS", 4) == 0 || strncmp(word, "ARGV", 4) == 0);
            if (positional) {
                int line_len;
                const char *line = line_around(text, word, &line_len);
                (void)snprintf(why, why_size, "%.4s read outside its declarations: \"%.*s\"", word,
                               line_len, line);
                return -1;
            }
            if (len > 4 && strncmp(word, "key_", 4) == 0 &&
                use_declared(text, word, len, &keys, why, why_size) < 0)
                return -1;
            if (len > 4 && strncmp(word, "arg_", 4) == 0 &&
                use_declared(text, word, len, &args, why, why_size) < 0)
                return -1;
        } else {
            p++;
        }
    }
    return 0;
}

/* Reads the names of a list ("a, b,\n c") from p up to stop (a character not in a name, a comma
 * or white space) into out; returns where it stopped, or NULL when a list entry is empty or
 * out is full. */
static const char *names_parse(const char *p, char stop, struct name_list *out)
{
    out->count = 0;
    for (;;) {
        p += strspn(p, " \n");
        size_t len = strspn(p, NAME_CHARS);
        if (len == 0 || len >= NAME_MAX_LEN || out->count == NAMES_MAX)
            return NULL;
        memcpy(out->names[out->count], p, len);
        out->names[out->count++][len] = '\0';
        p += len;
        p += strspn(p, " \n");
        if (*p == stop)
            return p;
        if (*p != ',')
            return NULL;
        p++;
    }
}

/* Whether every record read into locals, "local op_state, op_kind =\n  unpack(redis.call(
 * 'HMGET', key, 'state', 'kind'))", names each local after the field at its place (a prefix
 * and the field's name, the prefix the same for all): a reader finds a field by the local's
 * name, so the two lists must not drift apart (decision 0046). 0, or -1 with why. */
static int hmget_locals_agree(const char *text, char *why, size_t why_size)
{
    static const char call[] = "unpack(redis.call('HMGET', ";
    for (const char *at = strstr(text, call); at != NULL; at = strstr(at + 1, call)) {
        int line_len;
        const char *line = line_around(text, at, &line_len);
        const char *start = at; /* the line "local a, b," that begins the statement */
        while (start > text && !(start[-1] == '\n' && strncmp(start, "local ", 6) == 0))
            start--;
        struct name_list locals, fields;
        const char *eq =
            strncmp(start, "local ", 6) == 0 ? names_parse(start + 6, '=', &locals) : NULL;
        if (eq == NULL || eq[strspn(eq + 1, " \n") + 1] != 'u') {
            (void)snprintf(why, why_size,
                           "an HMGET into locals without \"local a, b =\" before it: \"%.*s\"",
                           line_len, line);
            return -1;
        }
        const char *p = strchr(at + sizeof call - 1, ',');
        fields.count = 0;
        while (p != NULL && *p == ',' && fields.count < NAMES_MAX) {
            p += 1 + strspn(p + 1, " \n");
            size_t len = *p == '\'' ? strcspn(p + 1, "'") : 0;
            if (len == 0 || len >= NAME_MAX_LEN)
                break;
            memcpy(fields.names[fields.count], p + 1, len);
            fields.names[fields.count++][len] = '\0';
            p += len + 2;
        }
        const char *underscore = strchr(locals.names[0], '_');
        size_t prefix_len = underscore != NULL ? (size_t)(underscore - locals.names[0]) + 1 : 0;
        if (p == NULL || strncmp(p, "))", 2) != 0 || fields.count != locals.count ||
            prefix_len == 0) {
            (void)snprintf(why, why_size, "%zu locals for %zu fields: \"%.*s\"", locals.count,
                           fields.count, line_len, line);
            return -1;
        }
        for (size_t i = 0; i < locals.count; i++) {
            if (strncmp(locals.names[i], locals.names[0], prefix_len) != 0 ||
                strcmp(locals.names[i] + prefix_len, fields.names[i]) != 0) {
                (void)snprintf(why, why_size, "local %s reads field '%s'", locals.names[i],
                               fields.names[i]);
                return -1;
            }
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
        if (hmget_locals_agree(text, why, sizeof why) < 0)
            fail_msg("%s.lua: %s", name, why);
        /* A script with no declarations at all would agree with an empty contract. */
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

/* claim's declarations, then a body. */
#define CLAIM_DECLARATIONS                                                                         \
    "-- claim\n"                                                                                   \
    "local key_op = KEYS[1]     -- the operation hash\n"                                           \
    "local key_queue = KEYS[2]\n"                                                                  \
    "local arg_worker_id = ARGV[1]\n"                                                              \
    "local arg_attempt = ARGV[2]  -- a comment\n"                                                  \
    "                             -- over two lines\n"                                             \
    "local arg_now = ARGV[3]\n"                                                                    \
    "local arg_lease = ARGV[4]\n"                                                                  \
    "local arg_operation_id = ARGV[5]\n"                                                           \
    "local arg_prefix = ARGV[6]\n"

/* The check itself catches a swap on the Lua side, and a misnumbered, missing or malformed
 * declaration or one made twice. */
static void test_swapped_script_table_fails(void **state)
{
    (void)state;
    const struct store_script_contract *claim = &store_script_contracts[SCRIPT_CLAIM];
    char why[256] = "";
    const char *swapped = "-- claim\n"
                          "local key_op = KEYS[1]\nlocal key_queue = KEYS[2]\n"
                          "local arg_worker_id = ARGV[1]\nlocal arg_now = ARGV[2]\n"
                          "local arg_attempt = ARGV[3]\nlocal arg_lease = ARGV[4]\n"
                          "local arg_operation_id = ARGV[5]\nlocal arg_prefix = ARGV[6]\n";
    const char *swapped_keys = "-- claim\nlocal key_queue = KEYS[1]\nlocal key_op = KEYS[2]\n";
    const char *misnumbered = "-- claim\nlocal key_op = KEYS[2]\nlocal key_queue = KEYS[1]\n";
    const char *short_keys = "-- claim\nlocal key_op = KEYS[1]\n";
    const char *malformed = "-- claim\nlocal key_op = KEYS[1], 'x'\nlocal key_queue = KEYS[2]\n";
    const char *twice = CLAIM_DECLARATIONS "local key_op = KEYS[1]\n";
    assert_int_equal(contract_agrees("claim", CLAIM_DECLARATIONS, claim, why, sizeof why), 0);
    assert_int_equal(contract_agrees("claim", swapped, claim, why, sizeof why), -1);
    assert_non_null(strstr(why, "ARGV[2]"));
    assert_int_equal(contract_agrees("claim", swapped_keys, claim, why, sizeof why), -1);
    assert_non_null(strstr(why, "KEYS[1]"));
    assert_int_equal(contract_agrees("claim", misnumbered, claim, why, sizeof why), -1);
    assert_int_equal(contract_agrees("claim", short_keys, claim, why, sizeof why), -1);
    assert_int_equal(contract_agrees("claim", malformed, claim, why, sizeof why), -1);
    assert_int_equal(contract_agrees("claim", twice, claim, why, sizeof why), -1);
}

/* A body reads its keys and arguments by the names declared, and only so. */
static void test_undeclared_name_fails(void **state)
{
    (void)state;
    char why[256] = "";
    const char *good =
        CLAIM_DECLARATIONS "local op = redis.call('HGET', key_op, 'KEYS') -- ARGV[1]\n"
                           "return arg_now .. \"arg_nope\" .. op.key_x\n";
    const char *undeclared = CLAIM_DECLARATIONS "return arg_nope\n";
    const char *positional = CLAIM_DECLARATIONS "return ARGV[3]\n";
    const char *whole = CLAIM_DECLARATIONS "return unpack(ARGV)\n";
    const char *before = "-- claim\nlocal early = key_op\n" CLAIM_DECLARATIONS;
    const char *none = "-- claim\nreturn key_op\n";
    assert_int_equal(reads_declared(good, why, sizeof why), 0);
    assert_int_equal(reads_declared(undeclared, why, sizeof why), -1);
    assert_non_null(strstr(why, "arg_nope"));
    assert_int_equal(reads_declared(positional, why, sizeof why), -1);
    assert_non_null(strstr(why, "ARGV"));
    assert_int_equal(reads_declared(whole, why, sizeof why), -1);
    assert_int_equal(reads_declared(before, why, sizeof why), -1);
    assert_non_null(strstr(why, "before"));
    assert_int_equal(reads_declared(none, why, sizeof why), -1);
}

/* A record read into locals names each local after the field at its place. */
static void test_hmget_locals_drift_fails(void **state)
{
    (void)state;
    char why[256] = "";
    const char *good = "local x = 1\nlocal op_state, op_kind,\n      op_worker =\n"
                       "  unpack(redis.call('HMGET', key_op,\n"
                       "                    'state', 'kind', 'worker'))\n";
    const char *swapped = "local op_state, op_kind =\n"
                          "  unpack(redis.call('HMGET', key_op, 'kind', 'state'))\n";
    const char *short_list = "local op_state =\n"
                             "  unpack(redis.call('HMGET', key_op, 'state', 'kind'))\n";
    const char *mixed = "local op_state, inst_kind =\n"
                        "  unpack(redis.call('HMGET', key_op, 'state', 'kind'))\n";
    assert_int_equal(hmget_locals_agree(good, why, sizeof why), 0);
    assert_int_equal(hmget_locals_agree(swapped, why, sizeof why), -1);
    assert_non_null(strstr(why, "op_state"));
    assert_int_equal(hmget_locals_agree(short_list, why, sizeof why), -1);
    assert_int_equal(hmget_locals_agree(mixed, why, sizeof why), -1);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_every_script_agrees),
               cmocka_unit_test(test_swapped_enum_fails),
               cmocka_unit_test(test_swapped_script_table_fails),
               cmocka_unit_test(test_undeclared_name_fails),
               cmocka_unit_test(test_hmget_locals_drift_fails))
