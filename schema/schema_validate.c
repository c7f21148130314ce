/* Validating a JSON value against a compiled schema: first failure wins, and every schema
 * application, comparison and regex match is counted against the call's budget. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema_internal.h"

/* One step down the instance: an object member or an array element. */
struct segment {
    const char *key; /* NULL for an array index */
    size_t index;
};

/* The state of one validation call; lives on the caller's stack, so calls never share it. */
struct validation {
    const struct osbq_schema *schema;
    unsigned long steps;
    unsigned depth;
    unsigned quiet; /* > 0 inside anyOf/oneOf/not/if/contains: failures there are expected */
    bool stopped;   /* a limit was reached: everything unwinds as a failure */
    bool out_of_memory;
    bool reported; /* msg holds the first failure */
    struct segment path[OSBQ_SCHEMA_MAX_DEPTH + 1];
    size_t path_len;
    const char *root_name;
    char *msg;
    size_t msg_size;
    pcre2_match_data *match_data;
};

/* ---- messages ---- */

static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
    if (*used >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, size - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used += (size_t)n < size - *used ? (size_t)n : size - *used - 1;
}

static bool plain_key(const char *key)
{
    if (!((key[0] >= 'a' && key[0] <= 'z') || (key[0] >= 'A' && key[0] <= 'Z') || key[0] == '_'))
        return false;
    for (const char *p = key; *p != '\0'; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-'))
            return false;
    return true;
}

/* Writes the instance path: root.key[3]["odd key"]. */
static size_t write_path(const struct validation *v, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    append(buf, size, &used, "%s", v->root_name);
    for (size_t i = 0; i < v->path_len; i++) {
        const struct segment *s = &v->path[i];
        if (s->key == NULL) {
            append(buf, size, &used, "[%zu]", s->index);
        } else if (plain_key(s->key)) {
            append(buf, size, &used, "%s%s", used > 0 ? "." : "", s->key);
        } else {
            json_t *k = json_string(s->key);
            char *quoted = k != NULL ? json_dumps(k, JSON_ENCODE_ANY) : NULL;
            append(buf, size, &used, "[%s]", quoted != NULL ? quoted : "?");
            free(quoted);
            json_decref(k);
        }
    }
    return used;
}

/* The length of the longest prefix of s (len bytes) that does not end inside a UTF-8
 * sequence, so a cut message stays valid UTF-8 (a JSON description must be). */
static size_t utf8_boundary(const char *s, size_t len)
{
    size_t start = len;
    while (start > 0 && ((unsigned char)s[start - 1] & 0xC0) == 0x80 && len - start < 4)
        start--;
    if (start == 0)
        return len;
    unsigned char lead = (unsigned char)s[start - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return len - (start - 1) >= need ? len : start - 1;
}

/* A JSON value for a message: compact, cut at 60 bytes. */
static void render(const json_t *value, char *buf, size_t size)
{
    char *text = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);
    if (text == NULL) {
        (void)snprintf(buf, size, "(value)");
    } else if (strlen(text) > 60) {
        (void)snprintf(buf, size, "%.*s...", (int)utf8_boundary(text, 57), text);
    } else {
        (void)snprintf(buf, size, "%s", text);
    }
    free(text);
}

static void report(struct validation *v, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void report(struct validation *v, const char *fmt, va_list ap)
{
    if (v->reported || v->msg_size == 0)
        return;
    size_t used = write_path(v, v->msg, v->msg_size);
    if (used > 0)
        append(v->msg, v->msg_size, &used, ": ");
    if (used < v->msg_size)
        (void)vsnprintf(v->msg + used, v->msg_size - used, fmt, ap);
    v->msg[utf8_boundary(v->msg, strlen(v->msg))] = '\0';
    v->reported = true;
}

static bool mismatch(struct validation *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Records the failure (outside speculative branches) and returns false. */
static bool mismatch(struct validation *v, const char *fmt, ...)
{
    if (v->quiet > 0)
        return false;
    va_list ap;
    va_start(ap, fmt);
    report(v, fmt, ap);
    va_end(ap);
    return false;
}

static bool too_costly(struct validation *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Stops the whole validation: this message wins over any mismatch found in a branch. */
static bool too_costly(struct validation *v, const char *fmt, ...)
{
    if (!v->stopped) {
        v->stopped = true;
        v->reported = false;
        va_list ap;
        va_start(ap, fmt);
        report(v, fmt, ap);
        va_end(ap);
    }
    return false;
}

static bool step(struct validation *v, unsigned long cost)
{
    v->steps += cost;
    if (v->steps > OSBQ_SCHEMA_MAX_STEPS)
        return too_costly(v, "schema too costly: validation needs more than %d steps",
                          OSBQ_SCHEMA_MAX_STEPS);
    return true;
}

/* ---- values ---- */

static bool is_integer(const json_t *x)
{
    if (json_is_integer(x))
        return true;
    double d = json_real_value(x);
    return json_is_real(x) && isfinite(d) && d == floor(d);
}

/* <0, 0, >0 like strcmp; integers compare exactly, anything else as doubles. */
static int compare_numbers(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b)) {
        json_int_t x = json_integer_value(a), y = json_integer_value(b);
        return (x > y) - (x < y);
    }
    double x = json_number_value(a), y = json_number_value(b);
    return (x > y) - (x < y);
}

/* JSON equality: 1 and 1.0 are equal, object member order does not matter. */
static bool equal(struct validation *v, const json_t *a, const json_t *b, unsigned depth)
{
    if (!step(v, 1))
        return false;
    if (json_is_number(a) && json_is_number(b))
        return compare_numbers(a, b) == 0;
    if (json_typeof(a) != json_typeof(b))
        return false;
    if (depth > OSBQ_SCHEMA_MAX_DEPTH)
        return too_costly(v, "schema too costly: values nested deeper than %d levels",
                          OSBQ_SCHEMA_MAX_DEPTH);
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!equal(v, json_array_get(a, i), json_array_get(b, i), depth + 1))
                return false;
        return true;
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return false;
        const char *key;
        const json_t *member;
        json_object_foreach ((json_t *)(uintptr_t)a, key, member) {
            const json_t *other = json_object_get(b, key);
            if (other == NULL || !equal(v, member, other, depth + 1))
                return false;
        }
        return true;
    }
    default:
        return true; /* true, false, null: the type is the value */
    }
}

