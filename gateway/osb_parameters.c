/* Parameter validation for provision, update and bind: runs before anything is written. */
#include "osb_parameters.h"

#include "error.h"

bool osb_parameters_valid(const struct osbq_schema *schema, const json_t *parameters,
                          bool absent_as_empty, struct reply *out)
{
    if (schema == NULL || (parameters == NULL && !absent_as_empty))
        return true;
    json_t *empty = parameters == NULL ? json_object() : NULL;
    if (parameters == NULL && empty == NULL) {
        reply_error(out, OSBQ_ERR_INTERNAL, NULL);
        return false;
    }
    char msg[OSBQ_ERROR_TEXT_MAX];
    enum osbq_schema_result r = osbq_schema_validate(
        schema, parameters != NULL ? parameters : empty, "parameters", msg, sizeof msg);
    json_decref(empty);
    switch (r) {
    case OSBQ_SCHEMA_VALID:
        return true;
    case OSBQ_SCHEMA_MISMATCH:
    case OSBQ_SCHEMA_TOO_COSTLY: /* the request's own document made it costly: a 400 too */
        reply_error(out, OSBQ_ERR_BAD_REQUEST, msg);
        return false;
    case OSBQ_SCHEMA_OUT_OF_MEMORY:
        break;
    }
    reply_error(out, OSBQ_ERR_INTERNAL, NULL);
    return false;
}
