/* A request's values sealed at rest: see sealed_fields.h. */
#include "sealed_fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* Seals text (NULL: none) for place into *sealed; false when out of memory. */
static bool seal_one(const struct osbq_secrets *secrets, const struct osbq_secret_place *place,
                     const char *text, char **sealed)
{
    *sealed = NULL;
    if (text == NULL)
        return true;
    *sealed = osbq_secrets_seal(secrets, place, text, strlen(text));
    return *sealed != NULL;
}

bool sealed_texts_make(const struct gateway *gw, const char *instance_id, const char *binding_id,
                       const struct accept_texts *t, struct sealed_texts *owned,
                       struct accept_texts *kept)
{
    *owned = (struct sealed_texts){0};
    *kept = *t;
    if (gw->secrets == NULL)
        return true;
    const char *binding = binding_id != NULL ? binding_id : "";
    const char *ns = gw->cfg->namespace_;
    const struct osbq_secret_place parameters = {ns, instance_id, binding, "parameters"};
    const struct osbq_secret_place context = {ns, instance_id, binding, "context"};
    const struct osbq_secret_place bind_resource = {ns, instance_id, binding, "bind_resource"};
    if (!seal_one(gw->secrets, &parameters, t->parameters, &owned->parameters) ||
        !seal_one(gw->secrets, &context, t->context, &owned->context) ||
        !seal_one(gw->secrets, &bind_resource, t->bind_resource, &owned->bind_resource)) {
        sealed_texts_clear(owned);
        return false;
    }
    kept->parameters = owned->parameters;
    kept->context = owned->context;
    kept->bind_resource = owned->bind_resource;
    return true;
}

void sealed_texts_clear(struct sealed_texts *owned)
{
    free(owned->parameters);
    free(owned->context);
    free(owned->bind_resource);
    *owned = (struct sealed_texts){0};
}

/* Opens the fields named in names (count of them, at fields) of a record at instance_id and
 * binding ("" for the instance's own); false with a 500 in out. */
static bool open_fields(const struct gateway *gw, const char *what, const char *instance_id,
                        const char *binding, const char *const *names, char **const *fields,
                        size_t count, struct reply *out)
{
    for (size_t i = 0; i < count; i++) {
        const struct osbq_secret_place place = {gw->cfg->namespace_, instance_id, binding,
                                                names[i]};
        struct osbq_error err = {0};
        if (osbq_secrets_open_in_place(gw->secrets, &place, fields[i], &err) >= 0)
            continue;
        log_warnx("cannot open the stored %s of %s %s%s%s: %s", names[i], what, instance_id,
                  binding[0] != '\0' ? " binding " : "", binding, err.text);
        char description[OSBQ_ERROR_TEXT_MAX + 64];
        (void)snprintf(description, sizeof description, "The stored %s cannot be decrypted: %s.",
                       names[i], err.text);
        reply_error(out, OSBQ_ERR_INTERNAL, description);
        return false;
    }
    return true;
}

bool sealed_open_instance(const struct gateway *gw, const char *instance_id,
                          struct osbq_instance *inst, struct reply *out)
{
    static const char *const names[] = {"parameters", "context"};
    char **const fields[] = {&inst->parameters, &inst->context};
    return open_fields(gw, "instance", instance_id, "", names, fields, 2, out);
}

bool sealed_open_binding(const struct gateway *gw, const char *instance_id, const char *binding_id,
                         struct osbq_binding *b, struct reply *out)
{
    static const char *const names[] = {"parameters", "context", "bind_resource"};
    char **const fields[] = {&b->parameters, &b->context, &b->bind_resource};
    return open_fields(gw, "instance", instance_id, binding_id, names, fields, 3, out);
}