static size_t code_points(const json_t *s)
{
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)json_string_value(s);
    for (size_t i = 0; i < json_string_length(s); i++)
        if ((p[i] & 0xC0) != 0x80)
            n++;
    return n;
}

/* 1 match, 0 no match, -1 stopped (match limit). */
static int regex_matches(struct validation *v, const struct js_regex *re, const char *s, size_t len)
{
    if (!step(v, 1))
        return -1;
    if (v->match_data == NULL) {
        v->match_data = pcre2_match_data_create(1, NULL);
        if (v->match_data == NULL) {
            v->out_of_memory = true;
            too_costly(v, "out of memory");
            return -1;
        }
    }
    int rc =
        pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, 0, v->match_data, v->schema->match_context);
    if (rc >= 0)
        return 1;
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
        rc == PCRE2_ERROR_HEAPLIMIT) {
        too_costly(v, "schema too costly: the pattern \"%s\" exceeded its match limit", re->source);
        return -1;
    }
    return 0; /* e.g. a string that is not UTF-8: it cannot match a UTF pattern */
}

static const char *type_name(const json_t *x)
{
    switch (json_typeof(x)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
    case JSON_REAL:
        return is_integer(x) ? "integer" : "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    case JSON_NULL:
        return "null";
    }
    return "value";
}

static bool type_matches(unsigned types, const json_t *x)
{
    switch (json_typeof(x)) {
    case JSON_OBJECT:
        return types & JS_TYPE_OBJECT;
    case JSON_ARRAY:
        return types & JS_TYPE_ARRAY;
    case JSON_STRING:
        return types & JS_TYPE_STRING;
    case JSON_INTEGER:
    case JSON_REAL:
        return (types & JS_TYPE_NUMBER) || ((types & JS_TYPE_INTEGER) && is_integer(x));
    case JSON_TRUE:
    case JSON_FALSE:
        return types & JS_TYPE_BOOLEAN;
    case JSON_NULL:
        return types & JS_TYPE_NULL;
    }
    return false;
}

static void type_list(unsigned types, char *buf, size_t size)
{
    static const char *const names[] = {"null",   "boolean", "object", "array",
                                        "number", "string",  "integer"};
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (types & (1u << i))
            append(buf, size, &used, "%s%s", used > 0 ? " or " : "", names[i]);
}

/* ---- keywords ---- */

static bool apply(struct validation *v, const struct js_node *n, const json_t *x);

