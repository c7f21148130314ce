/* The store's pipeline: one thread and one Redis connection carrying the calls of many
 * requests at once, so that no HTTP thread waits for a round trip (docs/decisions/0016). */
#ifndef OSBQ_STORE_PIPELINE_H
#define OSBQ_STORE_PIPELINE_H

#include "error.h"
#include "store.h"

struct osbq_store_pipeline;

/* Starts the pipeline's thread for store's Redis (borrowed; it must outlive the pipeline).
 * It connects on the first call, through the store (the same address, credentials, Sentinels
 * and fail-fast after a failure). NULL with err. */
struct osbq_store_pipeline *osbq_store_pipeline_start(struct osbq_store *store,
                                                      struct osbq_error *err);

/* Hands call to the pipeline: done(ctx) is called once, from the pipeline's thread, when the
 * call holds its reply or why it has none (Redis down or not answering within
 * OSBQ_REDIS_TIMEOUT_MS, the script failed). The call is the pipeline's until then. Returns 0,
 * or -1 when the pipeline is stopping (the call is the caller's again, with err set in it;
 * done is not called). Safe from any thread. */
int osbq_store_pipeline_submit(struct osbq_store_pipeline *pipeline, struct osbq_store_call *call,
                               osbq_store_call_done_fn done, void *ctx);

/* Refuses new calls, lets those taken finish (each is answered or fails within the Redis
 * timeout), and stops the thread. The pipeline stays valid for osbq_store_pipeline_submit
 * (which refuses) until freed. */
void osbq_store_pipeline_drain(struct osbq_store_pipeline *pipeline);

/* Drains and frees; sets *pp to NULL; accepts NULL. */
void osbq_store_pipeline_free(struct osbq_store_pipeline **pp);

#endif
