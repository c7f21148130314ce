/* What an update changes (update_change.h). */
#include "update_change.h"

#include <string.h>

/* True when stored (JSON text, NULL: stored_absent) equals requested as JSON. */
static bool same_json(const json_t *requested, const char *stored, const json_t *stored_absent)
{
    json_t *parsed = stored != NULL ? json_loads(stored, 0, NULL) : NULL;
    const json_t *in_force = stored != NULL ? parsed : stored_absent;
    bool same = in_force != NULL && json_equal(requested, in_force);
    json_decref(parsed);
    return same;
}

bool update_changes_nothing(const struct update_change *u, const struct update_instance *inst)
{
    if (inst->plan_id == NULL || strcmp(u->plan_id, inst->plan_id) != 0)
        return false;
    if (u->maintenance_version != NULL &&
        (inst->maintenance_version == NULL ||
         strcmp(u->maintenance_version, inst->maintenance_version) != 0))
        return false;
    if (u->parameters != NULL) {
        json_t *none = json_object();
        bool same = none != NULL && same_json(u->parameters, inst->parameters, none);
        json_decref(none);
        if (!same)
            return false;
    }
    return u->context == NULL || !u->allow_context_updates ||
           same_json(u->context, inst->context, NULL);
}
