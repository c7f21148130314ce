/* The gateway's shared, read-only context: what every handler may use. */
#ifndef OSBQ_GATEWAY_GATEWAY_H
#define OSBQ_GATEWAY_GATEWAY_H

#include "catalog.h"
#include "config.h"
#include "store.h"
#include "validate.h"

/* Built once in main.c before the HTTP threads start; never written afterwards. */
struct gateway {
    const struct osbq_config *cfg;      /* the configuration */
    const struct osbq_catalog *catalog; /* the validated catalog */
    struct osbq_store *store;           /* Redis (its own locking makes it thread-safe) */
    struct validate_auth auth;          /* the broker credentials, hashed */
};

#endif
