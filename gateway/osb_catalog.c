/* GET /v2/catalog: served from the body built once at start-up. */
#include "catalog.h"
#include "handlers.h"

void osb_catalog_get(const struct gateway *gw, const struct request *req, struct reply *out)
{
    const char *etag = osbq_catalog_etag(gw->catalog);
    if (req->if_none_match != NULL && validate_etag_matches(req->if_none_match, etag)) {
        reply_static(out, 304, "", 0);
    } else {
        size_t len;
        const char *body = osbq_catalog_body(gw->catalog, &len);
        reply_static(out, 200, body, len);
    }
    out->etag = etag;
}
