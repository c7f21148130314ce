/* Compiling schemas: the walk that compiles each schema of the document once into a node (memo by
 * address, so $ref cycles end) and each keyword's value, checked against its draft's rules and
 * compiled into the node (numbers, strings with their regex, arrays, objects, logic,
 * definitions, $ref through schema_ref.c's resolution). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "schema_compiler.h"

/* Fails with the path naming keyword: "<path>.<keyword>: <what>". */
static int keyword_fail(struct compiler *c, const char *keyword, const char *what)
{
    js_path_push(c, keyword);
    return js_fail(c, OSBQ_SCHEMA_INVALID, "%s", what);
}

/* The types a keyword's value may have, as predicates for typed_keyword (jansson's are
 * macros). */
static bool is_number(const json_t *v)
{
    return json_is_number(v);
}

static bool is_boolean(const json_t *v)
{
    return json_is_boolean(v);
}

static bool is_string(const json_t *v)
{
    return json_is_string(v);
}

static bool is_array(const json_t *v)
{
    return json_is_array(v);
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

/* obj[keyword] into *out, NULL when absent; present, it must pass is, else "<keyword>: <what>". */
static int typed_keyword(struct compiler *c, json_t *obj, const char *keyword,
                         bool (*is)(const json_t *), const char *what, json_t **out)
{
    *out = json_object_get(obj, keyword);
    return *out == NULL || is(*out) ? 0 : keyword_fail(c, keyword, what);
}

/* Compiles obj[keyword] when present (a schema). */
static int sub_schema(struct compiler *c, json_t *obj, const char *keyword, const char *base,
                      const struct js_node **out)
{
    json_t *v = json_object_get(obj, keyword);
    *out = NULL;
    if (v == NULL)
        return 0;
    size_t mark = js_path_push(c, keyword);
    /* Draft-04 allows booleans only in additionalItems/additionalProperties. */
    bool allow_boolean = c->draft != OSBQ_SCHEMA_DRAFT4 ||
                         strcmp(keyword, "additionalItems") == 0 ||
                         strcmp(keyword, "additionalProperties") == 0;
    if (js_compile(c, v, base, allow_boolean, out) < 0)
        return -1;
    js_path_pop(c, mark);
    return 0;
}

/* Compiles each schema of array into out, the path naming its index. */
static int compile_list(struct compiler *c, json_t *array, const char *base, struct js_list *out)
{
    /* +1: calloc(0) may return NULL, and draft-06 allows an empty "items". */
    out->items = calloc(json_array_size(array) + 1, sizeof *out->items);
    if (out->items == NULL)
        return js_no_memory(c);
    size_t i;
    json_t *item;
    json_array_foreach (array, i, item) {
        size_t mark = js_path_index(c, i);
        if (js_compile_member(c, item, base, &out->items[i]) < 0)
            return -1;
        out->count++;
        js_path_pop(c, mark);
    }
    return 0;
}

/* obj[keyword]: a non-empty array of schemas. */
static int schema_list(struct compiler *c, json_t *obj, const char *keyword, const char *base,
                       struct js_list *out)
{
    json_t *v = json_object_get(obj, keyword);
    if (v == NULL)
        return 0;
    size_t mark = js_path_push(c, keyword);
    if (!json_is_array(v) || json_array_size(v) == 0)
        return js_fail(c, OSBQ_SCHEMA_INVALID, "must be a non-empty array of schemas");
    if (compile_list(c, v, base, out) < 0)
        return -1;
    js_path_pop(c, mark);
    return 0;
}

/* What compiles one member of a keyword's object (a property, a pattern, a dependency, a
 * definition) into n. */
typedef int (*member_fn)(struct compiler *c, const char *key, json_t *value, const char *base,
                         struct js_node *n);

/* Runs member on each member of map, the path naming the member. */
static int each_member(struct compiler *c, json_t *map, member_fn member, const char *base,
                       struct js_node *n)
{
    const char *key;
    json_t *value;
    json_object_foreach (map, key, value) {
        size_t mark = js_path_push(c, key);
        if (member(c, key, value, base, n) < 0)
            return -1;
        js_path_pop(c, mark);
    }
    return 0;
}

/* What compiles a keyword's whole object into n. */
typedef int (*map_fn)(struct compiler *c, json_t *map, const char *base, struct js_node *n);

/* s[keyword], when present: an object (else "must be <what>") compiled by compile, the path
 * naming the keyword. */
static int object_keyword(struct compiler *c, json_t *s, const char *keyword, const char *what,
                          map_fn compile, const char *base, struct js_node *n)
{
    json_t *map = json_object_get(s, keyword);
    if (map == NULL)
        return 0;
    size_t mark = js_path_push(c, keyword);
    if (!json_is_object(map))
        return js_fail(c, OSBQ_SCHEMA_INVALID, "must be %s", what);
    if (compile(c, map, base, n) < 0)
        return -1;
    js_path_pop(c, mark);
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
    if (!whole || d < 0)
        return keyword_fail(c, keyword, "must be a non-negative integer");
    *out = json_is_integer(v) ? json_integer_value(v) : (json_int_t)d;
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
        return js_fail(c, OSBQ_SCHEMA_INVALID, "invalid regular expression at offset %zu: %s",
                       (size_t)offset, (const char *)text);
    }
    return 0;
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
    size_t mark = js_path_push(c, "type");
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
        return js_fail(c, OSBQ_SCHEMA_INVALID,
                       "must be a type name (null, boolean, object, array, number, string, "
                       "integer) or a non-empty array of them");
    js_path_pop(c, mark);
    return 0;
}

