/* GET /v2/catalog: served from the body built once per platform at start-up (or reload). */
#include "handlers.h"
#include "platforms.h"

void osb_catalog_get(const struct gateway *gw, const struct request *req, struct reply *out)
{
    /* Each platform gets the services it sees, built once when its set was loaded; the set
     * outlives the response (http.c holds it until the request completes). */
    const char *etag = NULL;
    size_t len = 0;
    const char *body = osbq_platform_catalog(req->platform, gw->catalog, &len, &etag);
    if (req->if_none_match != NULL && validate_etag_matches(req->if_none_match, etag))
        reply_static(out, 304, "", 0);
    else
        reply_static(out, 200, body, len);
    out->etag = etag;
}
