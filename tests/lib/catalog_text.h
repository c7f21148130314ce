/* Catalogs the cmocka tests write in their source: loaded, or the reason printed. */
#ifndef OSBQ_TESTS_CATALOG_TEXT_H
#define OSBQ_TESTS_CATALOG_TEXT_H

#include <stddef.h>

#include "catalog.h"

/* The catalog of the size bytes of text (caller destroys it), or NULL after printing why with
 * cmocka's print_error. */
struct osbq_catalog *catalog_from_text(const char *text, size_t size);

#endif
