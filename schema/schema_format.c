/* The "format" values osbq checks: date-time (RFC 3339), email, uri (RFC 3986 absolute URI),
 * uuid, ipv4 and ipv6 (inet_pton). Others are annotations and always pass. */
#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>

#include "schema_internal.h"

enum js_format js_format_lookup(const char *name)
{
    static const struct {
        const char *name;
        enum js_format format;
    } formats[] = {
        {"date-time", JS_FORMAT_DATE_TIME}, {"email", JS_FORMAT_EMAIL}, {"uri", JS_FORMAT_URI},
        {"uuid", JS_FORMAT_UUID},           {"ipv4", JS_FORMAT_IPV4},   {"ipv6", JS_FORMAT_IPV6},
    };
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (strcmp(name, formats[i].name) == 0)
            return formats[i].format;
    return JS_FORMAT_NONE;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* n digits at s[*i] as a number, or -1. */
static int digits(const char *s, size_t len, size_t *i, size_t n)
{
    int value = 0;
    for (size_t k = 0; k < n; k++, (*i)++) {
        if (*i >= len || !is_digit(s[*i]))
            return -1;
        value = value * 10 + (s[*i] - '0');
    }
    return value;
}

static bool expect(const char *s, size_t len, size_t *i, char c)
{
    if (*i < len && (s[*i] == c || (is_alpha(c) && (s[*i] | 0x20) == (c | 0x20)))) {
        (*i)++;
        return true;
    }
    return false;
}

static int days_in_month(int year, int month)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : days[month - 1];
}

/* RFC 3339 date-time: 2024-02-29T12:00:00.5+01:00 ('T' and 'Z' in either case). */
static bool date_time(const char *s, size_t len)
{
    size_t i = 0;
    int year = digits(s, len, &i, 4);
    if (year < 0 || !expect(s, len, &i, '-'))
        return false;
    int month = digits(s, len, &i, 2);
    if (month < 1 || month > 12 || !expect(s, len, &i, '-'))
        return false;
    int day = digits(s, len, &i, 2);
    if (day < 1 || day > days_in_month(year, month) || !expect(s, len, &i, 'T'))
        return false;
    int hour = digits(s, len, &i, 2);
    if (hour < 0 || hour > 23 || !expect(s, len, &i, ':'))
        return false;
    int minute = digits(s, len, &i, 2);
    if (minute < 0 || minute > 59 || !expect(s, len, &i, ':'))
        return false;
    int second = digits(s, len, &i, 2);
    if (second < 0 || second > 60)
        return false;
    if (expect(s, len, &i, '.')) {
        size_t start = i;
        while (i < len && is_digit(s[i]))
            i++;
        if (i == start)
            return false;
    }
    if (expect(s, len, &i, 'Z'))
        return i == len;
    if (!expect(s, len, &i, '+') && !expect(s, len, &i, '-'))
        return false;
    int offset_hour = digits(s, len, &i, 2);
    if (offset_hour < 0 || offset_hour > 23 || !expect(s, len, &i, ':'))
        return false;
    int offset_minute = digits(s, len, &i, 2);
    return offset_minute >= 0 && offset_minute <= 59 && i == len;
}

/* local@domain: one '@', neither side empty, no spaces or control characters. */
static bool email(const char *s, size_t len)
{
    const char *at = memchr(s, '@', len);
    if (at == NULL || at == s || at == s + len - 1 ||
        memchr(at + 1, '@', len - (size_t)(at - s) - 1))
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
            return false;
    return true;
}

/* An absolute URI (RFC 3986): a scheme, then only URI characters and well-formed %-escapes.
 * libcurl's parser was considered and left out: it wants "scheme://" and so refuses URNs and
 * "mailto:" URIs that are valid here. */
static bool uri(const char *s, size_t len)
{
    static const char allowed[] = "-._~:/?#[]@!$&'()*+,;=";
    if (len == 0 || !is_alpha(s[0]))
        return false;
    size_t i = 1;
    while (i < len &&
           (is_alpha(s[i]) || is_digit(s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.'))
        i++;
    if (i >= len || s[i] != ':')
        return false;
    for (i++; i < len; i++) {
        if (s[i] == '%') {
            if (i + 2 >= len || !is_hex(s[i + 1]) || !is_hex(s[i + 2]))
                return false;
            i += 2;
        } else if (!is_alpha(s[i]) && !is_digit(s[i]) &&
                   (s[i] == '\0' || strchr(allowed, s[i]) == NULL)) {
            return false;
        }
    }
    return true;
}

/* 8-4-4-4-12 hex digits. */
static bool uuid(const char *s, size_t len)
{
    if (len != 36)
        return false;
    for (size_t i = 0; i < len; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !is_hex(s[i]))
            return false;
    }
    return true;
}

static bool address(int family, const char *s, size_t len)
{
    char text[INET6_ADDRSTRLEN + 1];
    unsigned char bytes[sizeof(struct in6_addr)];
    if (len >= sizeof text || memchr(s, '\0', len) != NULL)
        return false;
    memcpy(text, s, len);
    text[len] = '\0';
    return inet_pton(family, text, bytes) == 1;
}

bool js_format_valid(enum js_format format, const char *s, size_t len)
{
    switch (format) {
    case JS_FORMAT_NONE:
        return true;
    case JS_FORMAT_DATE_TIME:
        return date_time(s, len);
    case JS_FORMAT_EMAIL:
        return email(s, len);
    case JS_FORMAT_URI:
        return uri(s, len);
    case JS_FORMAT_UUID:
        return uuid(s, len);
    case JS_FORMAT_IPV4:
        return address(AF_INET, s, len);
    case JS_FORMAT_IPV6:
        return address(AF_INET6, s, len);
    }
    return false;
}
