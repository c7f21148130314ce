/* Compiling a JSON Schema: checks each keyword's value against its draft's rules, resolves
 * $ref (JSON pointers, $id/id base URIs, plain-name fragments) inside the document and builds
 * the node tree schema_validate.c walks. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema_internal.h"

/* The state of one compilation. */
struct compiler {
    struct osbq_schema *schema;
    enum osbq_schema_draft draft;
    json_t *memo;  /* "<json_t address>" -> index into schema->nodes, for $ref targets and cycles */
    json_t *bases; /* "<json_t address>" -> base URI in scope at that schema */
    json_t *ids;   /* absolute URI (no empty fragment) -> address of the schema it names */
    char path[512]; /* the schema path being compiled, for messages */
    size_t path_len;
    unsigned depth;
    enum osbq_schema_status status;
    char *msg;
    size_t msg_size;
};

static int fail(struct compiler *c, enum osbq_schema_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct compiler *c, enum osbq_schema_status status, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    c->status = status;
    if (c->msg_size > 0) {
        if (c->path_len > 0)
            (void)snprintf(c->msg, c->msg_size, "%s: %s", c->path, what);
        else
            (void)snprintf(c->msg, c->msg_size, "%s", what);
    }
    return -1;
}

static int no_memory(struct compiler *c)
{
    return fail(c, OSBQ_SCHEMA_NO_MEMORY, "out of memory");
}

static size_t path_push(struct compiler *c, const char *segment)
{
    size_t saved = c->path_len;
    size_t room = sizeof c->path - c->path_len;
    int n = snprintf(c->path + c->path_len, room, "%s%s", c->path_len > 0 ? "." : "", segment);
    if (n > 0)
        c->path_len += (size_t)n < room ? (size_t)n : room - 1;
    return saved;
}

static size_t path_index(struct compiler *c, size_t i)
{
    size_t saved = c->path_len;
    size_t room = sizeof c->path - c->path_len;
    int n = snprintf(c->path + c->path_len, room, "[%zu]", i);
    if (n > 0)
        c->path_len += (size_t)n < room ? (size_t)n : room - 1;
    return saved;
}

static void path_pop(struct compiler *c, size_t saved)
{
    c->path_len = saved;
    c->path[saved] = '\0';
}

static void address_key(const json_t *v, char out[32])
{
    (void)snprintf(out, 32, "%p", (const void *)v);
}

/* ---- URIs: just enough of RFC 3986 reference resolution for $id and $ref ---- */

/* Length of the scheme of uri including ':', or 0 when uri is a relative reference. */
static size_t scheme_length(const char *uri)
{
    size_t i = 0;
    if (!((uri[0] >= 'a' && uri[0] <= 'z') || (uri[0] >= 'A' && uri[0] <= 'Z')))
        return 0;
    while (uri[i] != '\0' && uri[i] != ':' && uri[i] != '/' && uri[i] != '?' && uri[i] != '#')
        i++;
    return uri[i] == ':' ? i + 1 : 0;
}

/* Resolves ref against base into a new string (caller frees), without an empty fragment. */
static char *uri_resolve(const char *base, const char *ref)
{
    size_t base_len = strcspn(base, "#"); /* the base without its fragment */
    size_t keep = 0;                      /* how much of base to keep before ref */
    const char *sep = "";
    if (scheme_length(ref) > 0) {
        keep = 0;
    } else if (ref[0] == '#' || ref[0] == '\0') {
        keep = base_len;
    } else if (ref[0] == '/' && ref[1] == '/') {
        keep = scheme_length(base);
    } else if (ref[0] == '/') {
        size_t s = scheme_length(base);
        keep = s;
        if (base[s] == '/' && base[s + 1] == '/') {
            keep = s + 2 + strcspn(base + s + 2, "/?#");
        }
    } else {
        size_t end = strcspn(base, "?#");
        keep = 0;
        for (size_t i = 0; i < end; i++)
            if (base[i] == '/')
                keep = i + 1;
        size_t s = scheme_length(base);
        if (keep <= s + 2 && base[s] == '/' && base[s + 1] == '/') {
            keep = end; /* "http://host" + "a" is "http://host/a" */
            sep = "/";
        }
    }
    size_t ref_len = strlen(ref);
    if (ref_len > 0 && ref[ref_len - 1] == '#')
        ref_len--;
    size_t len = keep + strlen(sep) + ref_len + 1;
    char *out = malloc(len);
    if (out != NULL)
        (void)snprintf(out, len, "%.*s%s%.*s", (int)keep, base, sep, (int)ref_len, ref);
    return out;
}

