/* The deletion guard's protection flag (deletion_protection.h). */
#include "deletion_protection.h"

#include <stdbool.h>

static bool asks(const json_t *object)
{
    return json_is_true(json_object_get(object, DELETION_PROTECTION_MEMBER));
}

/* Whether the stored JSON text asks (text that does not parse asks for nothing). */
static bool text_asks(const char *text)
{
    if (text == NULL)
        return false;
    json_t *object = json_loads(text, 0, NULL);
    bool yes = asks(object);
    json_decref(object);
    return yes;
}

enum osbq_deletion_protection deletion_protection_of(const json_t *parameters,
                                                     const json_t *context)
{
    return asks(parameters) || asks(context) ? OSBQ_DELETION_PROTECTION_ON
                                             : OSBQ_DELETION_PROTECTION_OFF;
}

enum osbq_deletion_protection deletion_protection_after_update(const json_t *parameters,
                                                               const json_t *context,
                                                               const char *parameters_in_force,
                                                               const char *context_in_force)
{
    bool by_parameters = parameters != NULL ? asks(parameters) : text_asks(parameters_in_force);
    bool by_context = context != NULL ? asks(context) : text_asks(context_in_force);
    return by_parameters || by_context ? OSBQ_DELETION_PROTECTION_ON : OSBQ_DELETION_PROTECTION_OFF;
}
