/* Checks a request's "parameters" against the plan's schema (schemas.*.parameters). */
#ifndef OSBQ_GATEWAY_OSB_PARAMETERS_H
#define OSBQ_GATEWAY_OSB_PARAMETERS_H

#include <jansson.h>
#include <stdbool.h>

#include "reply.h"
#include "schema.h"

/* True when parameters match schema, or when schema is NULL (the plan declares none). Absent
 * parameters (NULL) are checked as {} when absent_as_empty (provision, bind: the request
 * carries no parameters), and not at all otherwise (update: no parameter changes). False with
 * a 400 whose description names the first failing path and keyword, e.g.
 * "parameters.size: 300 is greater than the maximum of 100". */
bool osb_parameters_valid(const struct osbq_schema *schema, const json_t *parameters,
                          bool absent_as_empty, struct reply *out);

#endif