/* ---- the pre-pass: base URIs and $id names of every schema ---- */

static const char *id_keyword(const struct compiler *c)
{
    return c->draft == OSBQ_SCHEMA_DRAFT4 ? "id" : "$id";
}

static int index_schema(struct compiler *c, json_t *s, const char *base, unsigned depth);

static int index_children(struct compiler *c, json_t *s, const char *base, unsigned depth)
{
    static const char *const single[] = {"additionalItems",
                                         "additionalProperties",
                                         "contains",
                                         "propertyNames",
                                         "not",
                                         "if",
                                         "then",
                                         "else",
                                         NULL};
    static const char *const maps[] = {"properties", "patternProperties", "definitions",
                                       "$defs",      "dependencies",      NULL};
    static const char *const lists[] = {"allOf", "anyOf", "oneOf", "items", NULL};
    for (size_t i = 0; single[i] != NULL; i++)
        if (index_schema(c, json_object_get(s, single[i]), base, depth) < 0)
            return -1;
    json_t *items = json_object_get(s, "items");
    if (json_is_object(items) && index_schema(c, items, base, depth) < 0)
        return -1;
    for (size_t i = 0; maps[i] != NULL; i++) {
        json_t *map = json_object_get(s, maps[i]);
        const char *key;
        json_t *child;
        if (json_is_object(map))
            json_object_foreach (map, key, child)
                if (index_schema(c, child, base, depth) < 0)
                    return -1;
    }
    for (size_t i = 0; lists[i] != NULL; i++) {
        json_t *list = json_object_get(s, lists[i]);
        size_t j;
        json_t *child;
        if (json_is_array(list))
            json_array_foreach (list, j, child)
                if (index_schema(c, child, base, depth) < 0)
                    return -1;
    }
    return 0;
}

static int index_schema(struct compiler *c, json_t *s, const char *base, unsigned depth)
{
    if (!json_is_object(s))
        return 0;
    if (depth > OSBQ_SCHEMA_MAX_SCHEMA_DEPTH)
        return fail(c, OSBQ_SCHEMA_INVALID, "schema nested deeper than %d levels",
                    OSBQ_SCHEMA_MAX_SCHEMA_DEPTH);
    char key[32];
    address_key(s, key);
    const char *id = json_string_value(json_object_get(s, id_keyword(c)));
    /* Drafts 04-07: a $ref replaces its siblings, $id included. */
    if (json_object_get(s, "$ref") != NULL)
        id = NULL;
    char *resolved = uri_resolve(base, id != NULL ? id : "");
    if (resolved == NULL)
        return no_memory(c);
    int rc = -1;
    if (json_object_set_new(c->bases, key, json_string(resolved)) < 0) {
        no_memory(c);
        goto out;
    }
    if (id != NULL && json_object_get(c->ids, resolved) == NULL &&
        json_object_set_new(c->ids, resolved, json_integer((json_int_t)(uintptr_t)s)) < 0) {
        no_memory(c);
        goto out;
    }
    rc = index_children(c, s, resolved, depth + 1);
out:
    free(resolved);
    return rc;
}

/* ---- $ref ---- */

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Decodes %XX in place; false on a malformed escape. */
static bool percent_decode(char *s)
{
    char *out = s;
    for (const char *in = s; *in != '\0'; in++) {
        if (*in == '%') {
            int hi = hex_value(in[1]);
            int lo = hi >= 0 ? hex_value(in[2]) : -1;
            if (lo < 0)
                return false;
            *out++ = (char)(hi * 16 + lo);
            in += 2;
        } else {
            *out++ = *in;
        }
    }
    *out = '\0';
    return true;
}

