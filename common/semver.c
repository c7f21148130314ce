/* Semantic Versioning 2.0.0 syntax check, hand-written after the grammar on semver.org. */
#include "semver.h"

#include <stddef.h>

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Locale-independent on purpose: semver identifiers are ASCII only. */
static bool is_ident_char(char c)
{
    return is_digit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '-';
}

/* MAJOR, MINOR and PATCH: digits without a leading zero (a lone "0" is fine). */
static bool numeric_part(const char **pp)
{
    const char *start = *pp;
    const char *p = start;
    while (is_digit(*p))
        p++;
    if (p == start || (*start == '0' && p - start > 1))
        return false;
    *pp = p;
    return true;
}

/* Dot-separated non-empty identifiers; pre-release numeric identifiers take no leading zero,
 * build identifiers may ("+001" is valid build metadata). */
static bool identifiers(const char **pp, bool prerelease)
{
    const char *p = *pp;
    for (;;) {
        const char *start = p;
        bool all_digits = true;
        while (is_ident_char(*p)) {
            all_digits = all_digits && is_digit(*p);
            p++;
        }
        if (p == start)
            return false;
        if (prerelease && all_digits && *start == '0' && p - start > 1)
            return false;
        if (*p != '.')
            break;
        p++;
    }
    *pp = p;
    return true;
}

bool osbq_semver_valid(const char *s)
{
    if (s == NULL)
        return false;
    const char *p = s;
    for (int part = 0; part < 3; part++) {
        if (part > 0) {
            if (*p != '.')
                return false;
            p++;
        }
        if (!numeric_part(&p))
            return false;
    }
    if (*p == '-') {
        p++;
        if (!identifiers(&p, true))
            return false;
    }
    if (*p == '+') {
        p++;
        if (!identifiers(&p, false))
            return false;
    }
    return *p == '\0';
}
