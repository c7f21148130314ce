/* Compiling a JSON Schema, the entry point: the compilation's set-up, the draft named by
 * "$schema", the pre-pass over $id (schema_ref.c), the root compiled (schema_keywords.c); and
 * freeing a compiled schema. The node tree is what schema_validate.c walks. */
#include <stdlib.h>
#include <string.h>

#include "schema_compiler.h"

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