/* Follows the JSON pointer (already percent-decoded, "" or "/a/b~1c") from doc; NULL if absent. */
static json_t *follow_pointer(json_t *doc, char *pointer)
{
    json_t *at = doc;
    char *p = pointer;
    while (at != NULL && *p == '/') {
        p++;
        size_t len = strcspn(p, "/");
        char saved = p[len];
        p[len] = '\0';
        /* ~1 is '/', ~0 is '~', in that order. */
        char *out = p;
        for (char *in = p; *in != '\0'; in++) {
            if (in[0] == '~' && in[1] == '1') {
                *out++ = '/';
                in++;
            } else if (in[0] == '~' && in[1] == '0') {
                *out++ = '~';
                in++;
            } else {
                *out++ = *in;
            }
        }
        *out = '\0';
        if (json_is_object(at)) {
            at = json_object_get(at, p);
        } else if (json_is_array(at)) {
            char *end;
            unsigned long i = strtoul(p, &end, 10);
            bool digits = p[0] >= '0' && p[0] <= '9' && *end == '\0' && (p[0] != '0' || !p[1]);
            at = digits ? json_array_get(at, i) : NULL;
        } else {
            at = NULL;
        }
        p[len] = saved;
        p += len;
    }
    return *p == '\0' ? at : NULL;
}

static json_t *id_lookup(const struct compiler *c, const char *uri)
{
    json_t *found = json_object_get(c->ids, uri);
    return found != NULL ? (json_t *)(uintptr_t)json_integer_value(found) : NULL;
}

/* Finds the schema ref (written at a schema whose base is base) names; NULL with the error set. */
static json_t *resolve_ref(struct compiler *c, const char *base, const char *ref)
{
    char *uri = uri_resolve(base, ref);
    if (uri == NULL) {
        no_memory(c);
        return NULL;
    }
    json_t *target = id_lookup(c, uri); /* a whole document or a plain-name fragment */
    char *hash = strchr(uri, '#');
    if (target == NULL) {
        if (hash != NULL)
            *hash = '\0';
        json_t *doc = uri[0] == '\0' ? c->schema->doc : id_lookup(c, uri);
        if (doc == NULL) {
            fail(c, OSBQ_SCHEMA_REMOTE_REF, "remote $ref \"%s\" is not supported", ref);
        } else if (hash == NULL) {
            target = doc;
        } else if (hash[1] != '/' && hash[1] != '\0') {
            fail(c, OSBQ_SCHEMA_INVALID, "$ref \"%s\" names no schema of this document", ref);
        } else if (!percent_decode(hash + 1)) {
            fail(c, OSBQ_SCHEMA_INVALID, "$ref \"%s\" has a malformed %%-escape", ref);
        } else {
            target = follow_pointer(doc, hash + 1);
            if (target == NULL)
                fail(c, OSBQ_SCHEMA_INVALID, "$ref \"%s\" points to nothing", ref);
        }
    }
    free(uri);
    return target;
}

/* ---- keywords ---- */

static int compile(struct compiler *c, json_t *s, const char *base, bool allow_boolean,
                   const struct js_node **out);

/* Compiles obj[keyword] when present (a schema). */
static int sub_schema(struct compiler *c, json_t *obj, const char *keyword, const char *base,
                      const struct js_node **out)
{
    json_t *v = json_object_get(obj, keyword);
    *out = NULL;
    if (v == NULL)
        return 0;
    size_t mark = path_push(c, keyword);
    /* Draft-04 allows booleans only in additionalItems/additionalProperties. */
    bool allow_boolean = c->draft != OSBQ_SCHEMA_DRAFT4 ||
                         strcmp(keyword, "additionalItems") == 0 ||
                         strcmp(keyword, "additionalProperties") == 0;
    if (compile(c, v, base, allow_boolean, out) < 0)
        return -1;
    path_pop(c, mark);
    return 0;
}

/* obj[keyword]: a non-empty array of schemas. */
static int schema_list(struct compiler *c, json_t *obj, const char *keyword, const char *base,
                       struct js_list *out)
{
    json_t *v = json_object_get(obj, keyword);
    if (v == NULL)
        return 0;
    size_t mark = path_push(c, keyword);
    if (!json_is_array(v) || json_array_size(v) == 0)
        return fail(c, OSBQ_SCHEMA_INVALID, "must be a non-empty array of schemas");
    out->items = calloc(json_array_size(v), sizeof *out->items);
    if (out->items == NULL)
        return no_memory(c);
    size_t i;
    json_t *item;
    json_array_foreach (v, i, item) {
        size_t item_mark = path_index(c, i);
        if (compile(c, item, base, c->draft != OSBQ_SCHEMA_DRAFT4, &out->items[i]) < 0)
            return -1;
        out->count++;
        path_pop(c, item_mark);
    }
    path_pop(c, mark);
    return 0;
}

