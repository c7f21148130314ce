/* A JSON Schema validator (drafts 04, 06 and 07) on top of jansson, for plan parameter schemas.
 * A schema is compiled once into a tree of nodes ($refs resolved, regexes compiled); a compiled
 * schema is read-only, so any number of threads may validate against it at once. Work per
 * validation is bounded (OSBQ_SCHEMA_MAX_DEPTH, OSBQ_SCHEMA_MAX_STEPS, PCRE2 match limits): a
 * hostile schema or document fails with "schema too costly" instead of hanging the caller. */
#ifndef OSBQ_SCHEMA_H
#define OSBQ_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

/* Nested schema applications ($ref hops, allOf, properties, ...) one validation may stack. */
#define OSBQ_SCHEMA_MAX_DEPTH 128
/* Schema applications, value comparisons and regex matches one validation may make. */
#define OSBQ_SCHEMA_MAX_STEPS 200000
/* PCRE2's match limit (backtracking steps of one match) and depth limit. */
#define OSBQ_SCHEMA_REGEX_MATCH_LIMIT 100000
#define OSBQ_SCHEMA_REGEX_DEPTH_LIMIT 1000
/* Nesting of the schema itself, refused at compile time: no deeper than a validation may go,
 * so a schema that compiles can be applied in full. */
#define OSBQ_SCHEMA_MAX_SCHEMA_DEPTH OSBQ_SCHEMA_MAX_DEPTH

struct osbq_schema;

enum osbq_schema_draft {
    OSBQ_SCHEMA_DRAFT4 = 4,
    OSBQ_SCHEMA_DRAFT6 = 6,
    OSBQ_SCHEMA_DRAFT7 = 7,
};

enum osbq_schema_status {
    OSBQ_SCHEMA_OK = 0,
    OSBQ_SCHEMA_INVALID,    /* the schema breaks its draft's rules: the message says where */
    OSBQ_SCHEMA_REMOTE_REF, /* a $ref leaves the document (not supported) */
    OSBQ_SCHEMA_NO_MEMORY,
};

enum osbq_schema_result {
    OSBQ_SCHEMA_VALID = 0,
    OSBQ_SCHEMA_MISMATCH,   /* the instance does not match: the message names path and keyword */
    OSBQ_SCHEMA_TOO_COSTLY, /* a depth, step or regex limit was reached */
    OSBQ_SCHEMA_OUT_OF_MEMORY,
};

/* Compiles doc (an object, or a boolean from draft-06 on). The draft is taken from doc's
 * "$schema" (draft-04, -06 or -07 meta-schema URIs; anything else is refused) or, when absent,
 * is default_draft. Returns NULL with *status and msg on failure: "<root_name>.<schema path>:
 * <what>", e.g. "properties.size.type: must be ..." when root_name is NULL or "". The compiled
 * schema holds a reference to doc; doc must not be modified afterwards. */
struct osbq_schema *osbq_schema_compile(json_t *doc, enum osbq_schema_draft default_draft,
                                        const char *root_name, enum osbq_schema_status *status,
                                        char *msg, size_t msg_size);

/* Frees a compiled schema; accepts NULL. */
void osbq_schema_free(struct osbq_schema *schema);

/* Validates instance against schema. On anything but OSBQ_SCHEMA_VALID, msg gets the first
 * failure as "<root_name><path>: <what>", e.g.
 *   "parameters.size: 300 is greater than the maximum of 100". */
enum osbq_schema_result osbq_schema_validate(const struct osbq_schema *schema,
                                             const json_t *instance, const char *root_name,
                                             char *msg, size_t msg_size);

#endif
