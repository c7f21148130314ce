/* osbq-ctl: what its files share: the parsed command line, the exit statuses, one function per
 * command (each in the cmd_*.c file of its concern), and the walks two commands share. */
#ifndef CTL_H
#define CTL_H

#include <jansson.h>
#include <stdbool.h>

#include "catalog.h"
#include "config.h"
#include "store_admin.h"
#include "store_registry.h"

#define CTL_PROG "osbq-ctl"

/* Exit statuses (docs/ctl.md). */
enum ctl_exit {
    CTL_EXIT_OK = 0,        /* done */
    CTL_EXIT_FAILURE = 1,   /* bad configuration, Redis unreachable, other runtime failure */
    CTL_EXIT_USAGE = 2,     /* bad command line, or a destructive command without --yes */
    CTL_EXIT_NOT_FOUND = 3, /* no such operation, or fail/resend found nothing to do */
    CTL_EXIT_REFUSED = 4,   /* resend: the operation runs under a live lease (its worker is
                             * alive); purge: an operation of it runs (without --force);
                             * nothing changed; export: instances skipped, an operation of each
                             * runs (the file is partial); import: instance ids taken in the
                             * target (nothing of them written) */
};

/* The command line, checked. Strings are borrowed from argv. */
struct ctl_options {
    bool json;                /* --json: one JSON document on stdout */
    bool yes;                 /* --yes: destructive commands may act */
    bool force;               /* --force: purge fails the operation that runs first */
    bool outdated;            /* --outdated: instances behind their plan's maintenance_info */
    bool walk;                /* --walk: stats counts records by a walk, not from their count */
    bool follow;              /* --follow: events waits for new ones */
    const char *since;        /* --since (events), --from (usage): from this time, or NULL */
    const char *until;        /* --until (events), --to (usage): up to this time, or NULL */
    const char *record_kind;  /* purge: "instance" or "binding" */
    const char *record_id;    /* purge: its ID */
    const char *state;        /* --state: only records in this state, or NULL */
    const char *instance;     /* --instance: only bindings of this instance, or NULL */
    const char *description;  /* --description (fail), or NULL for the default */
    unsigned limit;           /* --limit: most records listed; 0 for all */
    unsigned top;             /* --top: stats' tenants listed, the busiest first; 0 for all */
    const char *operation_id; /* OPERATION_ID of operation, fail and resend */
    const char *path;         /* PATH of bus-cert, FILE of import */
    const char *tenant;       /* --tenant: export only this tenant's instances, or NULL */
    const char *output;       /* --output: the file export writes, or NULL for stdout */
};

/* What a command runs with. */
struct ctl {
    struct ctl_options opt;             /* the command line */
    const struct osbq_config *cfg;      /* OSBQ_REDIS_URL, OSBQ_NAMESPACE, ...; NULL for offline
                                         * commands */
    struct osbq_store *store;           /* the only way to Redis; NULL for offline commands */
    const struct osbq_catalog *catalog; /* OSBQ_CATALOG, for names beside ids; NULL when it
                                         * cannot be read (ids only) */
};

/* The catalog's name of service_id or plan_id (the first found), or NULL. */
const char *ctl_catalog_name(const struct ctl *ctl, const char *id);

/* Who runs the command, for the records and the audit trail it writes (purge's tombstone, the
 * events of fail, resend, purge, import and reencrypt): the OS user, else "uid N". */
void ctl_operator_name(char *buf, size_t size);

/* Whether the instance record is outdated: not gone, its plan in the catalog has a
 * maintenance_info version, and the instance's comes before it (semver precedence), or it has
 * none. False without a catalog. */
bool ctl_instance_outdated(const struct ctl *ctl, const struct osbq_fields *record);

/* "service/plan" names of a record's service_id and plan_id for a table cell, in buf; NULL
 * (shown "-") when the catalog knows neither. */
const char *ctl_offering_cell(const struct ctl *ctl, const struct osbq_fields *record, char *buf,
                              size_t size);

/* Adds "service_name" and "plan_name" to a record's JSON object where the catalog knows the
 * ids. */
void ctl_add_names(const struct ctl *ctl, const struct osbq_fields *record, json_t *object);

/* Prints "osbq-ctl: <message>" on stderr; returns CTL_EXIT_FAILURE. */
int ctl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "osbq-ctl: <what>: <err->text>" on stderr; returns CTL_EXIT_FAILURE. */
int ctl_fail_store(const char *what, const struct osbq_error *err);

/* Prints a message on stderr with the same prefix, without choosing an exit status. */
void ctl_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The commands. Each returns an enum ctl_exit. */
int cmd_instances(struct ctl *ctl);  /* cmd_records.c */
int cmd_instance(struct ctl *ctl);   /* cmd_records.c */
int cmd_bindings(struct ctl *ctl);   /* cmd_records.c */
int cmd_operation(struct ctl *ctl);  /* cmd_operation.c */
int cmd_fail(struct ctl *ctl);       /* cmd_operation.c */
int cmd_resend(struct ctl *ctl);     /* cmd_operation.c */
int cmd_gateways(struct ctl *ctl);   /* cmd_processes.c */
int cmd_workers(struct ctl *ctl);    /* cmd_processes.c */
int cmd_stats(struct ctl *ctl);      /* cmd_stats.c */
int cmd_recount(struct ctl *ctl);    /* cmd_stats.c */
int cmd_events(struct ctl *ctl);     /* cmd_events.c */
int cmd_usage(struct ctl *ctl);      /* cmd_usage.c */
int cmd_quotas(struct ctl *ctl);     /* cmd_quotas.c */
int cmd_secret_key(struct ctl *ctl); /* cmd_secret_key.c; needs no configuration or Redis */
int cmd_reencrypt(struct ctl *ctl);  /* cmd_reencrypt.c */
int cmd_purge(struct ctl *ctl);      /* cmd_purge.c */
int cmd_bus_cert(struct ctl *ctl);   /* cmd_bus_cert.c: offline */
int cmd_export(struct ctl *ctl);     /* cmd_export.c */
int cmd_import(struct ctl *ctl);     /* cmd_import.c */

/* The version of the export file's format osbq-ctl writes and reads (docs/ctl.md, "export and
 * import"): its header's "osbq_export". A change a reader of this version would misread bumps
 * it. */
#define CTL_EXPORT_VERSION 1

/* Called by records_walk for each record found; may take the record over (move it and zero
 * *record). Returns true to go on, false to stop the walk. */
typedef bool (*records_visit_fn)(struct osbq_fields *record, void *ctx);

/* Walks every record of kind with osbq_store_scan_records, about 500 keys a step, until the
 * walk ends or visit says stop. *stopped (may be NULL) tells whether visit stopped it. Returns
 * 0, or -1 with err. A record written while the walk runs may be seen twice or not at all. */
int records_walk(struct ctl *ctl, enum osbq_record_kind kind, records_visit_fn visit, void *ctx,
                 bool *stopped, struct osbq_error *err);

/* The status objects live processes of role ("gateway" or "worker") published, parsed, in id
 * order; a status that is not a JSON object is skipped with a warning. Returns 0 with *out (a
 * new array), or -1 with err. */
int processes_list(struct ctl *ctl, const char *role, json_t **out, struct osbq_error *err);

#endif