/* Applies n to a member or an element of the current value. */
static bool apply_at(struct validation *v, const struct js_node *n, const json_t *x,
                     const char *key, size_t index)
{
    v->path[v->path_len].key = key;
    v->path[v->path_len].index = index;
    v->path_len++;
    bool ok = apply(v, n, x);
    v->path_len--;
    return ok;
}

/* Applies n where a failure is an answer, not an error (anyOf, oneOf, not, if, contains). */
static bool probe(struct validation *v, const struct js_node *n, const json_t *x)
{
    v->quiet++;
    bool ok = apply(v, n, x);
    v->quiet--;
    return ok;
}

static bool check_limit(struct validation *v, const json_t *x, const struct js_number *limit,
                        const char *keyword, bool upper)
{
    if (limit->value == NULL)
        return true;
    int cmp = compare_numbers(x, limit->value);
    bool ok =
        upper ? (limit->exclusive ? cmp < 0 : cmp <= 0) : (limit->exclusive ? cmp > 0 : cmp >= 0);
    if (ok)
        return true;
    char value[64], bound[64];
    render(x, value, sizeof value);
    render(limit->value, bound, sizeof bound);
    const char *relation = upper ? (limit->exclusive ? "greater than or equal to" : "greater than")
                                 : (limit->exclusive ? "less than or equal to" : "less than");
    return mismatch(v, "%s is %s the %s of %s", value, relation, keyword, bound);
}

static bool multiple_of(const json_t *x, const json_t *m)
{
    if (json_is_integer(x) && json_is_integer(m))
        return json_integer_value(x) % json_integer_value(m) == 0;
    double q = json_number_value(x) / json_number_value(m);
    if (!isfinite(q))
        return false;
    /* Relative tolerance: 0.0075 / 0.0001 is 74.99999999999999 in binary floating point. */
    return fabs(q - nearbyint(q)) <= 1e-9 * fmax(1.0, fabs(q));
}

static bool check_number(struct validation *v, const struct js_node *n, const json_t *x)
{
    if (!check_limit(v, x, &n->minimum, n->minimum.exclusive ? "exclusive minimum" : "minimum",
                     false) ||
        !check_limit(v, x, &n->maximum, n->maximum.exclusive ? "exclusive maximum" : "maximum",
                     true) ||
        !check_limit(v, x, &n->exclusive_minimum, "exclusiveMinimum", false) ||
        !check_limit(v, x, &n->exclusive_maximum, "exclusiveMaximum", true))
        return false;
    if (n->multiple_of != NULL && !multiple_of(x, n->multiple_of)) {
        char value[64], m[64];
        render(x, value, sizeof value);
        render(n->multiple_of, m, sizeof m);
        return mismatch(v, "%s is not a multiple of %s (multipleOf)", value, m);
    }
    return true;
}

/* How a count and its bounds read in a mismatch: "3 items is fewer than the minItems of 4". */
struct count_words {
    const char *unit, *fewer, *more, *min_keyword, *max_keyword;
};

static const struct count_words length_words = {"characters", "shorter", "longer", "minLength",
                                                "maxLength"};
static const struct count_words items_words = {"items", "fewer", "more", "minItems", "maxItems"};
static const struct count_words properties_words = {"properties", "fewer", "more", "minProperties",
                                                    "maxProperties"};

/* count against min and max (each -1 when absent). */
static bool check_count(struct validation *v, size_t count, json_int_t min, json_int_t max,
                        const struct count_words *words)
{
    if (min >= 0 && count < (size_t)min)
        return mismatch(v, "%zu %s is %s than the %s of %lld", count, words->unit, words->fewer,
                        words->min_keyword, (long long)min);
    if (max >= 0 && count > (size_t)max)
        return mismatch(v, "%zu %s is %s than the %s of %lld", count, words->unit, words->more,
                        words->max_keyword, (long long)max);
    return true;
}

static bool check_string(struct validation *v, const struct js_node *n, const json_t *x)
{
    if ((n->min_length >= 0 || n->max_length >= 0) &&
        !check_count(v, code_points(x), n->min_length, n->max_length, &length_words))
        return false;
    if (n->pattern.code != NULL) {
        int rc = regex_matches(v, &n->pattern, json_string_value(x), json_string_length(x));
        if (rc < 0)
            return false;
        if (rc == 0) {
            char value[64];
            render(x, value, sizeof value);
            return mismatch(v, "%s does not match the pattern \"%s\"", value, n->pattern.source);
        }
    }
    if (n->format != JS_FORMAT_NONE &&
        !js_format_valid(n->format, json_string_value(x), json_string_length(x))) {
        char value[64];
        render(x, value, sizeof value);
        return mismatch(v, "%s is not a valid %s (format)", value, n->format_name);
    }
    return true;
}

