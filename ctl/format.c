/* How osbq-ctl writes values: times, durations, sizes and JSON; and reads the times operators
 * give. */
#define _XOPEN_SOURCE 700 /* strptime */
#include "format.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool format_parse_int(const char *text, int64_t *out)
{
    if (text == NULL || text[0] == '\0')
        return false;
    char *end = NULL;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = (int64_t)value;
    return true;
}

const char *format_time(int64_t ms, bool with_ms, char *buf, size_t size)
{
    struct tm tm;
    time_t seconds = (time_t)(ms / 1000);
    char day[32];
    if (ms < 0 || gmtime_r(&seconds, &tm) == NULL ||
        strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        (void)snprintf(buf, size, "-");
        return buf;
    }
    if (with_ms)
        (void)snprintf(buf, size, "%s.%03dZ", day, (int)(ms % 1000));
    else
        (void)snprintf(buf, size, "%sZ", day);
    return buf;
}

const char *format_time_field(const struct osbq_fields *record, const char *name, bool with_ms,
                              char *buf, size_t size)
{
    int64_t ms = -1;
    if (!format_parse_int(osbq_fields_get(record, name), &ms))
        ms = -1;
    return format_time(ms, with_ms, buf, size);
}

const char *format_duration(int64_t ms, char *buf, size_t size)
{
    const int64_t s = ms / 1000, m = s / 60, h = m / 60, d = h / 24;
    if (ms < 0)
        (void)snprintf(buf, size, "-");
    else if (ms < 1000)
        (void)snprintf(buf, size, "%" PRId64 "ms", ms);
    else if (s < 60)
        (void)snprintf(buf, size, "%" PRId64 ".%" PRId64 "s", s, ms % 1000 / 100);
    else if (m < 60)
        (void)snprintf(buf, size, "%" PRId64 "m%02" PRId64 "s", m, s % 60);
    else if (h < 24)
        (void)snprintf(buf, size, "%" PRId64 "h%02" PRId64 "m", h, m % 60);
    else
        (void)snprintf(buf, size, "%" PRId64 "d%02" PRId64 "h", d, h % 24);
    return buf;
}

const char *format_bytes(int64_t bytes, char *buf, size_t size)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    if (bytes < 0) {
        (void)snprintf(buf, size, "-");
        return buf;
    }
    if (bytes < 1024) {
        (void)snprintf(buf, size, "%" PRId64 " B", bytes);
        return buf;
    }
    double value = (double)bytes / 1024.0;
    size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < sizeof units / sizeof units[0]) {
        value /= 1024.0;
        unit++;
    }
    (void)snprintf(buf, size, "%.1f %s", value, units[unit]);
    return buf;
}

const char *format_json_cell(const json_t *value, char *buf, size_t size)
{
    switch (value == NULL ? JSON_NULL : json_typeof(value)) {
    case JSON_STRING:
        return json_string_value(value);
    case JSON_INTEGER:
        (void)snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(value));
        return buf;
    case JSON_REAL:
        (void)snprintf(buf, size, "%g", json_real_value(value));
        return buf;
    case JSON_TRUE:
        return "true";
    case JSON_FALSE:
        return "false";
    case JSON_ARRAY:
        (void)snprintf(buf, size, "%zu", json_array_size(value));
        return buf;
    case JSON_OBJECT:
        return "{...}";
    case JSON_NULL:
    default:
        return NULL;
    }
}

json_t *format_json_string(const char *text)
{
    json_t *string = json_string(text);
    if (string != NULL || text == NULL)
        return string;
    /* Not UTF-8 (json_string refuses it): keep the ASCII readable rather than drop it all. */
    char *ascii = strdup(text);
    if (ascii == NULL)
        return NULL;
    for (char *p = ascii; *p != '\0'; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    string = json_string(ascii);
    free(ascii);
    return string;
}

/* How a record field converts to JSON. */
enum field_type { FIELD_STRING, FIELD_INTEGER, FIELD_BOOLEAN, FIELD_JSON };

static const struct {
    const char *name;
    enum field_type type;
} field_types[] = {
    {"created_ms", FIELD_INTEGER},
    {"started_ms", FIELD_INTEGER},
    {"finished_ms", FIELD_INTEGER},
    {"lease_until", FIELD_INTEGER},
    {"attempt", FIELD_INTEGER},
    {"claims", FIELD_INTEGER},
    {"resends", FIELD_INTEGER},
    {"lock_s", FIELD_INTEGER},
    {"api", FIELD_INTEGER},
    {"instance_usable", FIELD_BOOLEAN},
    {"update_repeatable", FIELD_BOOLEAN},
    {"parameters", FIELD_JSON},
    {"context", FIELD_JSON},
    {"metadata", FIELD_JSON},
    {"bind_resource", FIELD_JSON},
};

static enum field_type type_of(const char *name)
{
    for (size_t i = 0; i < sizeof field_types / sizeof field_types[0]; i++)
        if (strcmp(field_types[i].name, name) == 0)
            return field_types[i].type;
    return FIELD_STRING;
}

/* value as JSON of the given type; falls back to a string when it does not convert. */
static json_t *field_json(const char *value, enum field_type type)
{
    int64_t number;
    switch (type) {
    case FIELD_INTEGER:
        if (format_parse_int(value, &number))
            return json_integer((json_int_t)number);
        break;
    case FIELD_BOOLEAN:
        if (strcmp(value, "1") == 0 || strcmp(value, "0") == 0)
            return json_boolean(value[0] == '1');
        break;
    case FIELD_JSON: {
        json_t *parsed = json_loads(value, JSON_DECODE_ANY, NULL);
        if (parsed != NULL)
            return parsed;
        break;
    }
    case FIELD_STRING:
        break;
    }
    return format_json_string(value);
}

json_t *format_fields_json(const struct osbq_fields *record)
{
    json_t *object = json_object();
    if (object == NULL)
        return NULL;
    for (size_t i = 0; i < record->count; i++) {
        json_t *value = field_json(record->values[i], type_of(record->names[i]));
        if (json_object_set_new(object, record->names[i], value) < 0) {
            json_decref(object);
            return NULL;
        }
    }
    return object;
}

int format_print_json(json_t *root)
{
    if (root == NULL)
        return -1;
    int rc = json_dumpf(root, stdout, JSON_INDENT(2));
    json_decref(root);
    if (rc < 0 || fputc('\n', stdout) == EOF)
        return -1;
    return 0;
}

int format_parse_time(const char *text, int64_t now_ms, int64_t *out)
{
    char *end = NULL;
    long long n = strtoll(text, &end, 10);
    if (end != text && n >= 0 && end[0] != '\0' && end[1] == '\0' && text[0] != '-') {
        static const struct {
            char unit;
            int64_t ms;
        } units[] = {{'s', 1000}, {'m', 60000}, {'h', 3600000}, {'d', 86400000}};
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (end[0] == units[i].unit) {
                *out = now_ms - (int64_t)n * units[i].ms;
                return 0;
            }
        return -1;
    }
    if (end != text && *end == '\0' && n >= 0) {
        *out = (int64_t)n;
        return 0;
    }
    struct tm tm = {0};
    const char *rest = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm);
    if (rest == NULL)
        return -1;
    int64_t ms = 0;
    if (*rest == '.') {
        int64_t scale = 100;
        for (rest++; *rest >= '0' && *rest <= '9'; rest++, scale /= 10)
            ms += (*rest - '0') * scale;
    }
    if (strcmp(rest, "Z") != 0)
        return -1;
    *out = (int64_t)timegm(&tm) * 1000 + ms;
    return 0;
}
