/* One compilation of a JSON Schema, shared by the compiler's files, which call one another in
 * layers: schema.c (the entry) calls schema_keywords.c (the walk and each keyword), which calls
 * schema_ref.c ($id base URIs, $ref resolution); each reports through schema_compiler.c (the
 * path and the failure). Not a public API. */
#ifndef OSBQ_SCHEMA_COMPILER_H
#define OSBQ_SCHEMA_COMPILER_H

#include <stdbool.h>
#include <stddef.h>

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

/* schema_compiler.c: records the failure ("<path>: <what>") and returns -1. */
int js_fail(struct compiler *c, enum osbq_schema_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int js_no_memory(struct compiler *c);

/* schema_compiler.c: appends ".segment" or "[i]" to the path and returns the length to restore
 * with js_path_pop. */
size_t js_path_push(struct compiler *c, const char *segment);
size_t js_path_index(struct compiler *c, size_t i);
void js_path_pop(struct compiler *c, size_t saved);

/* schema_compiler.c: the key under which memo and bases know the schema v: its address. */
void js_address_key(const json_t *v, char out[32]);

/* schema_ref.c: the pre-pass that records every schema's base URI and $id in c->bases and
 * c->ids, before any $ref is followed. */
int js_index_ids(struct compiler *c, json_t *doc);

/* schema_ref.c: the schema that ref (written at a schema whose base URI is base) names inside the
 * document; NULL with the failure recorded (a remote $ref among them). */
json_t *js_resolve_ref(struct compiler *c, const char *base, const char *ref);

/* schema_keywords.c: compiles the schema s (base: the URI in scope) into *out once; a second
 * visit (a $ref, a cycle) gets the same node. A boolean schema is allowed when allow_boolean is
 * set. */
int js_compile(struct compiler *c, json_t *s, const char *base, bool allow_boolean,
               const struct js_node **out);

/* schema_keywords.c: js_compile with the rule that holds almost everywhere: a boolean is a
 * schema from draft-06 on (draft-04 allows one only as additionalItems or
 * additionalProperties). */
int js_compile_member(struct compiler *c, json_t *s, const char *base, const struct js_node **out);

#endif
