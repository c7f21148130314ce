/* A job's sealed request values and a step's sealed resume state: see sealed_job.h. */
#include "sealed_job.h"

#include <string.h>

/* The place a field of job's record is sealed for: its instance, its binding ("" for an
 * instance operation), the field. */
static struct osbq_secret_place place_of(const char *namespace_, const struct osbq_job *job,
                                         const char *field)
{
    return (struct osbq_secret_place){namespace_, job->instance_id,
                                      job->binding_id != NULL ? job->binding_id : "", field};
}

/* Opens *field when sealed into *owned and points *field at it. */
static int open_field(const struct osbq_secrets *secrets, const struct osbq_secret_place *place,
                      const char **field, char **owned, struct osbq_error *err)
{
    if (*field == NULL || !osbq_secrets_is_sealed(*field))
        return 0;
    char *plain = NULL;
    struct osbq_error why = {0};
    if (osbq_secrets_open(secrets, place, *field, &plain, &why) < 0)
        return osbq_error_set(err, why.code, "its %s: %s", place->field, why.text);
    osbq_secrets_free_text(*owned);
    *owned = plain;
    *field = plain;
    return 0;
}

int sealed_job_open(const struct osbq_secrets *secrets, const char *namespace_,
                    struct osbq_job *job, struct sealed_job *opened, struct osbq_error *err)
{
    const struct osbq_secret_place parameters = place_of(namespace_, job, "parameters");
    const struct osbq_secret_place context = place_of(namespace_, job, "context");
    const struct osbq_secret_place bind_resource = place_of(namespace_, job, "bind_resource");
    if (open_field(secrets, &parameters, &job->parameters, &opened->parameters, err) < 0 ||
        open_field(secrets, &context, &job->context, &opened->context, err) < 0 ||
        open_field(secrets, &bind_resource, &job->bind_resource, &opened->bind_resource, err) < 0)
        return -1;
    return 0;
}

void sealed_job_clear(struct sealed_job *opened)
{
    osbq_secrets_free_text(opened->parameters);
    osbq_secrets_free_text(opened->context);
    osbq_secrets_free_text(opened->bind_resource);
    *opened = (struct sealed_job){0};
}

char *sealed_resume_seal(const struct osbq_secrets *secrets, const char *namespace_,
                         const struct osbq_job *job, const char *resume)
{
    const struct osbq_secret_place place = place_of(namespace_, job, "resume");
    return osbq_secrets_seal(secrets, &place, resume, strlen(resume));
}

int sealed_resume_open(const struct osbq_secrets *secrets, const char *namespace_,
                       const struct osbq_job *job, char **resume, struct osbq_error *err)
{
    const struct osbq_secret_place place = place_of(namespace_, job, "resume");
    return osbq_secrets_open_in_place(secrets, &place, resume, err);
}