/* minimum and maximum; exclusiveMinimum and exclusiveMaximum, which draft-04 writes as booleans
 * that make minimum and maximum exclusive and later drafts as limits of their own; multipleOf. */
static int compile_numbers(struct compiler *c, json_t *s, struct js_node *n)
{
    bool draft4 = c->draft == OSBQ_SCHEMA_DRAFT4;
    bool (*exclusive_type)(const json_t *) = draft4 ? is_boolean : is_number;
    const char *exclusive_what = draft4 ? "must be a boolean in draft-04" : "must be a number";
    json_t *minimum, *maximum, *exclusive_minimum, *exclusive_maximum;
    if (typed_keyword(c, s, "minimum", is_number, "must be a number", &minimum) < 0 ||
        typed_keyword(c, s, "maximum", is_number, "must be a number", &maximum) < 0 ||
        typed_keyword(c, s, "exclusiveMinimum", exclusive_type, exclusive_what,
                      &exclusive_minimum) < 0 ||
        typed_keyword(c, s, "exclusiveMaximum", exclusive_type, exclusive_what,
                      &exclusive_maximum) < 0)
        return -1;
    n->minimum.value = minimum;
    n->maximum.value = maximum;
    if (draft4) {
        n->minimum.exclusive = json_is_true(exclusive_minimum);
        n->maximum.exclusive = json_is_true(exclusive_maximum);
    } else {
        n->exclusive_minimum.value = exclusive_minimum;
        n->exclusive_maximum.value = exclusive_maximum;
    }
    n->exclusive_minimum.exclusive = n->exclusive_maximum.exclusive = true;
    json_t *m = json_object_get(s, "multipleOf");
    if (m != NULL) {
        if (!json_is_number(m) || json_number_value(m) <= 0)
            return keyword_fail(c, "multipleOf", "must be a number greater than 0");
        n->multiple_of = m;
    }
    return 0;
}

