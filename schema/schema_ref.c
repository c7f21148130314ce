/* $id and $ref: just enough of RFC 3986 reference resolution for base URIs, a pre-pass that
 * records the base URI and $id of every schema of the document, and the resolution of a $ref
 * (a JSON pointer, an $id, a plain-name fragment) to the schema it names inside the document:
 * remote references are refused. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema_compiler.h"

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
        return js_fail(c, OSBQ_SCHEMA_INVALID, "schema nested deeper than %d levels",
                       OSBQ_SCHEMA_MAX_SCHEMA_DEPTH);
    char key[32];
    js_address_key(s, key);
    const char *id = json_string_value(json_object_get(s, id_keyword(c)));
    /* Drafts 04-07: a $ref replaces its siblings, $id included. */
    if (json_object_get(s, "$ref") != NULL)
        id = NULL;
    char *resolved = uri_resolve(base, id != NULL ? id : "");
    if (resolved == NULL)
        return js_no_memory(c);
    int rc = -1;
    if (json_object_set_new(c->bases, key, json_string(resolved)) < 0) {
        js_no_memory(c);
        goto out;
    }
    if (id != NULL && json_object_get(c->ids, resolved) == NULL &&
        json_object_set_new(c->ids, resolved, json_integer((json_int_t)(uintptr_t)s)) < 0) {
        js_no_memory(c);
        goto out;
    }
    rc = index_children(c, s, resolved, depth + 1);
out:
    free(resolved);
    return rc;
}

int js_index_ids(struct compiler *c, json_t *doc)
{
    return index_schema(c, doc, "", 0);
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

json_t *js_resolve_ref(struct compiler *c, const char *base, const char *ref)
{
    char *uri = uri_resolve(base, ref);
    if (uri == NULL) {
        js_no_memory(c);
        return NULL;
    }
    json_t *target = id_lookup(c, uri); /* a whole document or a plain-name fragment */
    char *hash = strchr(uri, '#');
    if (target == NULL) {
        if (hash != NULL)
            *hash = '\0';
        json_t *doc = uri[0] == '\0' ? c->schema->doc : id_lookup(c, uri);
        if (doc == NULL) {
            js_fail(c, OSBQ_SCHEMA_REMOTE_REF, "remote $ref \"%s\" is not supported", ref);
        } else if (hash == NULL) {
            target = doc;
        } else if (hash[1] != '/' && hash[1] != '\0') {
            js_fail(c, OSBQ_SCHEMA_INVALID, "$ref \"%s\" names no schema of this document", ref);
        } else if (!percent_decode(hash + 1)) {
            js_fail(c, OSBQ_SCHEMA_INVALID, "$ref \"%s\" has a malformed %%-escape", ref);
        } else {
            target = follow_pointer(doc, hash + 1);
            if (target == NULL)
                js_fail(c, OSBQ_SCHEMA_INVALID, "$ref \"%s\" points to nothing", ref);
        }
    }
    free(uri);
    return target;
}
