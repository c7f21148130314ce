/* The request's platform against the catalog and the records. */
#include "osb_platform.h"

#include <string.h>

const char *osb_platform_name(const struct request *req)
{
    return req->platform != NULL ? req->platform->name : OSBQ_PLATFORM_DEFAULT;
}

bool osb_platform_owns(const struct request *req, const char *recorded)
{
    return strcmp(recorded != NULL ? recorded : OSBQ_PLATFORM_DEFAULT, osb_platform_name(req)) == 0;
}

const struct osbq_plan *osb_platform_plan(const struct gateway *gw, const struct request *req,
                                          const char *plan_id)
{
    const struct osbq_plan *plan = osbq_catalog_plan(gw->catalog, plan_id);
    if (plan == NULL || !osbq_platform_sees(req->platform, gw->catalog, plan->service->id))
        return NULL;
    return plan;
}
