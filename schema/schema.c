/* Compiling a JSON Schema: the entry point, the draft named by "$schema", the walk that
 * compiles each schema once into a node (memo by address, so $ref cycles end), and freeing.
 * The keywords are schema_keywords.c's; $id and $ref schema_ref.c's. The node tree is what
 * schema_validate.c walks. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema_compiler.h"

int js_fail(struct compiler *c, enum osbq_schema_status status, const char *fmt, ...)
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

int js_no_memory(struct compiler *c)
{
    return js_fail(c, OSBQ_SCHEMA_NO_MEMORY, "out of memory");
}

/* Appends separator and segment to the path, cut short when it is full (it only names a place
 * in a message); returns the length before. */
static size_t path_append(struct compiler *c, const char *separator, const char *segment)
{
    size_t saved = c->path_len;
    size_t room = sizeof c->path - c->path_len;
    int n = snprintf(c->path + c->path_len, room, "%s%s", separator, segment);
    if (n > 0)
        c->path_len += (size_t)n < room ? (size_t)n : room - 1;
    return saved;
}

size_t js_path_push(struct compiler *c, const char *segment)
{
    return path_append(c, c->path_len > 0 ? "." : "", segment);
}

size_t js_path_index(struct compiler *c, size_t i)
{
    char index[32];
    (void)snprintf(index, sizeof index, "[%zu]", i);
    return path_append(c, "", index);
}

void js_path_pop(struct compiler *c, size_t saved)
{
    c->path_len = saved;
    c->path[saved] = '\0';
}

void js_address_key(const json_t *v, char out[32])
{
    (void)snprintf(out, 32, "%p", (const void *)v);
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

int js_compile(struct compiler *c, json_t *s, const char *base, bool allow_boolean,
               const struct js_node **out)
{
    char key[32];
    js_address_key(s, key);
    json_t *known = json_object_get(c->memo, key);
    if (known != NULL) {
        *out = c->schema->nodes[json_integer_value(known)];
        return 0;
    }
    if (!json_is_object(s) && !(allow_boolean && json_is_boolean(s)))
        return js_fail(c, OSBQ_SCHEMA_INVALID, "must be a schema (an object%s)",
                       allow_boolean ? " or a boolean" : "");
    if (c->depth >= OSBQ_SCHEMA_MAX_SCHEMA_DEPTH)
        return js_fail(c, OSBQ_SCHEMA_INVALID, "schema nested deeper than %d levels",
                       OSBQ_SCHEMA_MAX_SCHEMA_DEPTH);
    struct js_node *n = new_node(c);
    if (n == NULL || json_object_set_new(c->memo, key,
                                         json_integer((json_int_t)(c->schema->node_count - 1))) < 0)
        return js_no_memory(c);
    *out = n;
    if (json_is_boolean(s)) {
        n->boolean = json_is_true(s);
        return 0;
    }
    const char *own_base = json_string_value(json_object_get(c->bases, key));
    c->depth++;
    int rc = js_compile_keywords(c, s, own_base != NULL ? own_base : base, n);
    c->depth--;
    return rc;
}

int js_compile_member(struct compiler *c, json_t *s, const char *base, const struct js_node **out)
{
    return js_compile(c, s, base, c->draft != OSBQ_SCHEMA_DRAFT4, out);
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
        js_path_push(c, "$schema");
        return js_fail(c, OSBQ_SCHEMA_INVALID, "must be a string");
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
    js_path_push(c, "$schema");
    return js_fail(
        c, OSBQ_SCHEMA_INVALID,
        "unsupported \"%s\" (supported: the draft-04, draft-06 and draft-07 meta-schemas)", uri);
}

struct osbq_schema *osbq_schema_compile(json_t *doc, enum osbq_schema_draft default_draft,
                                        const char *root_name, enum osbq_schema_status *status,
                                        char *msg, size_t msg_size)
{
    struct compiler c = {.msg = msg, .msg_size = msg_size, .status = OSBQ_SCHEMA_OK};
    if (root_name != NULL && root_name[0] != '\0')
        js_path_push(&c, root_name);
    if (msg_size > 0)
        msg[0] = '\0';
    c.schema = calloc(1, sizeof *c.schema);
    c.memo = json_object();
    c.bases = json_object();
    c.ids = json_object();
    if (c.schema == NULL || c.memo == NULL || c.bases == NULL || c.ids == NULL) {
        js_no_memory(&c);
        goto done;
    }
    c.schema->doc = json_incref(doc);
    c.schema->match_context = pcre2_match_context_create(NULL);
    if (c.schema->match_context == NULL) {
        js_no_memory(&c);
        goto done;
    }
    (void)pcre2_set_match_limit(c.schema->match_context, OSBQ_SCHEMA_REGEX_MATCH_LIMIT);
    (void)pcre2_set_depth_limit(c.schema->match_context, OSBQ_SCHEMA_REGEX_DEPTH_LIMIT);
    if (draft_of(&c, doc, default_draft) < 0)
        goto done;
    if (js_index_ids(&c, doc) < 0)
        goto done;
    (void)js_compile_member(&c, doc, "", &c.schema->root);
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
