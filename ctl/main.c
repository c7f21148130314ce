/* osbq-ctl: the operators' command. Checks the command line, loads the configuration (what
 * reaching Redis needs, nothing more), and runs one command through the store. docs/ctl.md is
 * its reference. */
#include <jansson.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "ctl.h"
#include "log.h"
#include "store.h"

/* Options of commands; --json, --namespace, --help and --version are global. */
enum option_flag {
    OPT_STATE = 1 << 0,
    OPT_LIMIT = 1 << 1,
    OPT_INSTANCE = 1 << 2,
    OPT_DESCRIPTION = 1 << 3,
    OPT_YES = 1 << 4,
    OPT_TOP = 1 << 5,
    OPT_FORCE = 1 << 6,
    OPT_OUTDATED = 1 << 7,
    OPT_TENANT = 1 << 8,
    OPT_OUTPUT = 1 << 9,
    OPT_WALK = 1 << 10,
    OPT_SINCE = 1 << 11,
    OPT_UNTIL = 1 << 12,
    OPT_FOLLOW = 1 << 13,
    OPT_FROM = 1 << 14,
    OPT_TO = 1 << 15,
};

static const struct {
    const char *name; /* as written on the command line */
    unsigned flag;    /* its enum option_flag */
    bool takes_value; /* followed by a value (or written --name=value) */
} command_options[] = {
    {"--state", OPT_STATE, true},       {"--limit", OPT_LIMIT, true},
    {"--instance", OPT_INSTANCE, true}, {"--description", OPT_DESCRIPTION, true},
    {"--yes", OPT_YES, false},          {"--top", OPT_TOP, true},
    {"--force", OPT_FORCE, false},      {"--outdated", OPT_OUTDATED, false},
    {"--tenant", OPT_TENANT, true},     {"--output", OPT_OUTPUT, true},
    {"--walk", OPT_WALK, false},        {"--since", OPT_SINCE, true},
    {"--until", OPT_UNTIL, true},       {"--follow", OPT_FOLLOW, false},
    {"--from", OPT_FROM, true},         {"--to", OPT_TO, true},
};

static const char *const instance_states[] = {"provisioning", "provisioned", "failed", "gone",
                                              NULL};
static const char *const binding_states[] = {"binding", "bound", "failed", "gone", NULL};

/* The default --limit of listings, and --top of stats. */
#define LIMIT_DEFAULT 100U
#define TOP_DEFAULT   10U
#define LIMIT_MAX     100000000UL
/* Longest operation id and --description accepted. */
#define OPERATION_ID_MAX 1024
#define DESCRIPTION_MAX  1024

struct command {
    const char *name;            /* the COMMAND word */
    int (*run)(struct ctl *ctl); /* NULL for help */
    unsigned options;            /* the enum option_flag it takes */
    bool takes_operation;        /* needs OPERATION_ID */
    bool takes_instance;         /* needs INSTANCE_ID */
    bool takes_path;             /* needs PATH (or what path_name says) */
    const char *path_name;       /* the word for it in messages; NULL for "PATH" */
    bool takes_record;           /* needs "instance ID" or "binding ID" */
    bool offline;                /* runs without the configuration and Redis */
    const char *const *states;   /* what --state may be, NULL-terminated */
    const char *would[2];        /* destructive: what it would do, before and after the id */
    const char *args;            /* its arguments, for the usage */
    const char *about;           /* one line, for the usage */
};

