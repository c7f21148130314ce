/* One plan through the kit: the lifecycle a platform drives (provision and its polls, fetch,
 * update, bind, unbind, deprovision), or the operations named on the command line, and with
 * --check the contract's error paths: every step run twice, an unbind of a binding never
 * bound, a deprovision of an instance whose provision never finished, and one of an instance
 * never provisioned. */
#ifndef OSBQ_KIT_PLAN_H
#define OSBQ_KIT_PLAN_H

#include "catalog.h"
#include "kit_options.h"
#include "kit_run.h"

/* The request bodies' values, as compact JSON object texts (NULL: the request had none). */
struct kit_inputs {
    const char *parameters;        /* provision's */
    const char *update_parameters; /* update's */
    const char *bind_parameters;   /* bind's */
    const char *context;           /* every operation's */
    const char *bind_resource;     /* bind's */
};

/* What one plan came to. */
struct kit_tally {
    unsigned succeeded; /* operations that succeeded */
    unsigned failed;    /* operations that did not (failed, refused, cancelled) */
};

/* Runs plan's operations (o->ops, or the lifecycle) with in, an update targeting update_plan
 * (NULL: plan itself), and with o->check the error paths; prints every step and a summary
 * line. Violations are counted in kit. Returns the tally. */
struct kit_tally kit_plan_run(struct kit *kit, const struct kit_options *o,
                              const struct kit_inputs *in, const struct osbq_plan *plan,
                              const struct osbq_plan *update_plan);

#endif
