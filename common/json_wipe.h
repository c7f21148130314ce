/* Jansson's memory wiped when freed: the binding results the gateway opens and the worker
 * seals pass through jansson, which frees its copies of their strings without zeroing them. */
#ifndef OSBQ_JSON_WIPE_H
#define OSBQ_JSON_WIPE_H

/* Makes jansson zero every block it frees. Its blocks stay plain malloc blocks (what
 * json_dumps returns is still freed with free()), so this may be called at any time; call it
 * first thing in main. */
void osbq_json_wipe_on_free(void);

#endif