static const struct command commands[] = {
    {.name = "instances",
     .run = cmd_instances,
     .options = OPT_STATE | OPT_LIMIT | OPT_OUTDATED,
     .states = instance_states,
     .args = "[--state STATE] [--outdated] [--limit N]",
     .about = "list service instances"},
    {.name = "instance",
     .run = cmd_instance,
     .takes_instance = true,
     .args = "INSTANCE_ID",
     .about = "show an instance, its bindings and its operations"},
    {.name = "bindings",
     .run = cmd_bindings,
     .options = OPT_INSTANCE | OPT_STATE | OPT_LIMIT,
     .states = binding_states,
     .args = "[--instance ID] [--state STATE] [--limit N]",
     .about = "list service bindings"},
    {.name = "operation",
     .run = cmd_operation,
     .takes_operation = true,
     .args = "OPERATION_ID",
     .about = "show an operation and its history"},
    {.name = "gateways",
     .run = cmd_gateways,
     .args = "",
     .about = "list live gateways, their load"},
    {.name = "workers", .run = cmd_workers, .args = "", .about = "list live workers, their load"},
    {.name = "stats",
     .run = cmd_stats,
     .options = OPT_TOP | OPT_WALK,
     .args = "[--top N] [--walk]",
     .about = "count records, operations, processes, workers needed; Redis; busiest tenants"},
    {.name = "events",
     .run = cmd_events,
     .options = OPT_SINCE | OPT_UNTIL | OPT_TENANT | OPT_INSTANCE | OPT_FOLLOW,
     .args = "[--since T] [--until T] [--tenant T] [--instance ID] [--follow]",
     .about = "read the audit trail: requests accepted, operations ended, operator actions"},
    {.name = "usage",
     .run = cmd_usage,
     .options = OPT_FROM | OPT_TO,
     .args = "--from T [--to T]",
     .about = "instance-hours and bindings per platform, tenant and plan, from the audit trail"},
    {.name = "quotas",
     .run = cmd_quotas,
     .args = "",
     .about = "how full each quota of OSBQ_POLICY is"},
    {.name = "fail",
     .run = cmd_fail,
     .options = OPT_DESCRIPTION | OPT_YES,
     .takes_operation = true,
     .would = {"mark operation ", " failed whoever runs it, free its lock and answer the "
                                  "requests waiting for it"},
     .args = "OPERATION_ID [--description TEXT] --yes",
     .about = "mark a stuck operation failed"},
    {.name = "resend",
     .run = cmd_resend,
     .options = OPT_YES,
     .takes_operation = true,
     .would = {"take operation ", " from the worker running it (if any) and have a gateway "
                                  "send it to a worker again"},
     .args = "OPERATION_ID --yes",
     .about = "send a stuck operation to a worker again"},
    {.name = "purge",
     .run = cmd_purge,
     .options = OPT_YES | OPT_FORCE | OPT_INSTANCE,
     .takes_record = true,
     .would = {"forget the records of ", " without calling any backend"},
     .args = "instance|binding ID [--instance ID] [--force] --yes",
     .about = "forget an instance (with its bindings) or a binding"},
    {.name = "recount",
     .run = cmd_recount,
     .options = OPT_YES,
     .would = {"drop the count of live records and count every record again (a walk of the "
               "namespace, paced as the gateways pace theirs)",
               ""},
     .args = "--yes",
     .about = "count every live record again (after a release without the count ran)"},
    {.name = "reencrypt",
     .run = cmd_reencrypt,
     .options = OPT_YES,
     .would = {"rewrite every sealed value stored (binding results, request parameters, "
               "contexts, bind resources, saved step states) under the first key of "
               "OSBQ_SECRET_KEY_FILE",
               ""},
     .args = "--yes",
     .about = "reseal every sealed value under the first key"},
    {.name = "secret-key",
     .run = cmd_secret_key,
     .offline = true,
     .args = "",
     .about = "print a new key for OSBQ_SECRET_KEY_FILE"},
    {.name = "bus-cert",
     .run = cmd_bus_cert,
     .takes_path = true,
     .offline = true,
     .args = "PATH",
     .about = "new bus key pair: PATH (public), PATH_secret"},
    {.name = "export",
     .run = cmd_export,
     .options = OPT_TENANT | OPT_INSTANCE | OPT_OUTPUT,
     .args = "[--tenant T | --instance ID] [--output FILE]",
     .about = "write instances, bindings, operations as JSON Lines"},
    {.name = "import",
     .run = cmd_import,
     .options = OPT_YES,
     .takes_path = true,
     .path_name = "FILE",
     .args = "FILE [--yes]",
     .about = "check an export file; with --yes write its instances"},
    {.name = "help", .args = "", .about = "print this help"},
};