static bool check_array(struct validation *v, const struct js_node *n, const json_t *x)
{
    size_t size = json_array_size(x);
    if (!check_count(v, size, n->min_items, n->max_items, &items_words))
        return false;
    for (size_t i = 0; i < size; i++) {
        const struct js_node *s = n->items;
        if (n->items_is_list)
            s = i < n->item_list.count ? n->item_list.items[i] : n->additional_items;
        if (s != NULL && !apply_at(v, s, json_array_get(x, i), NULL, i))
            return false;
    }
    if (n->unique_items) {
        for (size_t i = 0; i < size; i++)
            for (size_t j = i + 1; j < size; j++) {
                bool same = equal(v, json_array_get(x, i), json_array_get(x, j), 0);
                if (v->stopped)
                    return false;
                if (same)
                    return mismatch(v, "items %zu and %zu are equal (uniqueItems)", i, j);
            }
    }
    if (n->contains != NULL) {
        bool found = false;
        for (size_t i = 0; i < size && !found; i++) {
            found = probe(v, n->contains, json_array_get(x, i));
            if (v->stopped)
                return false;
        }
        if (!found)
            return mismatch(v, "no item matches the contains schema");
    }
    return true;
}

/* properties, patternProperties and additionalProperties for one member. */
static bool check_member(struct validation *v, const struct js_node *n, const char *key,
                         const json_t *value)
{
    bool matched = false;
    const json_t *index = json_object_get(n->property_index, key);
    if (index != NULL) {
        matched = true;
        if (!apply_at(v, n->properties[json_integer_value(index)].schema, value, key, 0))
            return false;
    }
    for (size_t i = 0; i < n->pattern_property_count; i++) {
        const struct js_pattern_property *p = &n->pattern_properties[i];
        int rc = regex_matches(v, &p->regex, key, strlen(key));
        if (rc < 0)
            return false;
        if (rc == 1) {
            matched = true;
            if (!apply_at(v, p->schema, value, key, 0))
                return false;
        }
    }
    if (matched || n->additional_properties == NULL)
        return true;
    if (n->additional_properties->boolean == 0) {
        char name[80];
        json_t *k = json_string(key);
        render(k, name, sizeof name);
        json_decref(k);
        return mismatch(v, "the property %s is not allowed (additionalProperties)", name);
    }
    return apply_at(v, n->additional_properties, value, key, 0);
}

static bool check_object(struct validation *v, const struct js_node *n, const json_t *x)
{
    size_t size = json_object_size(x);
    size_t i;
    const json_t *name;
    json_array_foreach (n->required, i, name)
        if (json_object_get(x, json_string_value(name)) == NULL)
            return mismatch(v, "the required property \"%s\" is missing", json_string_value(name));
    if (!check_count(v, size, n->min_properties, n->max_properties, &properties_words))
        return false;
    const char *key;
    const json_t *value;
    json_object_foreach ((json_t *)(uintptr_t)x, key, value) {
        if (!step(v, 1) || !check_member(v, n, key, value))
            return false;
        if (n->property_names != NULL) {
            json_t *k = json_string(key);
            if (k == NULL) {
                v->out_of_memory = true;
                return too_costly(v, "out of memory");
            }
            bool ok = probe(v, n->property_names, k);
            json_decref(k);
            if (v->stopped)
                return false;
            if (!ok)
                return mismatch(v, "the property name \"%s\" does not match propertyNames", key);
        }
    }
    for (size_t d = 0; d < n->dependency_count; d++) {
        const struct js_dependency *dep = &n->dependencies[d];
        if (json_object_get(x, dep->name) == NULL)
            continue;
        if (dep->schema != NULL && !apply(v, dep->schema, x))
            return false;
        json_array_foreach (dep->names, i, name)
            if (json_object_get(x, json_string_value(name)) == NULL)
                return mismatch(v,
                                "the property \"%s\" requires the property \"%s\" (dependencies)",
                                dep->name, json_string_value(name));
    }
    return true;
}

