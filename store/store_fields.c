/* A record's fields as an operator reads them: name/value pairs. */
#include "store_fields.h"

#include <stdlib.h>
#include <string.h>

const char *osbq_fields_get(const struct osbq_fields *fields, const char *name)
{
    for (size_t i = 0; i < fields->count; i++)
        if (strcmp(fields->names[i], name) == 0)
            return fields->values[i];
    return NULL;
}

void osbq_fields_clear(struct osbq_fields *fields)
{
    for (size_t i = 0; i < fields->count; i++) {
        free(fields->names[i]);
        free(fields->values[i]);
    }
    free(fields->names);
    free(fields->values);
    memset(fields, 0, sizeof *fields);
}

void osbq_fields_array_free(struct osbq_fields *records, size_t count)
{
    if (records == NULL)
        return;
    for (size_t i = 0; i < count; i++)
        osbq_fields_clear(&records[i]);
    free(records);
}

int osbq_fields_take(struct osbq_fields *fields, char *name, char *value)
{
    if (name == NULL || value == NULL) {
        free(name);
        free(value);
        return -1;
    }
    fields->names[fields->count] = name;
    fields->values[fields->count] = value;
    fields->count++;
    return 0;
}

int osbq_fields_add(struct osbq_fields *fields, const char *name, const char *value,
                    struct osbq_error *err)
{
    char **names = realloc(fields->names, (fields->count + 2) * sizeof *names);
    if (names != NULL)
        fields->names = names;
    char **values =
        names != NULL ? realloc(fields->values, (fields->count + 2) * sizeof *values) : NULL;
    if (values != NULL)
        fields->values = values;
    char *name_copy = values != NULL ? strdup(name) : NULL;
    char *value_copy = name_copy != NULL ? strdup(value) : NULL;
    if (value_copy == NULL) {
        free(name_copy);
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    }
    fields->names[fields->count] = name_copy;
    fields->values[fields->count] = value_copy;
    fields->count++;
    fields->names[fields->count] = fields->values[fields->count] = NULL;
    return 0;
}