/* A non-negative integer (draft-06 on also accept 1.0); -1 when absent. */
static int count_keyword(struct compiler *c, json_t *obj, const char *keyword, json_int_t *out)
{
    json_t *v = json_object_get(obj, keyword);
    *out = -1;
    if (v == NULL)
        return 0;
    double d = json_number_value(v);
    /* Draft-06 on: 1.0 is an integer. The range check comes first: the cast needs it. */
    bool whole = json_is_integer(v) || (c->draft != OSBQ_SCHEMA_DRAFT4 && json_is_real(v) &&
                                        d >= 0 && d < 9e18 && d == floor(d));
    if (!whole || d < 0) {
        path_push(c, keyword);
        return fail(c, OSBQ_SCHEMA_INVALID, "must be a non-negative integer");
    }
    *out = json_is_integer(v) ? json_integer_value(v) : (json_int_t)d;
    return 0;
}

static int number_keyword(struct compiler *c, json_t *obj, const char *keyword,
                          struct js_number *out)
{
    json_t *v = json_object_get(obj, keyword);
    if (v == NULL)
        return 0;
    if (!json_is_number(v)) {
        path_push(c, keyword);
        return fail(c, OSBQ_SCHEMA_INVALID, "must be a number");
    }
    out->value = v;
    return 0;
}

/* Draft-04 exclusiveMinimum/Maximum: a boolean modifying minimum/maximum. */
static int draft4_exclusive(struct compiler *c, json_t *obj, const char *keyword,
                            struct js_number *limit)
{
    json_t *v = json_object_get(obj, keyword);
    if (v == NULL)
        return 0;
    if (!json_is_boolean(v)) {
        path_push(c, keyword);
        return fail(c, OSBQ_SCHEMA_INVALID, "must be a boolean in draft-04");
    }
    limit->exclusive = json_is_true(v);
    return 0;
}

static int compile_regex(struct compiler *c, const char *source, struct js_regex *out)
{
    int code;
    PCRE2_SIZE offset;
    /* ECMA 262 flavour: \uXXXX escapes, '$' only at the very end. */
    out->code =
        pcre2_compile((PCRE2_SPTR)source, PCRE2_ZERO_TERMINATED,
                      PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY, &code, &offset, NULL);
    out->source = source;
    if (out->code == NULL) {
        PCRE2_UCHAR text[120];
        (void)pcre2_get_error_message(code, text, sizeof text);
        return fail(c, OSBQ_SCHEMA_INVALID, "invalid regular expression at offset %zu: %s",
                    (size_t)offset, (const char *)text);
    }
    return 0;
}

static bool string_array(const json_t *v)
{
    if (!json_is_array(v))
        return false;
    size_t i;
    const json_t *item;
    json_array_foreach (v, i, item)
        if (!json_is_string(item))
            return false;
    return true;
}

static int type_bit(const char *name, unsigned *bits)
{
    static const struct {
        const char *name;
        unsigned bit;
    } types[] = {{"null", JS_TYPE_NULL},      {"boolean", JS_TYPE_BOOLEAN},
                 {"object", JS_TYPE_OBJECT},  {"array", JS_TYPE_ARRAY},
                 {"number", JS_TYPE_NUMBER},  {"string", JS_TYPE_STRING},
                 {"integer", JS_TYPE_INTEGER}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(name, types[i].name) == 0) {
            *bits |= types[i].bit;
            return 0;
        }
    return -1;
}

static int compile_type(struct compiler *c, json_t *s, struct js_node *n)
{
    json_t *v = json_object_get(s, "type");
    if (v == NULL)
        return 0;
    size_t mark = path_push(c, "type");
    int rc = 0;
    if (json_is_string(v)) {
        rc = type_bit(json_string_value(v), &n->types);
    } else if (json_is_array(v) && json_array_size(v) > 0) {
        size_t i;
        json_t *item;
        json_array_foreach (v, i, item)
            if (!json_is_string(item) || type_bit(json_string_value(item), &n->types) < 0)
                rc = -1;
    } else {
        rc = -1;
    }
    if (rc < 0)
        return fail(c, OSBQ_SCHEMA_INVALID,
                    "must be a type name (null, boolean, object, array, number, string, "
                    "integer) or a non-empty array of them");
    path_pop(c, mark);
    return 0;
}

