/* The deletion guard's protection flag (docs/policies.md, docs/decisions/0054): an instance whose
 * parameters or context in force carry "osbq_deletion_protection": true is not deleted until an
 * update clears it. The gateway decides it from the request (and, for an update, the instance
 * it read), and the begin script keeps it on the instance: the deprovision's begin reads it
 * there, clear, whatever else of the record is sealed. */
#ifndef OSBQ_GATEWAY_DELETION_PROTECTION_H
#define OSBQ_GATEWAY_DELETION_PROTECTION_H

#include <jansson.h>

#include "store_requests.h"

/* The member that asks for it, in the parameters or the context. */
#define DELETION_PROTECTION_MEMBER "osbq_deletion_protection"

/* A provision's: ON when parameters or context (each NULL when absent) has the member true. */
enum osbq_deletion_protection deletion_protection_of(const json_t *parameters,
                                                     const json_t *context);

/* An update's: the same of the parameters and context in force after it: those it sends, or
 * else the instance's (JSON texts as stored, NULL when it has none). */
enum osbq_deletion_protection deletion_protection_after_update(const json_t *parameters,
                                                               const json_t *context,
                                                               const char *parameters_in_force,
                                                               const char *context_in_force);

#endif
