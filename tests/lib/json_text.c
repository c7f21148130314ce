/* JSON written in the tests' source (json_text.h). */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include "json_text.h"

json_t *json_from_text(const char *text)
{
    json_error_t jerr;
    json_t *value = json_loads(text, 0, &jerr);
    if (value == NULL)
        fail_msg("test JSON does not parse (%s): %s", jerr.text, text);
    return value;
}