static int compile_numbers(struct compiler *c, json_t *s, struct js_node *n)
{
    if (number_keyword(c, s, "minimum", &n->minimum) < 0 ||
        number_keyword(c, s, "maximum", &n->maximum) < 0)
        return -1;
    if (c->draft == OSBQ_SCHEMA_DRAFT4) {
        if (draft4_exclusive(c, s, "exclusiveMinimum", &n->minimum) < 0 ||
            draft4_exclusive(c, s, "exclusiveMaximum", &n->maximum) < 0)
            return -1;
    } else if (number_keyword(c, s, "exclusiveMinimum", &n->exclusive_minimum) < 0 ||
               number_keyword(c, s, "exclusiveMaximum", &n->exclusive_maximum) < 0) {
        return -1;
    }
    n->exclusive_minimum.exclusive = n->exclusive_maximum.exclusive = true;
    json_t *m = json_object_get(s, "multipleOf");
    if (m != NULL) {
        if (!json_is_number(m) || json_number_value(m) <= 0) {
            path_push(c, "multipleOf");
            return fail(c, OSBQ_SCHEMA_INVALID, "must be a number greater than 0");
        }
        n->multiple_of = m;
    }
    return 0;
}

static int compile_strings(struct compiler *c, json_t *s, struct js_node *n)
{
    if (count_keyword(c, s, "minLength", &n->min_length) < 0 ||
        count_keyword(c, s, "maxLength", &n->max_length) < 0)
        return -1;
    json_t *pattern = json_object_get(s, "pattern");
    if (pattern != NULL) {
        size_t mark = path_push(c, "pattern");
        if (!json_is_string(pattern))
            return fail(c, OSBQ_SCHEMA_INVALID, "must be a string");
        if (compile_regex(c, json_string_value(pattern), &n->pattern) < 0)
            return -1;
        path_pop(c, mark);
    }
    json_t *format = json_object_get(s, "format");
    if (format != NULL) {
        if (!json_is_string(format)) {
            path_push(c, "format");
            return fail(c, OSBQ_SCHEMA_INVALID, "must be a string");
        }
        n->format_name = json_string_value(format);
        n->format = js_format_lookup(n->format_name);
    }
    return 0;
}

static int compile_arrays(struct compiler *c, json_t *s, const char *base, struct js_node *n)
{
    json_t *items = json_object_get(s, "items");
    if (json_is_array(items)) {
        /* An empty array is allowed from draft-06 on; draft-04 wants one schema at least. */
        n->items_is_list = true;
        size_t mark = path_push(c, "items");
        n->item_list.items = calloc(json_array_size(items) + 1, sizeof *n->item_list.items);
        if (n->item_list.items == NULL)
            return no_memory(c);
        size_t i;
        json_t *item;
        json_array_foreach (items, i, item) {
            size_t item_mark = path_index(c, i);
            if (compile(c, item, base, c->draft != OSBQ_SCHEMA_DRAFT4, &n->item_list.items[i]) < 0)
                return -1;
            n->item_list.count++;
            path_pop(c, item_mark);
        }
        path_pop(c, mark);
    } else if (sub_schema(c, s, "items", base, &n->items) < 0) {
        return -1;
    }
    if (sub_schema(c, s, "additionalItems", base, &n->additional_items) < 0 ||
        count_keyword(c, s, "minItems", &n->min_items) < 0 ||
        count_keyword(c, s, "maxItems", &n->max_items) < 0)
        return -1;
    json_t *unique = json_object_get(s, "uniqueItems");
    if (unique != NULL && !json_is_boolean(unique)) {
        path_push(c, "uniqueItems");
        return fail(c, OSBQ_SCHEMA_INVALID, "must be a boolean");
    }
    n->unique_items = json_is_true(unique);
    if (c->draft != OSBQ_SCHEMA_DRAFT4 && sub_schema(c, s, "contains", base, &n->contains) < 0)
        return -1;
    return 0;
}

