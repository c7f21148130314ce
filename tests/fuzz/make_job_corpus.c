/* Writes the job target's seed corpus (tests/fuzz/corpus/job/) with the real encoder: one
 * encoded job per file, covering every kind and every optional field. Built in the fuzz build
 * (build-fuzz/fuzz/make_job_corpus); run it with the corpus directory as its argument when the
 * wire format changes. */
#include <stdio.h>
#include <stdlib.h>

#include "job.h"

static int write_job(const char *dir, const char *name, const struct osbq_job *job)
{
    char *bytes = NULL;
    size_t len = 0;
    char why[200];
    if (osbq_job_encode(job, &bytes, &len, why, sizeof why) < 0) {
        fprintf(stderr, "make_job_corpus: %s: %s\n", name, why);
        return -1;
    }
    char path[4096];
    (void)snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    int rc = f != NULL && fwrite(bytes, 1, len, f) == len ? 0 : -1;
    if (f != NULL && fclose(f) != 0)
        rc = -1;
    free(bytes);
    if (rc < 0)
        fprintf(stderr, "make_job_corpus: cannot write %s\n", path);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_job_corpus DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    struct osbq_job minimal = {
        .operation_id = "0f3c6a1e9b2d4c5a8e7f6d5c4b3a2918",
        .kind = OSBQ_JOB_PROVISION,
        .instance_id = "inst-1",
        .service_id = "svc-1",
        .plan_id = "plan-1",
        .api_version = 217,
        .attempt = 1,
    };
    struct osbq_job provision = minimal;
    provision.parameters = "{\"size\":3,\"tags\":[\"a\",\"b\"],\"nested\":{\"x\":null}}";
    provision.context = "{\"platform\":\"cloudfoundry\",\"organization_guid\":\"org\","
                        "\"space_guid\":\"space\"}";
    provision.maintenance_info = "{\"version\":\"2.1.1+abcdef\"}";
    provision.originating_identity = "cloudfoundry eyJ1c2VyX2lkIjoiNjgzZWE3NDgifQ==";
    provision.request_identity = "e26cc6f4-1dbe-4fa8-a2a6-8b4a3b1e6b6f";
    provision.trace = "{\"X-B3-TraceId\":\"463ac35c9f6413ad\",\"X-B3-SpanId\":\"a2fb4a1d\"}";
    struct osbq_job update = provision;
    update.kind = OSBQ_JOB_UPDATE;
    update.attempt = 3;
    update.api_version = 200;
    struct osbq_job deprovision = minimal;
    deprovision.kind = OSBQ_JOB_DEPROVISION;
    struct osbq_job bind = provision;
    bind.kind = OSBQ_JOB_BIND;
    bind.binding_id = "bnd-2";
    bind.bind_resource = "{\"app_guid\":\"app-1\",\"route\":\"x.example.com\"}";
    bind.predecessor_binding_id = "bnd-1";
    struct osbq_job unbind = minimal;
    unbind.kind = OSBQ_JOB_UNBIND;
    unbind.binding_id = "bnd-2";
    unbind.attempt = 4294967295u;
    unbind.api_version = 299;
    struct osbq_job unicode = minimal;
    unicode.instance_id = "\xc3\xa9t\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x90\x99";
    unicode.parameters = "{\"name\":\"\\u00e9\"}";
    int rc = write_job(dir, "provision-minimal", &minimal) |
             write_job(dir, "provision-full", &provision) | write_job(dir, "update", &update) |
             write_job(dir, "deprovision", &deprovision) | write_job(dir, "bind-rotation", &bind) |
             write_job(dir, "unbind", &unbind) | write_job(dir, "unicode-ids", &unicode);
    return rc == 0 ? 0 : 1;
}
