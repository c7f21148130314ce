/* Checking a parsed catalog against the OSB spec and osbq's plan settings (catalog_check.c),
 * before the loader (catalog.c) builds anything from it. */
#ifndef OSBQ_CATALOG_CHECK_H
#define OSBQ_CATALOG_CHECK_H

#include <jansson.h>

#include "error.h"

/* Validates root, stopping at the first error: -1 with err->text naming the place and the rule,
 * e.g. "services[1].plans[0].id: duplicate of services[0].plans[2].id". Plan schemas are
 * checked for shape here and compiled by the loader. */
int osbq_catalog_check(json_t *root, struct osbq_error *err);

#endif