static int compile_properties(struct compiler *c, json_t *s, const char *base, struct js_node *n)
{
    json_t *props = json_object_get(s, "properties");
    if (props != NULL) {
        size_t mark = path_push(c, "properties");
        if (!json_is_object(props))
            return fail(c, OSBQ_SCHEMA_INVALID, "must be an object of schemas");
        n->properties = calloc(json_object_size(props) + 1, sizeof *n->properties);
        n->property_index = json_object();
        if (n->properties == NULL || n->property_index == NULL)
            return no_memory(c);
        const char *key;
        json_t *child;
        json_object_foreach (props, key, child) {
            struct js_property *p = &n->properties[n->property_count];
            size_t key_mark = path_push(c, key);
            p->name = key;
            if (json_object_set_new(n->property_index, key,
                                    json_integer((json_int_t)n->property_count)) < 0)
                return no_memory(c);
            if (compile(c, child, base, c->draft != OSBQ_SCHEMA_DRAFT4, &p->schema) < 0)
                return -1;
            n->property_count++;
            path_pop(c, key_mark);
        }
        path_pop(c, mark);
    }
    json_t *patterns = json_object_get(s, "patternProperties");
    if (patterns != NULL) {
        size_t mark = path_push(c, "patternProperties");
        if (!json_is_object(patterns))
            return fail(c, OSBQ_SCHEMA_INVALID, "must be an object of schemas");
        n->pattern_properties =
            calloc(json_object_size(patterns) + 1, sizeof *n->pattern_properties);
        if (n->pattern_properties == NULL)
            return no_memory(c);
        const char *key;
        json_t *child;
        json_object_foreach (patterns, key, child) {
            struct js_pattern_property *p = &n->pattern_properties[n->pattern_property_count];
            size_t key_mark = path_push(c, key);
            if (compile_regex(c, key, &p->regex) < 0)
                return -1;
            n->pattern_property_count++;
            if (compile(c, child, base, c->draft != OSBQ_SCHEMA_DRAFT4, &p->schema) < 0)
                return -1;
            path_pop(c, key_mark);
        }
        path_pop(c, mark);
    }
    if (sub_schema(c, s, "additionalProperties", base, &n->additional_properties) < 0)
        return -1;
    json_t *required = json_object_get(s, "required");
    if (required != NULL) {
        if (!string_array(required)) {
            path_push(c, "required");
            return fail(c, OSBQ_SCHEMA_INVALID, "must be an array of strings");
        }
        n->required = required;
    }
    if (count_keyword(c, s, "minProperties", &n->min_properties) < 0 ||
        count_keyword(c, s, "maxProperties", &n->max_properties) < 0)
        return -1;
    if (c->draft != OSBQ_SCHEMA_DRAFT4 &&
        sub_schema(c, s, "propertyNames", base, &n->property_names) < 0)
        return -1;
    json_t *deps = json_object_get(s, "dependencies");
    if (deps != NULL) {
        size_t mark = path_push(c, "dependencies");
        if (!json_is_object(deps))
            return fail(c, OSBQ_SCHEMA_INVALID, "must be an object");
        n->dependencies = calloc(json_object_size(deps) + 1, sizeof *n->dependencies);
        if (n->dependencies == NULL)
            return no_memory(c);
        const char *key;
        json_t *child;
        json_object_foreach (deps, key, child) {
            struct js_dependency *d = &n->dependencies[n->dependency_count];
            size_t key_mark = path_push(c, key);
            d->name = key;
            if (json_is_array(child)) {
                if (!string_array(child))
                    return fail(c, OSBQ_SCHEMA_INVALID, "must be an array of strings or a schema");
                d->names = child;
            } else if (compile(c, child, base, c->draft != OSBQ_SCHEMA_DRAFT4, &d->schema) < 0) {
                return -1;
            }
            n->dependency_count++;
            path_pop(c, key_mark);
        }
        path_pop(c, mark);
    }
    return 0;
}

static int compile_logic(struct compiler *c, json_t *s, const char *base, struct js_node *n)
{
    if (schema_list(c, s, "allOf", base, &n->all_of) < 0 ||
        schema_list(c, s, "anyOf", base, &n->any_of) < 0 ||
        schema_list(c, s, "oneOf", base, &n->one_of) < 0 ||
        sub_schema(c, s, "not", base, &n->not_schema) < 0)
        return -1;
    if (c->draft == OSBQ_SCHEMA_DRAFT7 && (sub_schema(c, s, "if", base, &n->if_schema) < 0 ||
                                           sub_schema(c, s, "then", base, &n->then_schema) < 0 ||
                                           sub_schema(c, s, "else", base, &n->else_schema) < 0))
        return -1;
    return 0;
}

/* definitions/$defs are compiled too, so a broken one is reported even when nothing uses it. */
static int compile_definitions(struct compiler *c, json_t *s, const char *base)
{
    static const char *const keywords[] = {"definitions", "$defs", NULL};
    for (size_t i = 0; keywords[i] != NULL; i++) {
        json_t *defs = json_object_get(s, keywords[i]);
        if (defs == NULL)
            continue;
        size_t mark = path_push(c, keywords[i]);
        if (!json_is_object(defs))
            return fail(c, OSBQ_SCHEMA_INVALID, "must be an object of schemas");
        const char *key;
        json_t *child;
        json_object_foreach (defs, key, child) {
            const struct js_node *ignored;
            size_t key_mark = path_push(c, key);
            if (compile(c, child, base, c->draft != OSBQ_SCHEMA_DRAFT4, &ignored) < 0)
                return -1;
            path_pop(c, key_mark);
        }
        path_pop(c, mark);
    }
    return 0;
}

