/* Fuzz target: the job decoder (proto/job.c). Any bytes: decoding never reads outside them,
 * never leaks, and leaves the job all-NULL when it fails. When it succeeds the job encodes,
 * the encoding decodes to the same job, and encoding that again gives the same bytes. */
#include <stdbool.h>
#include <string.h>

#include "fuzz_target.h"
#include "job.h"

/* Both NULL, or equal strings. */
static bool same_string(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool same_job(const struct osbq_job *a, const struct osbq_job *b)
{
    return same_string(a->operation_id, b->operation_id) && a->kind == b->kind &&
           same_string(a->instance_id, b->instance_id) &&
           same_string(a->binding_id, b->binding_id) && same_string(a->service_id, b->service_id) &&
           same_string(a->plan_id, b->plan_id) && same_string(a->parameters, b->parameters) &&
           same_string(a->context, b->context) && same_string(a->bind_resource, b->bind_resource) &&
           same_string(a->maintenance_info, b->maintenance_info) &&
           a->api_version == b->api_version &&
           same_string(a->originating_identity, b->originating_identity) &&
           same_string(a->request_identity, b->request_identity) &&
           same_string(a->trace, b->trace) &&
           same_string(a->predecessor_binding_id, b->predecessor_binding_id) &&
           a->attempt == b->attempt;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct osbq_job zero;
    struct osbq_job job = {0};
    char why[256];
    why[0] = '\0';
    if (osbq_job_decode((const char *)data, size, &job, why, sizeof why) < 0) {
        FUZZ_CHECK(memcmp(&job, &zero, sizeof job) == 0);
        FUZZ_CHECK(why[0] != '\0' && memchr(why, '\0', sizeof why) != NULL);
        return 0;
    }
    FUZZ_CHECK(job.version == OSBQ_JOB_VERSION);
    FUZZ_CHECK(osbq_job_kind_name(job.kind) != NULL);
    FUZZ_CHECK(osbq_job_kind_from_name(osbq_job_kind_name(job.kind)) == job.kind);

    char *bytes = NULL;
    size_t len = 0;
    FUZZ_CHECK(osbq_job_encode(&job, &bytes, &len, why, sizeof why) == 0);
    struct osbq_job again = {0};
    FUZZ_CHECK(osbq_job_decode(bytes, len, &again, why, sizeof why) == 0);
    FUZZ_CHECK(same_job(&job, &again));

    char *bytes2 = NULL;
    size_t len2 = 0;
    FUZZ_CHECK(osbq_job_encode(&again, &bytes2, &len2, why, sizeof why) == 0);
    FUZZ_CHECK(len2 == len && memcmp(bytes, bytes2, len) == 0);

    free(bytes);
    free(bytes2);
    osbq_job_clear(&again);
    osbq_job_clear(&job);
    FUZZ_CHECK(memcmp(&job, &zero, sizeof job) == 0);
    return 0;
}