static void vsay(const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: ", CTL_PROG);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void ctl_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

int ctl_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    return CTL_EXIT_FAILURE;
}

int ctl_fail_store(const char *what, const struct osbq_error *err)
{
    return ctl_fail("%s: %s", what, err->text[0] != '\0' ? err->text : "failed");
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s [--json] [--namespace NS] COMMAND [ARGS]\n"
            "The operators' command of osbq: reads the broker's state in Redis, and "
            "repairs stuck operations.\n\nCommands:\n",
            CTL_PROG);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        char line[96];
        (void)snprintf(line, sizeof line, "%s %s", commands[i].name, commands[i].args);
        fprintf(out, "  %-52s %s\n", line, commands[i].about);
    }
    fprintf(out,
            "\nOptions (anywhere on the line; --name=value works too):\n"
            "  --json          print one JSON document on stdout, for scripts\n"
            "  --namespace NS  the key namespace to read, instead of OSBQ_NAMESPACE\n"
            "  --limit N       most records listed (default %u; 0 lists all)\n"
            "  --top N         stats: tenants listed, most operations in progress first\n"
            "                  (default %u; 0 lists all)\n"
            "  --yes           let fail, resend, purge, recount, reencrypt and import act (they\n"
            "                  refuse without it; import then only checks FILE)\n"
            "  --force         purge: fail the operation that runs first\n"
            "  --outdated      instances: only those whose maintenance_info version is behind\n"
            "                  their plan's in OSBQ_CATALOG\n"
            "  --tenant T      export: only the instances of tenant T\n"
            "  --output FILE   export: write FILE (mode 0600) instead of stdout\n"
            "  --since T, --until T  events: from, up to time T: RFC 3339 (2026-12-01T10:00:00Z),\n"
            "                  epoch ms, or an age ago (90s, 30m, 24h, 7d)\n"
            "  --follow        events: print new events as they come, until interrupted\n"
            "  --from T, --to T  usage: the window counted (--to: now by default)\n"
            "  --walk          stats: count instances and bindings by a walk of every record\n"
            "                  (gone ones too) instead of reading the count the scripts keep\n"
            "  -h, --help      print this help\n"
            "  --version       print the version\n"
            "\nExit status: 0 done; 1 bad configuration, Redis unreachable, a bad export file or\n"
            "another failure; 2 bad command line, or fail/resend/purge/import without --yes;\n"
            "3 no such operation, instance or binding, or fail/resend found it already\n"
            "finished; 4 resend or purge refused (an operation of it runs), export partial\n"
            "(instances skipped: an operation of each runs), import refused ids taken.\n"
            "Reference: docs/ctl.md.\n\n",
            LIMIT_DEFAULT, TOP_DEFAULT);
    osbq_config_print_help(out, OSBQ_ROLE_CTL);
}

/* Prints "osbq-ctl: <message>" and a hint; returns CTL_EXIT_USAGE. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try '%s --help'.\n", CTL_PROG);
    return CTL_EXIT_USAGE;
}

/* The command line as read, before it is checked against the command. */
struct command_line {
    const struct command *command; /* the COMMAND, or NULL when none was given */
    const char *args[2];           /* its positional arguments */
    size_t nargs;                  /* how many */
    unsigned seen;                 /* options given (enum option_flag) */
    const char *values[sizeof command_options / sizeof command_options[0]]; /* their values */
    const char *namespace_;   /* --namespace, or NULL */
    bool json, help, version; /* the global flags */
};