static int compile_keywords(struct compiler *c, json_t *s, const char *base, struct js_node *n)
{
    json_t *ref = json_object_get(s, "$ref");
    if (ref != NULL) {
        size_t mark = path_push(c, "$ref");
        if (!json_is_string(ref))
            return fail(c, OSBQ_SCHEMA_INVALID, "must be a string");
        n->ref_text = json_string_value(ref);
        json_t *target = resolve_ref(c, base, n->ref_text);
        if (target == NULL)
            return -1;
        /* The target is compiled with the base in scope where it is written. */
        char key[32];
        address_key(target, key);
        const char *target_base = json_string_value(json_object_get(c->bases, key));
        if (compile(c, target, target_base != NULL ? target_base : base,
                    c->draft != OSBQ_SCHEMA_DRAFT4, &n->ref) < 0)
            return -1;
        path_pop(c, mark);
        /* Siblings of $ref are ignored, but definitions next to it stay reachable. */
        return compile_definitions(c, s, base);
    }
    json_t *enum_values = json_object_get(s, "enum");
    if (enum_values != NULL) {
        if (!json_is_array(enum_values)) {
            path_push(c, "enum");
            return fail(c, OSBQ_SCHEMA_INVALID, "must be an array");
        }
        n->enum_values = enum_values;
    }
    if (c->draft != OSBQ_SCHEMA_DRAFT4)
        n->const_value = json_object_get(s, "const");
    return compile_type(c, s, n) < 0 || compile_numbers(c, s, n) < 0 ||
                   compile_strings(c, s, n) < 0 || compile_arrays(c, s, base, n) < 0 ||
                   compile_properties(c, s, base, n) < 0 || compile_logic(c, s, base, n) < 0 ||
                   compile_definitions(c, s, base) < 0
               ? -1
               : 0;
}

static struct js_node *new_node(struct compiler *c)
{
    struct osbq_schema *schema = c->schema;
    if ((schema->node_count & (schema->node_count + 1)) == 0) { /* 0, 1, 3, 7...: grow */
        size_t cap = 2 * (schema->node_count + 1);
        struct js_node **grown = realloc(schema->nodes, cap * sizeof *grown);
        if (grown == NULL)
            return NULL;
        schema->nodes = grown;
    }
    struct js_node *n = calloc(1, sizeof *n);
    if (n == NULL)
        return NULL;
    n->boolean = -1;
    n->min_length = n->max_length = n->min_items = n->max_items = -1;
    n->min_properties = n->max_properties = -1;
    schema->nodes[schema->node_count++] = n;
    return n;
}

/* Compiles the schema s once; a second visit (a $ref, a cycle) returns the same node. */
static int compile(struct compiler *c, json_t *s, const char *base, bool allow_boolean,
                   const struct js_node **out)
{
    char key[32];
    address_key(s, key);
    json_t *known = json_object_get(c->memo, key);
    if (known != NULL) {
        *out = c->schema->nodes[json_integer_value(known)];
        return 0;
    }
    if (!json_is_object(s) && !(allow_boolean && json_is_boolean(s)))
        return fail(c, OSBQ_SCHEMA_INVALID, "must be a schema (an object%s)",
                    allow_boolean ? " or a boolean" : "");
    if (c->depth >= OSBQ_SCHEMA_MAX_SCHEMA_DEPTH)
        return fail(c, OSBQ_SCHEMA_INVALID, "schema nested deeper than %d levels",
                    OSBQ_SCHEMA_MAX_SCHEMA_DEPTH);
    struct js_node *n = new_node(c);
    if (n == NULL || json_object_set_new(c->memo, key,
                                         json_integer((json_int_t)(c->schema->node_count - 1))) < 0)
        return no_memory(c);
    *out = n;
    if (json_is_boolean(s)) {
        n->boolean = json_is_true(s);
        return 0;
    }
    const char *own_base = json_string_value(json_object_get(c->bases, key));
    c->depth++;
    int rc = compile_keywords(c, s, own_base != NULL ? own_base : base, n);
    c->depth--;
    return rc;
}

