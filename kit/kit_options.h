/* The command line of osbq-exec-kit, checked, and the JSON values its options name (inline or
 * @FILE). No I/O but reading an @FILE, so the parsing is unit-tested alone. */
#ifndef OSBQ_KIT_OPTIONS_H
#define OSBQ_KIT_OPTIONS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define KIT_PROG "osbq-exec-kit"

/* Most --plan and --env options, and operations named on one line. */
#define KIT_PLANS_MAX 64
#define KIT_ENV_MAX   64
#define KIT_OPS_MAX   64
/* Largest file an option may name (@FILE). */
#define KIT_JSON_FILE_MAX (1024 * 1024)

/* What the kit can run: the five operations, and a fetch (what GET answers from the recorded
 * results: no program runs). */
enum kit_op {
    KIT_OP_PROVISION,
    KIT_OP_UPDATE,
    KIT_OP_BIND,
    KIT_OP_UNBIND,
    KIT_OP_DEPROVISION,
    KIT_OP_FETCH,
};

/* The command line. Strings are borrowed from argv. */
struct kit_options {
    const char *catalog;              /* --catalog FILE, or NULL ($OSBQ_CATALOG) */
    const char *plans[KIT_PLANS_MAX]; /* --plan: ids, names or service/plan names */
    size_t plan_count;                /* 0: every exec plan of the catalog */
    const char *update_plan;          /* --update-plan: an update's target plan, or NULL */
    const char *parameters;           /* --params: provision's (and update's) parameters */
    const char *update_parameters;    /* --update-params, or NULL (--params) */
    const char *bind_parameters;      /* --bind-params, or NULL (none) */
    const char *context;              /* --context: every operation's context, or NULL */
    const char *bind_resource;        /* --bind-resource: a bind's, or NULL */
    const char *instance_id;          /* --instance, or NULL (a new id per run) */
    const char *binding_id;           /* --binding, or NULL (a new id per run) */
    const char *env[KIT_ENV_MAX];     /* --env NAME=VALUE, checked */
    size_t env_count;                 /* how many */
    enum kit_op ops[KIT_OPS_MAX];     /* the operations named, in order */
    size_t op_count;                  /* 0: the whole lifecycle */
    bool check;                       /* --check: reruns and the contract's error paths too */
    bool quiet;                       /* --quiet: no stdin, stdout, stderr lines */
    bool help;                        /* -h, --help */
    bool version;                     /* --version */
};

/* Parses argv[1..argc-1] into *out (zeroed first). Returns 0, or -1 with a one-line reason in
 * err (err_size > 0). */
int kit_options_parse(int argc, char **argv, struct kit_options *out, char *err, size_t err_size);

/* The name of op ("provision", ..., "fetch"). */
const char *kit_op_name(enum kit_op op);

/* The JSON object an option gives: arg itself, or the contents of the file FILE when arg is
 * "@FILE" (at most KIT_JSON_FILE_MAX bytes). what names the option in the reason. Returns 0
 * with *out (a new reference), or -1 with a one-line reason in err. */
int kit_json_arg(const char *what, const char *arg, json_t **out, char *err, size_t err_size);

#endif