static const struct command *command_find(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* True when arg is the option name, alone or as "name=value" (*value then points past '='). */
static bool option_is(const char *arg, const char *name, const char **value)
{
    size_t len = strlen(name);
    if (strncmp(arg, name, len) != 0)
        return false;
    if (arg[len] == '\0') {
        *value = NULL;
        return true;
    }
    if (arg[len] == '=') {
        *value = arg + len + 1;
        return true;
    }
    return false;
}

/* Reads an option that takes a value: from "=value" or the next argument. Returns 0 or
 * CTL_EXIT_USAGE. */
static int option_value(int argc, char **argv, int *i, const char *name, const char *inline_value,
                        const char **out)
{
    if (inline_value != NULL) {
        *out = inline_value;
    } else if (*i + 1 < argc) {
        *out = argv[++*i];
    } else {
        return usage_error("option %s needs a value", name);
    }
    if ((*out)[0] == '\0')
        return usage_error("option %s needs a non-empty value", name);
    return 0;
}

/* Reads one option argv[*i] (which may consume the next argument). */
static int read_option(int argc, char **argv, int *i, struct command_line *line)
{
    const char *arg = argv[*i], *value = NULL;
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
        line->help = true;
        return 0;
    }
    if (strcmp(arg, "--version") == 0) {
        line->version = true;
        return 0;
    }
    if (option_is(arg, "--json", &value)) {
        if (value != NULL)
            return usage_error("option --json takes no value");
        line->json = true;
        return 0;
    }
    if (option_is(arg, "--namespace", &value))
        return option_value(argc, argv, i, "--namespace", value, &line->namespace_);
    for (size_t k = 0; k < sizeof command_options / sizeof command_options[0]; k++) {
        const char *name = command_options[k].name;
        if (!option_is(arg, name, &value))
            continue;
        if (line->seen & command_options[k].flag)
            return usage_error("option %s given twice", name);
        line->seen |= command_options[k].flag;
        if (!command_options[k].takes_value) {
            if (value != NULL)
                return usage_error("option %s takes no value", name);
            return 0;
        }
        return option_value(argc, argv, i, name, value, &line->values[k]);
    }
    return usage_error("unknown option %s", arg);
}

static int read_command_line(int argc, char **argv, struct command_line *line)
{
    bool options_done = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!options_done && strcmp(arg, "--") == 0) {
            options_done = true;
        } else if (!options_done && arg[0] == '-' && arg[1] != '\0') {
            int rc = read_option(argc, argv, &i, line);
            if (rc != 0)
                return rc;
        } else if (line->command == NULL) {
            line->command = command_find(arg);
            if (line->command == NULL)
                return usage_error("unknown command \"%s\"", arg);
        } else if (line->nargs < sizeof line->args / sizeof line->args[0]) {
            line->args[line->nargs++] = arg;
        } else {
            return usage_error("unexpected argument \"%s\"", arg);
        }
    }
    return 0;
}

static const char *value_of(const struct command_line *line, unsigned flag)
{
    for (size_t k = 0; k < sizeof command_options / sizeof command_options[0]; k++)
        if (command_options[k].flag == flag)
            return line->values[k];
    return NULL;
}

/* Whether the options given apply to the command and its operands are there, no more. */
static int check_operands(const struct command_line *line)
{
    const struct command *cmd = line->command;
    for (size_t k = 0; k < sizeof command_options / sizeof command_options[0]; k++)
        if ((line->seen & command_options[k].flag) && !(cmd->options & command_options[k].flag))
            return usage_error("option %s does not apply to %s", command_options[k].name,
                               cmd->name);
    if (cmd->takes_operation && line->nargs == 0)
        return usage_error("%s needs an OPERATION_ID", cmd->name);
    if (cmd->takes_path && (line->nargs == 0 || line->args[0][0] == '\0'))
        return usage_error("%s needs a %s", cmd->name,
                           cmd->path_name != NULL ? cmd->path_name : "PATH");
    if (cmd->takes_instance && (line->nargs == 0 || line->args[0][0] == '\0'))
        return usage_error("%s needs an INSTANCE_ID", cmd->name);
    if (cmd->takes_record &&
        (line->nargs < 2 || line->args[1][0] == '\0' ||
         (strcmp(line->args[0], "instance") != 0 && strcmp(line->args[0], "binding") != 0)))
        return usage_error("%s needs \"instance ID\" or \"binding ID\"", cmd->name);
    size_t operands = cmd->takes_record                                                ? 2
                      : cmd->takes_operation || cmd->takes_path || cmd->takes_instance ? 1
                                                                                       : 0;
    if (line->nargs > operands)
        return usage_error("unexpected argument \"%s\"", line->args[operands]);
    return 0;
}

