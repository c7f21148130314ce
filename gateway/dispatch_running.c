/* The jobs the workers run for a dispatcher, by operation id, with a count per tenant so that
 * the fair rounds read a tenant's load in O(1). */
#include "dispatch_running.h"

#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "owned.h"

struct dispatch_running {
    zhashx_t *jobs;    /* operation id -> struct dispatch_running_job * */
    zhashx_t *tenants; /* tenant key -> struct tenant_count *: only tenants with a job running */
};

struct tenant_count {
    unsigned count;
};

struct dispatch_running *dispatch_running_new(void)
{
    struct dispatch_running *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->jobs = zhashx_new();
    r->tenants = zhashx_new();
    if (r->jobs == NULL || r->tenants == NULL) {
        dispatch_running_destroy(&r);
        return NULL;
    }
    zhashx_set_destructor(r->jobs, osbq_owned_free);
    zhashx_set_destructor(r->tenants, osbq_owned_free);
    return r;
}

void dispatch_running_destroy(struct dispatch_running **rp)
{
    OSBQ_OWNED_OR_RETURN(struct dispatch_running, r, rp);
    zhashx_destroy(&r->jobs);
    zhashx_destroy(&r->tenants);
    free(r);
    *rp = NULL;
}

void dispatch_running_add(struct dispatch_running *r, const char *operation_id,
                          const struct dispatch_owner *owner, const void *worker)
{
    const char *tenant = owner->tenant != NULL ? owner->tenant : "";
    struct dispatch_running_job *job = calloc(1, sizeof *job);
    if (job == NULL)
        return;
    (void)snprintf(job->tenant, sizeof job->tenant, "%s", tenant);
    job->weight = owner->weight;
    (void)snprintf(job->platform, sizeof job->platform, "%s",
                   owner->platform != NULL ? owner->platform : "");
    job->worker = worker;
    /* Counted under the key as stored, so that the end finds the same count. */
    struct tenant_count *t = zhashx_lookup(r->tenants, job->tenant);
    if (t == NULL && (t = calloc(1, sizeof *t)) != NULL &&
        zhashx_insert(r->tenants, job->tenant, t) != 0) {
        free(t);
        t = NULL;
    }
    /* Counted already (sent twice) or out of memory: not counted again. */
    if (t == NULL || zhashx_insert(r->jobs, operation_id, job) != 0) {
        if (t != NULL && t->count == 0)
            zhashx_delete(r->tenants, job->tenant);
        free(job);
        return;
    }
    t->count++;
}

const struct dispatch_running_job *dispatch_running_find(const struct dispatch_running *r,
                                                         const char *operation_id)
{
    return zhashx_lookup(r->jobs, operation_id);
}

void dispatch_running_end(struct dispatch_running *r, const char *operation_id)
{
    const struct dispatch_running_job *job = zhashx_lookup(r->jobs, operation_id);
    if (job == NULL)
        return;
    struct tenant_count *t = zhashx_lookup(r->tenants, job->tenant);
    if (t != NULL && --t->count == 0)
        zhashx_delete(r->tenants, job->tenant);
    zhashx_delete(r->jobs, operation_id);
}

void dispatch_running_end_listed(struct dispatch_running *r, char *ended)
{
    char *save = NULL;
    for (char *id = ended ? strtok_r(ended, " ", &save) : NULL; id != NULL;
         id = strtok_r(NULL, " ", &save))
        dispatch_running_end(r, id);
}

char *dispatch_running_end_worker(struct dispatch_running *r, const void *worker)
{
    /* The keys are copied first: ending a job deletes from the table being walked. */
    zlistx_t *ids = zhashx_keys(r->jobs);
    char *list = NULL;
    size_t len = 0;
    for (const char *id = ids ? zlistx_first(ids) : NULL; id != NULL; id = zlistx_next(ids)) {
        const struct dispatch_running_job *job = zhashx_lookup(r->jobs, id);
        if (job == NULL || job->worker != worker)
            continue;
        size_t id_len = strlen(id);
        char *grown = realloc(list, len + id_len + 2);
        if (grown != NULL) {
            list = grown;
            if (len > 0)
                list[len++] = ' ';
            memcpy(list + len, id, id_len + 1);
            len += id_len;
        }
        dispatch_running_end(r, id);
    }
    zlistx_destroy(&ids);
    return list;
}

unsigned dispatch_running_load(void *ctx, const char *tenant)
{
    const struct dispatch_running *r = ctx;
    const struct tenant_count *t = zhashx_lookup(r->tenants, tenant);
    return t != NULL ? t->count : 0;
}

size_t dispatch_running_count(const struct dispatch_running *r)
{
    return zhashx_size(r->jobs);
}
