/* A request's values at rest (docs/decisions/0058-sealed-request-values.md): with
 * OSBQ_SECRET_KEY_FILE, the parameters, context and bind_resource a platform sent are sealed
 * before they are recorded in Redis or put into a job, and opened when a stored record is read
 * for a reply or a check. Without keys they pass as they are; a previous release's plaintext
 * values are read as they are, with or without keys. */
#ifndef OSBQ_GATEWAY_SEALED_FIELDS_H
#define OSBQ_GATEWAY_SEALED_FIELDS_H

#include <stdbool.h>

#include "accept.h"
#include "gateway.h"
#include "reply.h"
#include "store.h"

/* The sealed texts a request's record and job hold; owned. */
struct sealed_texts {
    char *parameters;
    char *context;
    char *bind_resource;
};

/* Sets *kept to t's texts as they are stored for the record of instance_id (and binding_id, or
 * NULL): sealed into owned with the gateway's keys, t's own without keys. maintenance_info is
 * not sealed (the catalog's, not the user's). False when out of memory (owned cleared). */
bool sealed_texts_make(const struct gateway *gw, const char *instance_id, const char *binding_id,
                       const struct accept_texts *t, struct sealed_texts *owned,
                       struct accept_texts *kept);

/* Zeroes and frees owned's texts. */
void sealed_texts_clear(struct sealed_texts *owned);

/* Opens in place the sealed parameters and context of instance_id's record as read. False after
 * answering 500 (a description naming the key, a warning logged) when one does not open. */
bool sealed_open_instance(const struct gateway *gw, const char *instance_id,
                          struct osbq_instance *inst, struct reply *out);

/* The same for a binding's parameters, context and bind_resource (its result is opened where
 * it is answered: osb_binding.c). */
bool sealed_open_binding(const struct gateway *gw, const char *instance_id, const char *binding_id,
                         struct osbq_binding *b, struct reply *out);

#endif