/* The flags and the plain values into *opt, and the combinations refused. */
static int read_flags(const struct command_line *line, struct ctl_options *opt)
{
    const struct command *cmd = line->command;
    opt->json = line->json;
    opt->yes = (line->seen & OPT_YES) != 0;
    opt->force = (line->seen & OPT_FORCE) != 0;
    opt->outdated = (line->seen & OPT_OUTDATED) != 0;
    opt->walk = (line->seen & OPT_WALK) != 0;
    opt->follow = (line->seen & OPT_FOLLOW) != 0;
    opt->tenant = value_of(line, OPT_TENANT);
    opt->output = value_of(line, OPT_OUTPUT);
    opt->since =
        value_of(line, OPT_SINCE) != NULL ? value_of(line, OPT_SINCE) : value_of(line, OPT_FROM);
    opt->until =
        value_of(line, OPT_UNTIL) != NULL ? value_of(line, OPT_UNTIL) : value_of(line, OPT_TO);
    opt->instance = cmd->takes_instance ? line->args[0] : value_of(line, OPT_INSTANCE);
    if (cmd->takes_path)
        opt->path = line->args[0];
    if (opt->tenant != NULL && (line->seen & OPT_INSTANCE) && strcmp(cmd->name, "export") == 0)
        return usage_error("--tenant and --instance do not go together");
    if (opt->follow && opt->until != NULL)
        return usage_error("--follow reads on past now: --until does not go with it");
    if (opt->json && strcmp(cmd->name, "export") == 0 && opt->output == NULL)
        return usage_error("export --json needs --output FILE: stdout holds the export itself");
    return 0;
}

/* The ids the command acts on: a record's kind and id, or an operation's. */
static int read_ids(const struct command_line *line, struct ctl_options *opt)
{
    const struct command *cmd = line->command;
    if (cmd->takes_record) {
        opt->record_kind = line->args[0];
        opt->record_id = line->args[1];
        if (strlen(opt->record_id) > OPERATION_ID_MAX)
            return usage_error("ID must be 1 to %d bytes", OPERATION_ID_MAX);
        if (strcmp(opt->record_kind, "instance") == 0 && (line->seen & OPT_INSTANCE))
            return usage_error("--instance applies to purge binding only");
    }
    if (cmd->takes_operation) {
        opt->operation_id = line->args[0];
        if (opt->operation_id[0] == '\0' || strlen(opt->operation_id) > OPERATION_ID_MAX)
            return usage_error("OPERATION_ID must be 1 to %d bytes", OPERATION_ID_MAX);
    }
    return 0;
}

/* The count option name's text (NULL: *out stays) into *out, 0 meaning all. */
static int read_count(const char *name, const char *text, unsigned *out)
{
    if (text == NULL)
        return 0;
    char *end = NULL;
    unsigned long n = strtoul(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || n > LIMIT_MAX)
        return usage_error("%s: \"%s\" is not a count from 0 (all) to %lu", name, text, LIMIT_MAX);
    *out = (unsigned)n;
    return 0;
}

/* --state, one of the command's states, and --description, UTF-8 of a bounded length. */
static int read_texts(const struct command_line *line, struct ctl_options *opt)
{
    const struct command *cmd = line->command;
    opt->state = value_of(line, OPT_STATE);
    if (opt->state != NULL) {
        bool known = false;
        for (size_t i = 0; cmd->states[i] != NULL; i++)
            known = known || strcmp(cmd->states[i], opt->state) == 0;
        if (!known) {
            char list[128] = "";
            for (size_t i = 0; cmd->states[i] != NULL; i++)
                (void)snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                               i > 0 ? ", " : "", cmd->states[i]);
            return usage_error("--state: \"%s\" is not a state of %s (%s)", opt->state, cmd->name,
                               list);
        }
    }
    opt->description = value_of(line, OPT_DESCRIPTION);
    if (opt->description != NULL) {
        /* It reaches platforms in last_operation's JSON: UTF-8 only (json_string checks). */
        json_t *probe = json_string(opt->description);
        json_decref(probe);
        if (probe == NULL || strlen(opt->description) > DESCRIPTION_MAX)
            return usage_error("--description must be UTF-8 text of at most %d bytes",
                               DESCRIPTION_MAX);
    }
    return 0;
}

