/* Checks a predicate over strings against lists of strings it must accept and refuse. */
#include "string_cases.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

void string_cases_check(bool (*predicate)(const char *), const char *const *accepted, size_t n,
                        const char *accepted_as, const char *const *refused, size_t m,
                        const char *refused_as)
{
    for (size_t i = 0; i < n; i++)
        if (!predicate(accepted[i]))
            fail_msg("\"%s\" should be %s", accepted[i], accepted_as);
    for (size_t i = 0; i < m; i++)
        if (predicate(refused[i]))
            fail_msg("\"%s\" should be %s", refused[i], refused_as);
}
