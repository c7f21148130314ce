/* Runs the official JSON-Schema-Test-Suite (Debian's json-schema-test-suite) against
 * schema/schema.c: every file of the draft4, draft6 and draft7 folders except optional/.
 * Cases that need a remote $ref (refRemote.json, the meta-schema URIs) are skipped with the
 * reason, since osbq refuses remote references by design. Exits 1 when any other case fails. */
#include <dirent.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"

struct totals {
    unsigned passed, failed, skipped;
};

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_file(const char *dir, const char *draft_name, enum osbq_schema_draft draft,
                     const char *file, struct totals *all)
{
    char path[1024];
    (void)snprintf(path, sizeof path, "%s/%s/%s", dir, draft_name, file);
    json_error_t jerr;
    json_t *groups = json_load_file(path, 0, &jerr);
    struct totals t = {0};
    const char *skip_reason = NULL;
    if (groups == NULL) {
        printf("FAIL %s/%s: cannot parse: %s\n", draft_name, file, jerr.text);
        all->failed++;
        return;
    }
    bool remote_file = strcmp(file, "refRemote.json") == 0;
    size_t g;
    json_t *group;
    json_array_foreach (groups, g, group) {
        const char *group_name = json_string_value(json_object_get(group, "description"));
        json_t *tests = json_object_get(group, "tests");
        char msg[512];
        enum osbq_schema_status status = OSBQ_SCHEMA_OK;
        struct osbq_schema *schema = NULL;
        if (!remote_file)
            schema = osbq_schema_compile(json_object_get(group, "schema"), draft, NULL, &status,
                                         msg, sizeof msg);
        if (remote_file || status == OSBQ_SCHEMA_REMOTE_REF) {
            t.skipped += (unsigned)json_array_size(tests);
            skip_reason = remote_file ? "remote $ref to http://localhost:1234 (not supported)"
                                      : "remote $ref (not supported)";
            printf("  skip %s/%s: \"%s\": %s\n", draft_name, file, group_name,
                   remote_file ? skip_reason : msg);
            continue;
        }
        size_t i;
        json_t *test;
        json_array_foreach (tests, i, test) {
            const char *test_name = json_string_value(json_object_get(test, "description"));
            bool expected = json_is_true(json_object_get(test, "valid"));
            if (schema == NULL) {
                printf("  FAIL %s/%s: \"%s\" / \"%s\": schema refused: %s\n", draft_name, file,
                       group_name, test_name, msg);
                t.failed++;
                continue;
            }
            enum osbq_schema_result r = osbq_schema_validate(schema, json_object_get(test, "data"),
                                                             "data", msg, sizeof msg);
            bool valid = r == OSBQ_SCHEMA_VALID;
            bool ok = valid == expected && (valid || r == OSBQ_SCHEMA_MISMATCH);
            if (ok) {
                t.passed++;
            } else {
                t.failed++;
                printf("  FAIL %s/%s: \"%s\" / \"%s\": expected %s, got %s%s%s\n", draft_name, file,
                       group_name, test_name, expected ? "valid" : "invalid",
                       valid ? "valid" : "invalid", valid ? "" : ": ", valid ? "" : msg);
            }
        }
        osbq_schema_free(schema);
    }
    json_decref(groups);
    printf("%s %s/%s: %u passed, %u failed, %u skipped%s%s\n", t.failed ? "FAIL" : "ok  ",
           draft_name, file, t.passed, t.failed, t.skipped, skip_reason ? ": " : "",
           skip_reason ? skip_reason : "");
    all->passed += t.passed;
    all->failed += t.failed;
    all->skipped += t.skipped;
}

static int run_draft(const char *dir, const char *draft_name, enum osbq_schema_draft draft,
                     struct totals *all)
{
    char path[1024];
    (void)snprintf(path, sizeof path, "%s/%s", dir, draft_name);
    DIR *d = opendir(path);
    if (d == NULL) {
        printf("FAIL %s: cannot open (is json-schema-test-suite installed?)\n", path);
        return -1;
    }
    char *names[256];
    size_t count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && count < sizeof names / sizeof names[0]) {
        size_t len = strlen(e->d_name);
        /* Files only: optional/ is a folder and is not required. */
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0)
            names[count++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, count, sizeof names[0], by_name);
    for (size_t i = 0; i < count; i++) {
        run_file(dir, draft_name, draft, names[i], all);
        free(names[i]);
    }
    return count > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/usr/share/json-schema-test-suite/tests";
    struct totals all = {0};
    int rc = 0;
    rc |= run_draft(dir, "draft4", OSBQ_SCHEMA_DRAFT4, &all);
    rc |= run_draft(dir, "draft6", OSBQ_SCHEMA_DRAFT6, &all);
    rc |= run_draft(dir, "draft7", OSBQ_SCHEMA_DRAFT7, &all);
    printf("JSON-Schema-Test-Suite (%s): %u passed, %u failed, %u skipped\n", dir, all.passed,
           all.failed, all.skipped);
    return rc != 0 || all.failed > 0 || all.passed == 0 ? 1 : 0;
}
