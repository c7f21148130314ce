/* Fuzz target: the catalog loader (common/catalog.c) on an in-memory text. Any bytes: loading
 * fails cleanly or gives a catalog whose public body is a JSON object whose plans hold no "osbq",
 * whose lookups find every service and plan it lists, and whose per-plan helpers hold up. */
#include <jansson.h>
#include <string.h>

#include "catalog.h"
#include "fuzz_target.h"

/* True when a plan of the public body still holds its "osbq" object. Deeper "osbq" keys are
 * the operator's (a schema may well have a property of that name) and are served as written. */
static bool plan_has_osbq(const json_t *public)
{
    size_t i, j;
    json_t *service, *plan;
    json_array_foreach (json_object_get(public, "services"), i, service) {
        json_array_foreach (json_object_get(service, "plans"), j, plan) {
            if (json_object_get(plan, "osbq") != NULL)
                return true;
        }
    }
    return false;
}

static void check_plan(const struct osbq_catalog *catalog, const struct osbq_service *service,
                       const struct osbq_plan *plan)
{
    static const char *const kinds[] = {"provision", "update", "deprovision", "bind", "unbind"};
    FUZZ_CHECK(plan->id != NULL && plan->name != NULL && plan->backend != NULL);
    FUZZ_CHECK(plan->service == service);
    FUZZ_CHECK(osbq_catalog_plan(catalog, plan->id) == plan);
    FUZZ_CHECK(plan->sync_timeout_ms > 0 && plan->binding_ttl_s >= 0);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        FUZZ_CHECK(osbq_plan_deadline_s(plan, kinds[k]) > 0);
    /* An id that needs percent-encoding, as a platform may send. */
    char *url = osbq_plan_dashboard_url(plan, "inst 1/\xc3\xa9?&#%");
    if (url != NULL)
        FUZZ_CHECK(url[0] != '\0');
    free(url);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct osbq_catalog *catalog = NULL;
    struct osbq_error err = {0};
    if (osbq_catalog_load_text((const char *)data, size, &catalog, &err) < 0) {
        FUZZ_CHECK(catalog == NULL);
        FUZZ_CHECK(err.code == OSBQ_ERR_INVALID && err.text[0] != '\0');
        return 0;
    }
    FUZZ_CHECK(catalog != NULL);

    size_t len = 0;
    const char *body = osbq_catalog_body(catalog, &len);
    FUZZ_CHECK(body != NULL && strlen(body) == len);
    json_t *public = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
    FUZZ_CHECK(json_is_object(public) && json_is_array(json_object_get(public, "services")));
    FUZZ_CHECK(!plan_has_osbq(public));
    json_decref(public);
    const char *etag = osbq_catalog_etag(catalog);
    FUZZ_CHECK(etag != NULL && strlen(etag) >= 2 && etag[0] == '"' &&
               etag[strlen(etag) - 1] == '"');

    size_t count = osbq_catalog_service_count(catalog);
    for (size_t i = 0; i < count; i++) {
        const struct osbq_service *service = osbq_catalog_service_at(catalog, i);
        FUZZ_CHECK(service != NULL && service->id != NULL && service->name != NULL);
        FUZZ_CHECK(osbq_catalog_service(catalog, service->id) == service);
        FUZZ_CHECK(service->plan_count >= 1 && service->requires_list != NULL);
        for (size_t p = 0; p < service->plan_count; p++)
            check_plan(catalog, service, &service->plans[p]);
    }
    osbq_catalog_destroy(&catalog);
    FUZZ_CHECK(catalog == NULL);
    return 0;
}