/* A command that changes the broker's state says what it would do, and does not, without
 * --yes. */
static int refuse_without_yes(const struct command *cmd, const struct ctl_options *opt)
{
    if (cmd->would[0] == NULL || opt->yes)
        return 0;
    char subject[OPERATION_ID_MAX + 16] = "";
    if (opt->record_kind != NULL)
        (void)snprintf(subject, sizeof subject, "%s %s", opt->record_kind, opt->record_id);
    ctl_say("%s changes the broker's state: it would %s%s%s. Add --yes to do it.", cmd->name,
            cmd->would[0], opt->operation_id != NULL ? opt->operation_id : subject, cmd->would[1]);
    return CTL_EXIT_USAGE;
}

/* Checks the options and arguments against the command, filling *opt. */
static int check_command_line(const struct command_line *line, struct ctl_options *opt)
{
    opt->limit = LIMIT_DEFAULT;
    opt->top = TOP_DEFAULT;
    int rc = check_operands(line);
    if (rc == 0)
        rc = read_flags(line, opt);
    if (rc == 0)
        rc = read_ids(line, opt);
    if (rc == 0)
        rc = read_count("--limit", value_of(line, OPT_LIMIT), &opt->limit);
    if (rc == 0)
        rc = read_count("--top", value_of(line, OPT_TOP), &opt->top);
    if (rc == 0)
        rc = read_texts(line, opt);
    return rc == 0 ? refuse_without_yes(line->command, opt) : rc;
}

/* OSBQ_NAMESPACE comes from --namespace when it was given. */
static const char *lookup_env(const char *name, void *ctx)
{
    const char *namespace_ = ctx;
    if (namespace_ != NULL && strcmp(name, "OSBQ_NAMESPACE") == 0)
        return namespace_;
    return getenv(name);
}

/* The catalog of OSBQ_CATALOG, for names beside ids, or NULL: commands work without it, so a
 * catalog that cannot be read is only mentioned when OSBQ_CATALOG names it (the default path
 * may not exist where osbq-ctl runs). */
static struct osbq_catalog *load_catalog(const struct osbq_config *cfg)
{
    struct osbq_catalog *catalog = NULL;
    struct osbq_error err = {0};
    if (osbq_catalog_load_file(cfg->catalog_path, &catalog, &err) < 0) {
        if (getenv("OSBQ_CATALOG") != NULL)
            ctl_say("OSBQ_CATALOG: %s: %s; showing ids without names", cfg->catalog_path, err.text);
        return NULL;
    }
    return catalog;
}

const char *ctl_catalog_name(const struct ctl *ctl, const char *id)
{
    const struct osbq_plan *plan = osbq_catalog_plan(ctl->catalog, id);
    if (plan != NULL)
        return plan->name;
    const struct osbq_service *service = osbq_catalog_service(ctl->catalog, id);
    return service != NULL ? service->name : NULL;
}

void ctl_operator_name(char *buf, size_t size)
{
    const struct passwd *pw = getpwuid(geteuid());
    if (pw != NULL && pw->pw_name != NULL)
        (void)snprintf(buf, size, "%s", pw->pw_name);
    else
        (void)snprintf(buf, size, "uid %u", (unsigned)geteuid());
}

bool ctl_instance_outdated(const struct ctl *ctl, const struct osbq_fields *record)
{
    const char *state = osbq_fields_get(record, "state");
    if (state == NULL || strcmp(state, "gone") == 0)
        return false;
    return osbq_plan_outdated(osbq_catalog_plan(ctl->catalog, osbq_fields_get(record, "plan_id")),
                              osbq_fields_get(record, "maintenance_version"));
}

