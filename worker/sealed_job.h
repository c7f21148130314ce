/* What the worker opens and seals besides a binding's result (docs/decisions/0058): a job's
 * parameters, context and bind_resource arrive sealed when the gateways have
 * OSBQ_SECRET_KEY_FILE and are opened for the backend; the state a step saves for the next one
 * (resume) is sealed before it reaches Redis and opened when the next step claims it. Values
 * that are not sealed (no keys, a previous release's) pass as they are. */
#ifndef OSBQ_WORKER_SEALED_JOB_H
#define OSBQ_WORKER_SEALED_JOB_H

#include "error.h"
#include "job.h"
#include "secrets.h"

/* The opened texts a job's fields point at once opened; owned, zeroed when cleared. */
struct sealed_job {
    char *parameters;
    char *context;
    char *bind_resource;
};

/* Opens job's sealed fields (in namespace_) into opened and points the job's fields at them;
 * fields already open stay. 0, or -1 with err (the key missing, or a value that does not open:
 * err names the field and the key id). */
int sealed_job_open(const struct osbq_secrets *secrets, const char *namespace_,
                    struct osbq_job *job, struct sealed_job *opened, struct osbq_error *err);

void sealed_job_clear(struct sealed_job *opened);

/* Seals resume (a step's saved state, compact JSON) for job's operation under the first key of
 * secrets. Returns the envelope (caller frees), or NULL when out of memory. */
char *sealed_resume_seal(const struct osbq_secrets *secrets, const char *namespace_,
                         const struct osbq_job *job, const char *resume);

/* Opens *resume in place (malloc'd, or NULL) when it is sealed; as osbq_secrets_open_in_place. */
int sealed_resume_open(const struct osbq_secrets *secrets, const char *namespace_,
                       const struct osbq_job *job, char **resume, struct osbq_error *err);

#endif
