/* Catalogs written in the tests' source (catalog_text.h). */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include "catalog_text.h"

#include "error.h"

struct osbq_catalog *catalog_from_text(const char *text, size_t size)
{
    struct osbq_catalog *catalog = NULL;
    struct osbq_error err = {0};
    if (osbq_catalog_load_text(text, size, &catalog, &err) != 0) {
        print_error("catalog: %s\n", err.text);
        return NULL;
    }
    return catalog;
}
