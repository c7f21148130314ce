/* The compiled form of a JSON Schema, shared by the compiler (schema.c, schema_keywords.c,
 * schema_ref.c, schema_compiler.c), the validator (schema_validate.c) and the format checks
 * (schema_format.c). Not a public API. */
#ifndef OSBQ_SCHEMA_INTERNAL_H
#define OSBQ_SCHEMA_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>

#include "schema.h"

/* Bits of the "type" keyword. */
enum js_type {
    JS_TYPE_NULL = 1u << 0,
    JS_TYPE_BOOLEAN = 1u << 1,
    JS_TYPE_OBJECT = 1u << 2,
    JS_TYPE_ARRAY = 1u << 3,
    JS_TYPE_NUMBER = 1u << 4,
    JS_TYPE_STRING = 1u << 5,
    JS_TYPE_INTEGER = 1u << 6,
};

/* The formats checked; any other "format" is an annotation only, as the drafts allow. */
enum js_format {
    JS_FORMAT_NONE = 0,
    JS_FORMAT_DATE_TIME,
    JS_FORMAT_EMAIL,
    JS_FORMAT_URI,
    JS_FORMAT_UUID,
    JS_FORMAT_IPV4,
    JS_FORMAT_IPV6,
};

struct js_node;

struct js_regex {
    pcre2_code *code;   /* compiled once; pcre2_code is safe to share between threads */
    const char *source; /* the pattern as written, for messages (borrowed from the document) */
};

struct js_property {
    const char *name; /* borrowed from the document */
    const struct js_node *schema;
};

struct js_pattern_property {
    struct js_regex regex;
    const struct js_node *schema;
};

/* dependencies: either a schema or a list of property names. */
struct js_dependency {
    const char *name;
    const struct js_node *schema; /* NULL for a name list */
    const json_t *names;          /* array of strings, or NULL */
};

struct js_list {
    const struct js_node **items;
    size_t count;
};

/* A limit given by a JSON number: kept as written (for messages and exact integer compares). */
struct js_number {
    const json_t *value; /* NULL when the keyword is absent */
    bool exclusive;      /* draft-04 exclusiveMinimum/Maximum: true */
};

struct js_node {
    int boolean;               /* -1 for an object schema, else the boolean schema's value */
    const struct js_node *ref; /* $ref: its target replaces every sibling keyword */
    const char *ref_text;
    unsigned types; /* enum js_type bits; 0 when "type" is absent */
    const json_t *enum_values;
    const json_t *const_value;
    struct js_number minimum, maximum, exclusive_minimum, exclusive_maximum;
    const json_t *multiple_of;
    json_int_t min_length, max_length; /* -1 when absent */
    struct js_regex pattern;           /* code NULL when absent */
    enum js_format format;
    const char *format_name;
    const struct js_node *items; /* items as one schema */
    struct js_list item_list;    /* items as an array of schemas */
    bool items_is_list;
    const struct js_node *additional_items;
    json_int_t min_items, max_items;
    bool unique_items;
    const struct js_node *contains;
    struct js_property *properties;
    size_t property_count;
    json_t *property_index; /* name -> index into properties: one lookup per member */
    struct js_pattern_property *pattern_properties;
    size_t pattern_property_count;
    const struct js_node *additional_properties;
    const json_t *required; /* array of strings, or NULL */
    json_int_t min_properties, max_properties;
    const struct js_node *property_names;
    struct js_dependency *dependencies;
    size_t dependency_count;
    struct js_list all_of, any_of, one_of;
    const struct js_node *not_schema;
    const struct js_node *if_schema, *then_schema, *else_schema;
};

struct osbq_schema {
    json_t *doc; /* referenced: every borrowed string points into it */
    const struct js_node *root;
    struct js_node **nodes; /* every node, for freeing */
    size_t node_count;
    pcre2_match_context *match_context; /* the match limits; only read while matching */
};

/* Format checks (schema_format.c). */
enum js_format js_format_lookup(const char *name);
bool js_format_valid(enum js_format format, const char *s, size_t len);

#endif
