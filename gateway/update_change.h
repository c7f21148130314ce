/* What an update changes: an update that changes nothing is answered 200 at once, without an
 * operation (spec, Updating a Service Instance, 200: "if the request's changes have had no
 * effect"). Platforms send such updates on every reconciliation (Crossplane's provider-osb
 * sends one for each poll of an instance made without parameters); each would otherwise run
 * the backend. docs/conformance.md has the rule. */
#ifndef OSBQ_GATEWAY_UPDATE_CHANGE_H
#define OSBQ_GATEWAY_UPDATE_CHANGE_H

#include <jansson.h>
#include <stdbool.h>

/* An update as the gateway checked it, and the instance it updates as Redis holds it. */
struct update_change {
    const char *plan_id;             /* the plan it moves to (the current one when it names none) */
    const json_t *parameters;        /* the request's, or NULL (absent or null) */
    const json_t *context;           /* the request's, or NULL */
    const char *maintenance_version; /* the request's maintenance_info.version, or NULL */
    bool allow_context_updates;      /* the service's catalog flag */
};

struct update_instance {
    const char *plan_id;             /* its plan */
    const char *parameters;          /* JSON text in force, or NULL (none: as {}) */
    const char *context;             /* JSON text of the last context, or NULL */
    const char *maintenance_version; /* in force, or NULL */
};

/* True when the update changes nothing of the instance: the same plan; parameters absent or
 * equal, as JSON, to those in force (an update's parameters replace them: docs/decisions/0003);
 * maintenance_info absent or the version in force; and a context absent, equal to the last one,
 * or, when the service does not declare allow_context_updates, any context (the broker said it
 * does not act on a change of it). A stored text that does not parse counts as a change. */
bool update_changes_nothing(const struct update_change *u, const struct update_instance *inst);

#endif