static int compile_strings(struct compiler *c, json_t *s, struct js_node *n)
{
    if (count_keyword(c, s, "minLength", &n->min_length) < 0 ||
        count_keyword(c, s, "maxLength", &n->max_length) < 0)
        return -1;
    json_t *pattern;
    if (typed_keyword(c, s, "pattern", is_string, "must be a string", &pattern) < 0)
        return -1;
    if (pattern != NULL) {
        size_t mark = js_path_push(c, "pattern");
        if (compile_regex(c, json_string_value(pattern), &n->pattern) < 0)
            return -1;
        js_path_pop(c, mark);
    }
    json_t *format;
    if (typed_keyword(c, s, "format", is_string, "must be a string", &format) < 0)
        return -1;
    if (format != NULL) {
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
        size_t mark = js_path_push(c, "items");
        if (compile_list(c, items, base, &n->item_list) < 0)
            return -1;
        js_path_pop(c, mark);
    } else if (sub_schema(c, s, "items", base, &n->items) < 0) {
        return -1;
    }
    if (sub_schema(c, s, "additionalItems", base, &n->additional_items) < 0 ||
        count_keyword(c, s, "minItems", &n->min_items) < 0 ||
        count_keyword(c, s, "maxItems", &n->max_items) < 0)
        return -1;
    json_t *unique;
    if (typed_keyword(c, s, "uniqueItems", is_boolean, "must be a boolean", &unique) < 0)
        return -1;
    n->unique_items = json_is_true(unique);
    if (c->draft != OSBQ_SCHEMA_DRAFT4 && sub_schema(c, s, "contains", base, &n->contains) < 0)
        return -1;
    return 0;
}

static int compile_property(struct compiler *c, const char *key, json_t *value, const char *base,
                            struct js_node *n)
{
    struct js_property *p = &n->properties[n->property_count];
    p->name = key;
    if (json_object_set_new(n->property_index, key, json_integer((json_int_t)n->property_count)) <
        0)
        return js_no_memory(c);
    if (js_compile_member(c, value, base, &p->schema) < 0)
        return -1;
    n->property_count++;
    return 0;
}

/* properties: name -> schema, with an index for one lookup per member of an instance. */
static int compile_property_map(struct compiler *c, json_t *map, const char *base,
                                struct js_node *n)
{
    n->properties = calloc(json_object_size(map) + 1, sizeof *n->properties);
    n->property_index = json_object();
    if (n->properties == NULL || n->property_index == NULL)
        return js_no_memory(c);
    return each_member(c, map, compile_property, base, n);
}

static int compile_pattern_property(struct compiler *c, const char *key, json_t *value,
                                    const char *base, struct js_node *n)
{
    struct js_pattern_property *p = &n->pattern_properties[n->pattern_property_count];
    if (compile_regex(c, key, &p->regex) < 0)
        return -1;
    n->pattern_property_count++;
    return js_compile_member(c, value, base, &p->schema);
}

/* patternProperties: regex -> schema. */
static int compile_pattern_map(struct compiler *c, json_t *map, const char *base, struct js_node *n)
{
    n->pattern_properties = calloc(json_object_size(map) + 1, sizeof *n->pattern_properties);
    if (n->pattern_properties == NULL)
        return js_no_memory(c);
    return each_member(c, map, compile_pattern_property, base, n);
}

static int compile_dependency(struct compiler *c, const char *key, json_t *value, const char *base,
                              struct js_node *n)
{
    struct js_dependency *d = &n->dependencies[n->dependency_count];
    d->name = key;
    if (json_is_array(value)) {
        if (!string_array(value))
            return js_fail(c, OSBQ_SCHEMA_INVALID, "must be an array of strings or a schema");
        d->names = value;
    } else if (js_compile_member(c, value, base, &d->schema) < 0) {
        return -1;
    }
    n->dependency_count++;
    return 0;
}

/* dependencies: name -> the names it requires, or a schema the whole object must match. */
static int compile_dependency_map(struct compiler *c, json_t *map, const char *base,
                                  struct js_node *n)
{
    n->dependencies = calloc(json_object_size(map) + 1, sizeof *n->dependencies);
    if (n->dependencies == NULL)
        return js_no_memory(c);
    return each_member(c, map, compile_dependency, base, n);
}

static int compile_required(struct compiler *c, json_t *s, struct js_node *n)
{
    json_t *required;
    if (typed_keyword(c, s, "required", string_array, "must be an array of strings", &required) < 0)
        return -1;
    n->required = required;
    return 0;
}