const char *ctl_offering_cell(const struct ctl *ctl, const struct osbq_fields *record, char *buf,
                              size_t size)
{
    const struct osbq_plan *plan =
        osbq_catalog_plan(ctl->catalog, osbq_fields_get(record, "plan_id"));
    const char *service = plan != NULL
                              ? plan->service->name
                              : ctl_catalog_name(ctl, osbq_fields_get(record, "service_id"));
    if (plan == NULL && service == NULL)
        return NULL;
    (void)snprintf(buf, size, "%s/%s", service != NULL ? service : "?",
                   plan != NULL ? plan->name : "?");
    return buf;
}

void ctl_add_names(const struct ctl *ctl, const struct osbq_fields *record, json_t *object)
{
    const struct osbq_plan *plan =
        osbq_catalog_plan(ctl->catalog, osbq_fields_get(record, "plan_id"));
    const struct osbq_service *service =
        osbq_catalog_service(ctl->catalog, osbq_fields_get(record, "service_id"));
    if (service == NULL && plan != NULL)
        service = plan->service;
    if (object == NULL)
        return;
    if (service != NULL)
        (void)json_object_set_new(object, "service_name", json_string(service->name));
    if (plan != NULL)
        (void)json_object_set_new(object, "plan_name", json_string(plan->name));
}

/* Runs cmd with the configuration loaded and Redis reachable. */
static int run(const struct command *cmd, const struct ctl_options *opt, const char *namespace_)
{
    struct osbq_error err = {0};
    struct osbq_config cfg;
    if (osbq_config_load(&cfg, OSBQ_ROLE_CTL, lookup_env, (void *)namespace_, &err) < 0)
        return ctl_fail("%s%s", namespace_ != NULL ? "(--namespace sets OSBQ_NAMESPACE) " : "",
                        err.text);
    osbq_log_init(CTL_PROG, cfg.log_level);
    osbq_log_set_format(cfg.log_format);
    struct osbq_catalog *catalog = load_catalog(&cfg);
    struct ctl ctl = {.opt = *opt, .cfg = &cfg, .store = osbq_store_new(&cfg), .catalog = catalog};
    int rc;
    if (ctl.store == NULL) {
        rc = ctl_fail("out of memory");
    } else if (osbq_store_ping(ctl.store, &err) < 0) {
        bool ipv6 = strchr(cfg.redis.host, ':') != NULL;
        rc = ctl_fail("cannot reach Redis at %s%s%s:%u (OSBQ_REDIS_URL): %s", ipv6 ? "[" : "",
                      cfg.redis.host, ipv6 ? "]" : "", (unsigned)cfg.redis.port, err.text);
    } else {
        log_debug("%s in namespace %s", cmd->name, cfg.namespace_);
        rc = cmd->run(&ctl);
    }
    osbq_store_destroy(&ctl.store);
    osbq_catalog_destroy(&catalog);
    osbq_config_clear(&cfg);
    return rc;
}

int main(int argc, char **argv)
{
    struct command_line line = {0};
    struct ctl_options opt = {0};
    int rc = read_command_line(argc, argv, &line);
    if (rc != 0)
        return rc;
    if (line.help || (line.command != NULL && line.command->run == NULL)) {
        usage(stdout);
        return CTL_EXIT_OK;
    }
    if (line.version) {
        printf("%s %s\n", CTL_PROG, OSBQ_VERSION);
        return CTL_EXIT_OK;
    }
    if (line.command == NULL) {
        usage(stderr);
        return CTL_EXIT_USAGE;
    }
    rc = check_command_line(&line, &opt);
    if (rc != 0)
        return rc;
    if (line.command->offline) {
        struct ctl offline = {.opt = opt};
        rc = line.command->run(&offline);
    } else {
        rc = run(line.command, &opt, line.namespace_);
    }
    if (fflush(stdout) != 0 || ferror(stdout))
        return ctl_fail("cannot write the output");
    return rc;
}
