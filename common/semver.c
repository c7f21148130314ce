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

/* Compares the numbers a and b of lengths la and lb (digits, no leading zero): by length, then
 * digit by digit, so no width limits them. */
static int compare_numbers(const char *a, size_t la, const char *b, size_t lb)
{
    if (la != lb)
        return la < lb ? -1 : 1;
    for (size_t i = 0; i < la; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* The length of the identifier at p (up to '.', '-' in the core, '+' or the end). */
static size_t span(const char *p, const char *stops)
{
    size_t n = 0;
    while (p[n] != '\0') {
        for (const char *s = stops; *s != '\0'; s++)
            if (p[n] == *s)
                return n;
        n++;
    }
    return n;
}

static bool all_digits(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!is_digit(p[i]))
            return false;
    return true;
}

/* Pre-release identifiers, semver.org rule 11: numeric ones numerically and below alphanumeric
 * ones, these in ASCII order; a shorter set that is a prefix of the other comes first. */
static int compare_prerelease(const char *a, const char *b)
{
    for (;;) {
        size_t la = span(a, ".+"), lb = span(b, ".+");
        bool na = all_digits(a, la), nb = all_digits(b, lb);
        int order;
        if (na && nb) {
            order = compare_numbers(a, la, b, lb);
        } else if (na != nb) {
            order = na ? -1 : 1;
        } else {
            size_t n = la < lb ? la : lb;
            order = 0;
            for (size_t i = 0; i < n && order == 0; i++)
                if (a[i] != b[i])
                    order = (unsigned char)a[i] < (unsigned char)b[i] ? -1 : 1;
            if (order == 0 && la != lb)
                order = la < lb ? -1 : 1;
        }
        if (order != 0)
            return order;
        a += la;
        b += lb;
        bool more_a = *a == '.', more_b = *b == '.';
        if (!more_a || !more_b)
            return more_a == more_b ? 0 : (more_a ? 1 : -1);
        a++;
        b++;
    }
}

int osbq_semver_compare(const char *a, const char *b)
{
    for (int part = 0; part < 3; part++) {
        size_t la = span(a, ".-+"), lb = span(b, ".-+");
        int order = compare_numbers(a, la, b, lb);
        if (order != 0)
            return order;
        a += la + (part < 2 ? 1 : 0);
        b += lb + (part < 2 ? 1 : 0);
    }
    bool pre_a = *a == '-', pre_b = *b == '-';
    /* A pre-release comes before its release; build metadata does not count. */
    if (pre_a != pre_b)
        return pre_a ? -1 : 1;
    return pre_a ? compare_prerelease(a + 1, b + 1) : 0;
}