static int compile_properties(struct compiler *c, json_t *s, const char *base, struct js_node *n)
{
    if (object_keyword(c, s, "properties", "an object of schemas", compile_property_map, base, n) <
            0 ||
        object_keyword(c, s, "patternProperties", "an object of schemas", compile_pattern_map, base,
                       n) < 0 ||
        sub_schema(c, s, "additionalProperties", base, &n->additional_properties) < 0 ||
        compile_required(c, s, n) < 0 ||
        count_keyword(c, s, "minProperties", &n->min_properties) < 0 ||
        count_keyword(c, s, "maxProperties", &n->max_properties) < 0)
        return -1;
    if (c->draft != OSBQ_SCHEMA_DRAFT4 &&
        sub_schema(c, s, "propertyNames", base, &n->property_names) < 0)
        return -1;
    return object_keyword(c, s, "dependencies", "an object", compile_dependency_map, base, n);
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

/* definitions/$defs are compiled too, so a broken one is reported even when nothing uses it;
 * what uses one reaches it through $ref. */
static int compile_definition(struct compiler *c, const char *key, json_t *value, const char *base,
                              struct js_node *n)
{
    (void)key;
    (void)n;
    const struct js_node *ignored;
    return js_compile_member(c, value, base, &ignored);
}

static int compile_definition_map(struct compiler *c, json_t *map, const char *base,
                                  struct js_node *n)
{
    return each_member(c, map, compile_definition, base, n);
}

static int compile_definitions(struct compiler *c, json_t *s, const char *base)
{
    if (object_keyword(c, s, "definitions", "an object of schemas", compile_definition_map, base,
                       NULL) < 0 ||
        object_keyword(c, s, "$defs", "an object of schemas", compile_definition_map, base, NULL) <
            0)
        return -1;
    return 0;
}

/* $ref: its target, compiled, replaces every sibling keyword. */
static int compile_ref(struct compiler *c, json_t *ref, const char *base, struct js_node *n)
{
    size_t mark = js_path_push(c, "$ref");
    if (!json_is_string(ref))
        return js_fail(c, OSBQ_SCHEMA_INVALID, "must be a string");
    n->ref_text = json_string_value(ref);
    json_t *target = js_resolve_ref(c, base, n->ref_text);
    if (target == NULL)
        return -1;
    /* The target is compiled with the base in scope where it is written. */
    char key[32];
    js_address_key(target, key);
    const char *target_base = json_string_value(json_object_get(c->bases, key));
    if (js_compile_member(c, target, target_base != NULL ? target_base : base, &n->ref) < 0)
        return -1;
    js_path_pop(c, mark);
    return 0;
}

static int compile_keywords(struct compiler *c, json_t *s, const char *base, struct js_node *n)
{
    json_t *ref = json_object_get(s, "$ref");
    if (ref != NULL) {
        if (compile_ref(c, ref, base, n) < 0)
            return -1;
        /* Siblings of $ref are ignored, but definitions next to it stay reachable. */
        return compile_definitions(c, s, base);
    }
    json_t *enum_values;
    if (typed_keyword(c, s, "enum", is_array, "must be an array", &enum_values) < 0)
        return -1;
    n->enum_values = enum_values;
    if (c->draft != OSBQ_SCHEMA_DRAFT4)
        n->const_value = json_object_get(s, "const");
    return compile_type(c, s, n) < 0 || compile_numbers(c, s, n) < 0 ||
                   compile_strings(c, s, n) < 0 || compile_arrays(c, s, base, n) < 0 ||
                   compile_properties(c, s, base, n) < 0 || compile_logic(c, s, base, n) < 0 ||
                   compile_definitions(c, s, base) < 0
               ? -1
               : 0;
}

/* ---- the walk: each schema compiled once ---- */

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
    int rc = compile_keywords(c, s, own_base != NULL ? own_base : base, n);
    c->depth--;
    return rc;
}

int js_compile_member(struct compiler *c, json_t *s, const char *base, const struct js_node **out)
{
    return js_compile(c, s, base, c->draft != OSBQ_SCHEMA_DRAFT4, out);
}
