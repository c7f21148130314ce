/* The platforms one broker serves (OSBQ_PLATFORMS, docs/platforms.md): each with its name, its
 * credentials (Basic, Bearer tokens or both, kept only as keyed hashes; a client certificate
 * instead or besides), its URL prefix and the
 * services of the catalog it sees. A loaded set is immutable and reference counted, so a reload
 * (SIGHUP) swaps in a new set while requests in flight keep the one they started with. */
#ifndef OSBQ_PLATFORMS_H
#define OSBQ_PLATFORMS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "auth.h"
#include "catalog.h"
#include "client_cert.h"
#include "error.h"

/* The platform OSBQ_BROKER_USERNAME/PASSWORD define, and the owner of records written before
 * platforms were recorded. */
#define OSBQ_PLATFORM_DEFAULT "default"

/* Longest platform name and URL prefix. */
#define OSBQ_PLATFORM_NAME_MAX   64
#define OSBQ_PLATFORM_PREFIX_MAX 128

/* Most platforms in one file, and Bearer tokens of one platform: bounds the metric labels and
 * the time a token check takes. */
#define OSBQ_PLATFORMS_MAX       64
#define OSBQ_PLATFORM_TOKENS_MAX 16

/* One platform. Read-only once its set is loaded. */
/* The largest weight a platform may have. */
#define OSBQ_PLATFORM_WEIGHT_MAX 100

struct osbq_platform {
    char name[OSBQ_PLATFORM_NAME_MAX + 1];     /* unique in the set */
    char prefix[OSBQ_PLATFORM_PREFIX_MAX + 1]; /* "" or "/seg[/seg...]", unique in the set */
    bool basic;                                /* accepts HTTP basic authentication */
    struct osbq_auth basic_auth;               /* its user name and password, hashed */
    size_t token_count;                        /* Bearer tokens accepted (0: no Bearer) */
    struct client_cert *client_cert; /* the certificate it must present (client_cert.h), or
                                      * NULL: none asked for */
    unsigned char token_digests[OSBQ_PLATFORM_TOKENS_MAX][32]; /* keyed hashes of the tokens */
    bool *sees;                        /* per catalog service index; NULL: every service */
    char *catalog_body;                /* its catalog response body, or NULL: the whole catalog's */
    size_t catalog_len;                /* bytes in catalog_body */
    char etag[OSBQ_CATALOG_ETAG_SIZE]; /* ETag of catalog_body (empty when NULL) */
    size_t index;                      /* its place in the set, for per-platform counters */
    unsigned weight; /* its tenants' share of the workers against other platforms' tenants (1 to
                      * OSBQ_PLATFORM_WEIGHT_MAX; "weight" in the file, default 1) */
};

/* A loaded set. Take a reference with osbq_platforms_acquire (from a holder). */
struct osbq_platforms {
    atomic_size_t refs;                 /* references held; freed at 0 */
    const struct osbq_catalog *catalog; /* borrowed: must outlive the set */
    unsigned char token_key[32];        /* random key of the token hashes */
    struct osbq_platform *list;         /* in file order (the default platform first) */
    size_t count;                       /* entries in list, >= 1 */
    bool env_default;                   /* list[0] is OSBQ_BROKER_USERNAME's "default" */
};

/* The default platform's credentials: OSBQ_BROKER_USERNAME/PASSWORD, or both NULL. */
struct osbq_platform_basic {
    const char *username;
    const char *password;
};

/* Reads and validates the platforms file at path against catalog. With dflt's credentials set,
 * they form one more platform, "default", without a prefix. Relative *_file paths are relative
 * to the file's directory. On error returns -1 with err naming the place, e.g.
 * "platforms[1].prefix: duplicate of platforms[0].prefix". */
int osbq_platforms_load_file(const char *path, const struct osbq_catalog *catalog,
                             const struct osbq_platform_basic *dflt, struct osbq_platforms **out,
                             struct osbq_error *err);

/* The same for a JSON text; relative *_file paths are relative to base_dir. */
int osbq_platforms_load_text(const char *text, const char *base_dir,
                             const struct osbq_catalog *catalog,
                             const struct osbq_platform_basic *dflt, struct osbq_platforms **out,
                             struct osbq_error *err);

/* The set without a platforms file: the default platform alone, Basic with dflt, every
 * service. */
int osbq_platforms_default(const struct osbq_catalog *catalog,
                           const struct osbq_platform_basic *dflt, struct osbq_platforms **out,
                           struct osbq_error *err);

/* Drops a reference; the last frees the set. Accepts NULL. */
void osbq_platforms_release(struct osbq_platforms *set);

/* Splits a broker API path ("<prefix>/v2/..."): true with *platform (NULL when no platform has
 * that prefix) and *rest (the path from "/v2" on) when path has a "v2" segment; false for
 * other paths (/healthz, /metrics...). */
bool osbq_platforms_route(const struct osbq_platforms *set, const char *path,
                          const struct osbq_platform **platform, const char **rest);

/* The platform by name, or NULL. */
const struct osbq_platform *osbq_platforms_find(const struct osbq_platforms *set, const char *name);

/* True when authorization (the Authorization header, or NULL) carries credentials of
 * platform: "Basic <base64 user:password>" or "Bearer <token>". Constant time with respect to
 * the expected secrets. */
bool osbq_platform_authenticate(const struct osbq_platforms *set,
                                const struct osbq_platform *platform, const char *authorization);

/* True when platform sees the service (by id) of the catalog. */
bool osbq_platform_sees(const struct osbq_platform *platform, const struct osbq_catalog *catalog,
                        const char *service_id);

/* The catalog body and ETag platform gets. */
const char *osbq_platform_catalog(const struct osbq_platform *platform,
                                  const struct osbq_catalog *catalog, size_t *len,
                                  const char **etag);

/* Holds the current set for a process: readers take a reference, a reload swaps it. */
struct osbq_platforms_holder {
    pthread_mutex_t lock;           /* guards current while a reference is taken or swapped */
    struct osbq_platforms *current; /* one reference held by the holder */
};

/* Takes ownership of set's reference. Returns 0, or -1 when the mutex cannot be made. */
int osbq_platforms_holder_init(struct osbq_platforms_holder *holder, struct osbq_platforms *set);

/* A new reference to the current set (release it with osbq_platforms_release). */
struct osbq_platforms *osbq_platforms_acquire(struct osbq_platforms_holder *holder);

/* Makes set (its reference taken over) current; the old set lives on while referenced. */
void osbq_platforms_swap(struct osbq_platforms_holder *holder, struct osbq_platforms *set);

/* Releases the current set and the mutex. */
void osbq_platforms_holder_clear(struct osbq_platforms_holder *holder);

#endif
