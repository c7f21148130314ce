/* The command line of osbq-exec-kit: a table of options, each with the field it sets. */
#include "kit_options.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[] = {
    [KIT_OP_PROVISION] = "provision",
    [KIT_OP_UPDATE] = "update",
    [KIT_OP_BIND] = "bind",
    [KIT_OP_UNBIND] = "unbind",
    [KIT_OP_DEPROVISION] = "deprovision",
    [KIT_OP_FETCH] = "fetch",
};

/* Options without a value, by the bool they set in struct kit_options. */
static const struct {
    const char *name; /* as written on the command line */
    size_t field;     /* offsetof the bool it sets */
} flag_options[] = {
    {"--check", offsetof(struct kit_options, check)},
    {"--quiet", offsetof(struct kit_options, quiet)},
    {"--help", offsetof(struct kit_options, help)},
    {"-h", offsetof(struct kit_options, help)},
    {"--version", offsetof(struct kit_options, version)},
};

/* Options that set one string, by where the field is in struct kit_options. */
static const struct {
    const char *name; /* as written on the command line */
    size_t field;     /* offsetof the const char * it sets */
} string_options[] = {
    {"--catalog", offsetof(struct kit_options, catalog)},
    {"--update-plan", offsetof(struct kit_options, update_plan)},
    {"--params", offsetof(struct kit_options, parameters)},
    {"--update-params", offsetof(struct kit_options, update_parameters)},
    {"--bind-params", offsetof(struct kit_options, bind_parameters)},
    {"--context", offsetof(struct kit_options, context)},
    {"--bind-resource", offsetof(struct kit_options, bind_resource)},
    {"--instance", offsetof(struct kit_options, instance_id)},
    {"--binding", offsetof(struct kit_options, binding_id)},
};

static int fail(char *err, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(err, size, fmt, ap);
    va_end(ap);
    return -1;
}

const char *kit_op_name(enum kit_op op)
{
    return (size_t)op < sizeof op_names / sizeof op_names[0] ? op_names[op] : "?";
}

/* NAME=VALUE with NAME a shell variable name: letters, digits and '_', not starting with a
 * digit. */
static bool env_assignment(const char *text)
{
    const char *eq = strchr(text, '=');
    if (eq == NULL || eq == text || (*text >= '0' && *text <= '9'))
        return false;
    for (const char *p = text; p < eq; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    return true;
}

/* Handles the option name (its value, when it takes one, in value: NULL when missing). Returns
 * 1 when it consumed value, 0 when not, -1 with err. */
static int take_option(struct kit_options *o, const char *name, const char *value, char *err,
                       size_t size)
{
    for (size_t f = 0; f < sizeof flag_options / sizeof flag_options[0]; f++) {
        if (strcmp(name, flag_options[f].name) == 0) {
            *(bool *)(void *)((char *)o + flag_options[f].field) = true;
            return 0;
        }
    }
    bool known = strcmp(name, "--plan") == 0 || strcmp(name, "--env") == 0;
    size_t i = 0;
    for (; !known && i < sizeof string_options / sizeof string_options[0]; i++)
        known = strcmp(name, string_options[i].name) == 0;
    if (!known)
        return fail(err, size, "unknown option %s", name);
    if (value == NULL)
        return fail(err, size, "%s needs a value", name);
    if (strcmp(name, "--plan") == 0) {
        if (o->plan_count == KIT_PLANS_MAX)
            return fail(err, size, "more than %d --plan options", KIT_PLANS_MAX);
        if (value[0] == '\0')
            return fail(err, size, "--plan needs a plan id or name");
        o->plans[o->plan_count++] = value;
        return 1;
    }
    if (strcmp(name, "--env") == 0) {
        if (o->env_count == KIT_ENV_MAX)
            return fail(err, size, "more than %d --env options", KIT_ENV_MAX);
        if (!env_assignment(value))
            return fail(err, size, "--env wants NAME=VALUE (NAME of letters, digits and _): %s",
                        value);
        o->env[o->env_count++] = value;
        return 1;
    }
    const char **field = (const char **)(void *)((char *)o + string_options[i - 1].field);
    if (*field != NULL)
        return fail(err, size, "%s given twice", name);
    if (value[0] == '\0')
        return fail(err, size, "%s needs a non-empty value", name);
    *field = value;
    return 1;
}

static int take_operation(struct kit_options *o, const char *word, char *err, size_t size)
{
    for (size_t i = 0; i < sizeof op_names / sizeof op_names[0]; i++) {
        if (strcmp(word, op_names[i]) != 0)
            continue;
        if (o->op_count == KIT_OPS_MAX)
            return fail(err, size, "more than %d operations", KIT_OPS_MAX);
        o->ops[o->op_count++] = (enum kit_op)i;
        return 0;
    }
    return fail(err, size,
                "unknown operation %s (provision, update, bind, unbind, deprovision, fetch)", word);
}

int kit_options_parse(int argc, char **argv, struct kit_options *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    bool operands_only = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (operands_only || arg[0] != '-' || arg[1] == '\0') {
            if (take_operation(out, arg, err, err_size) < 0)
                return -1;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            operands_only = true;
            continue;
        }
        /* --name=value, or --name value. */
        char name[32];
        const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
        const char *value = NULL;
        if (eq != NULL) {
            size_t len = (size_t)(eq - arg);
            if (len >= sizeof name)
                return fail(err, err_size, "unknown option %.*s", (int)len, arg);
            memcpy(name, arg, len);
            name[len] = '\0';
            value = eq + 1;
        } else {
            if (strlen(arg) >= sizeof name)
                return fail(err, err_size, "unknown option %s", arg);
            memcpy(name, arg, strlen(arg) + 1);
            value = i + 1 < argc ? argv[i + 1] : NULL;
        }
        int used = take_option(out, name, value, err, err_size);
        if (used < 0)
            return -1;
        if (used == 0 && eq != NULL)
            return fail(err, err_size, "%s takes no value", name);
        if (used == 1 && eq == NULL)
            i++;
    }
    return 0;
}

/* Reads at most KIT_JSON_FILE_MAX bytes of path into a new NUL-terminated buffer. */
static char *read_file(const char *path, char *err, size_t size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        (void)fail(err, size, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char *text = malloc(KIT_JSON_FILE_MAX + 1);
    size_t n = text != NULL ? fread(text, 1, KIT_JSON_FILE_MAX + 1, f) : 0;
    bool failed = text == NULL || ferror(f) != 0;
    fclose(f);
    if (failed || n > KIT_JSON_FILE_MAX) {
        if (text == NULL)
            (void)fail(err, size, "out of memory");
        else if (failed)
            (void)fail(err, size, "cannot read %s", path);
        else
            (void)fail(err, size, "%s is over %d bytes", path, KIT_JSON_FILE_MAX);
        free(text);
        return NULL;
    }
    text[n] = '\0';
    return text;
}

int kit_json_arg(const char *what, const char *arg, json_t **out, char *err, size_t err_size)
{
    char *file_text = NULL;
    const char *text = arg;
    if (arg[0] == '@') {
        if ((file_text = read_file(arg + 1, err, err_size)) == NULL)
            return -1;
        text = file_text;
    }
    json_error_t jerr;
    json_t *value = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    free(file_text);
    if (value == NULL)
        return fail(err, err_size, "%s: not JSON (%s, line %d column %d)", what, jerr.text,
                    jerr.line, jerr.column);
    if (!json_is_object(value)) {
        json_decref(value);
        return fail(err, err_size, "%s: not a JSON object", what);
    }
    *out = value;
    return 0;
}