static int draft_of(struct compiler *c, json_t *doc, enum osbq_schema_draft fallback)
{
    static const struct {
        const char *path; /* the meta-schema URI after "http://" or "https://" */
        enum osbq_schema_draft draft;
    } known[] = {
        {"json-schema.org/draft-04/schema", OSBQ_SCHEMA_DRAFT4},
        {"json-schema.org/draft-06/schema", OSBQ_SCHEMA_DRAFT6},
        {"json-schema.org/draft-07/schema", OSBQ_SCHEMA_DRAFT7},
    };
    c->draft = fallback;
    json_t *v = json_object_get(doc, "$schema");
    if (v == NULL)
        return 0;
    const char *uri = json_string_value(v);
    if (uri == NULL) {
        path_push(c, "$schema");
        return fail(c, OSBQ_SCHEMA_INVALID, "must be a string");
    }
    const char *rest = strncmp(uri, "http://", 7) == 0    ? uri + 7
                       : strncmp(uri, "https://", 8) == 0 ? uri + 8
                                                          : NULL;
    for (size_t i = 0; rest != NULL && i < sizeof known / sizeof known[0]; i++) {
        size_t len = strlen(known[i].path);
        /* With or without the empty fragment. */
        if (strncmp(rest, known[i].path, len) == 0 &&
            (rest[len] == '\0' || strcmp(rest + len, "#") == 0)) {
            c->draft = known[i].draft;
            return 0;
        }
    }
    path_push(c, "$schema");
    return fail(c, OSBQ_SCHEMA_INVALID,
                "unsupported \"%s\" (supported: the draft-04, draft-06 and draft-07 meta-schemas)",
                uri);
}

struct osbq_schema *osbq_schema_compile(json_t *doc, enum osbq_schema_draft default_draft,
                                        const char *root_name, enum osbq_schema_status *status,
                                        char *msg, size_t msg_size)
{
    struct compiler c = {.msg = msg, .msg_size = msg_size, .status = OSBQ_SCHEMA_OK};
    if (root_name != NULL && root_name[0] != '\0')
        path_push(&c, root_name);
    if (msg_size > 0)
        msg[0] = '\0';
    c.schema = calloc(1, sizeof *c.schema);
    c.memo = json_object();
    c.bases = json_object();
    c.ids = json_object();
    if (c.schema == NULL || c.memo == NULL || c.bases == NULL || c.ids == NULL) {
        no_memory(&c);
        goto done;
    }
    c.schema->doc = json_incref(doc);
    c.schema->match_context = pcre2_match_context_create(NULL);
    if (c.schema->match_context == NULL) {
        no_memory(&c);
        goto done;
    }
    (void)pcre2_set_match_limit(c.schema->match_context, OSBQ_SCHEMA_REGEX_MATCH_LIMIT);
    (void)pcre2_set_depth_limit(c.schema->match_context, OSBQ_SCHEMA_REGEX_DEPTH_LIMIT);
    if (draft_of(&c, doc, default_draft) < 0)
        goto done;
    if (index_schema(&c, doc, "", 0) < 0)
        goto done;
    (void)compile(&c, doc, "", c.draft != OSBQ_SCHEMA_DRAFT4, &c.schema->root);
done:
    json_decref(c.memo);
    json_decref(c.bases);
    json_decref(c.ids);
    if (status != NULL)
        *status = c.status;
    if (c.status != OSBQ_SCHEMA_OK) {
        osbq_schema_free(c.schema);
        return NULL;
    }
    return c.schema;
}

static void free_node(struct js_node *n)
{
    free(n->all_of.items);
    free(n->any_of.items);
    free(n->one_of.items);
    free(n->item_list.items);
    free(n->properties);
    json_decref(n->property_index);
    for (size_t i = 0; i < n->pattern_property_count; i++)
        pcre2_code_free(n->pattern_properties[i].regex.code);
    free(n->pattern_properties);
    free(n->dependencies);
    pcre2_code_free(n->pattern.code);
    free(n);
}

void osbq_schema_free(struct osbq_schema *schema)
{
    if (schema == NULL)
        return;
    for (size_t i = 0; i < schema->node_count; i++)
        free_node(schema->nodes[i]);
    free(schema->nodes);
    pcre2_match_context_free(schema->match_context);
    json_decref(schema->doc);
    free(schema);
}