static bool check_logic(struct validation *v, const struct js_node *n, const json_t *x)
{
    for (size_t i = 0; i < n->all_of.count; i++)
        if (!apply(v, n->all_of.items[i], x))
            return false;
    if (n->any_of.count > 0) {
        bool any = false;
        for (size_t i = 0; i < n->any_of.count && !any; i++) {
            any = probe(v, n->any_of.items[i], x);
            if (v->stopped)
                return false;
        }
        if (!any)
            return mismatch(v, "does not match any schema of anyOf");
    }
    if (n->one_of.count > 0) {
        size_t first = 0, matches = 0;
        for (size_t i = 0; i < n->one_of.count && matches < 2; i++) {
            if (probe(v, n->one_of.items[i], x)) {
                if (matches++ == 0)
                    first = i;
            }
            if (v->stopped)
                return false;
        }
        if (matches == 0)
            return mismatch(v, "does not match any schema of oneOf");
        if (matches > 1)
            return mismatch(v, "matches more than one schema of oneOf (%zu and others)", first);
    }
    if (n->not_schema != NULL) {
        bool matched = probe(v, n->not_schema, x);
        if (v->stopped)
            return false;
        if (matched)
            return mismatch(v, "must not match the schema of not");
    }
    if (n->if_schema != NULL) {
        bool cond = probe(v, n->if_schema, x);
        if (v->stopped)
            return false;
        const struct js_node *branch = cond ? n->then_schema : n->else_schema;
        if (branch != NULL && !apply(v, branch, x))
            return false;
    }
    return true;
}

static bool check_keywords(struct validation *v, const struct js_node *n, const json_t *x)
{
    if (n->types != 0 && !type_matches(n->types, x)) {
        char expected[80];
        type_list(n->types, expected, sizeof expected);
        return mismatch(v, "%s is not of type %s", type_name(x), expected);
    }
    if (n->enum_values != NULL) {
        bool found = false;
        for (size_t i = 0; i < json_array_size(n->enum_values) && !found; i++)
            found = equal(v, x, json_array_get(n->enum_values, i), 0);
        if (v->stopped)
            return false;
        if (!found) {
            char value[64];
            render(x, value, sizeof value);
            return mismatch(v, "%s is not one of the enum values", value);
        }
    }
    if (n->const_value != NULL) {
        bool same = equal(v, x, n->const_value, 0);
        if (v->stopped)
            return false;
        if (!same) {
            char value[64], expected[64];
            render(x, value, sizeof value);
            render(n->const_value, expected, sizeof expected);
            return mismatch(v, "%s is not the const value %s", value, expected);
        }
    }
    bool ok = true;
    if (json_is_number(x))
        ok = check_number(v, n, x);
    else if (json_is_string(x))
        ok = check_string(v, n, x);
    else if (json_is_array(x))
        ok = check_array(v, n, x);
    else if (json_is_object(x))
        ok = check_object(v, n, x);
    return ok && check_logic(v, n, x);
}

static bool apply(struct validation *v, const struct js_node *n, const json_t *x)
{
    if (v->stopped || !step(v, 1))
        return false;
    if (v->depth >= OSBQ_SCHEMA_MAX_DEPTH)
        return too_costly(v, "schema too costly: more than %d nested schema applications",
                          OSBQ_SCHEMA_MAX_DEPTH);
    v->depth++;
    bool ok;
    if (n->boolean >= 0)
        ok = n->boolean == 1 || mismatch(v, "no value is allowed here (false schema)");
    else if (n->ref != NULL)
        ok = apply(v, n->ref, x);
    else
        ok = check_keywords(v, n, x);
    v->depth--;
    return ok && !v->stopped;
}

enum osbq_schema_result osbq_schema_validate(const struct osbq_schema *schema,
                                             const json_t *instance, const char *root_name,
                                             char *msg, size_t msg_size)
{
    struct validation v = {
        .schema = schema,
        .root_name = root_name != NULL ? root_name : "",
        .msg = msg,
        .msg_size = msg_size,
    };
    if (msg_size > 0)
        msg[0] = '\0';
    bool ok = apply(&v, schema->root, instance);
    pcre2_match_data_free(v.match_data);
    if (ok)
        return OSBQ_SCHEMA_VALID;
    if (v.out_of_memory)
        return OSBQ_SCHEMA_OUT_OF_MEMORY;
    return v.stopped ? OSBQ_SCHEMA_TOO_COSTLY : OSBQ_SCHEMA_MISMATCH;
}
