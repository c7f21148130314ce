/* A request's idempotency digest, and the canonical JSON text it hashes. No I/O. */
#ifndef OSBQ_GATEWAY_DIGEST_H
#define OSBQ_GATEWAY_DIGEST_H

#include <jansson.h>
#include <sodium.h>
#include <stdbool.h>

/* Compact JSON text of value with sorted keys (canonical); NULL for NULL. Caller frees. */
char *digest_canonical(const json_t *value);

/* A request's idempotency digest: hex BLAKE2b-128 of the canonical JSON (digest_canonical) of
 * an object of the members that identify it. The text is hashed as it is streamed from the
 * members' own texts (the canonical parameters and context a request stores anyway), so no
 * object is built and nothing is dumped twice; the digest is the same as the sorted dump's
 * (stored digests stay valid). Members go in strcmp order of their keys, as a sorted dump
 * writes them; a NULL value is JSON null. */
struct digest {
    crypto_generichash_state state; /* BLAKE2b over the text so far */
    bool failed;                    /* out of memory escaping a string */
    char next;                      /* what goes before the next member: '{' or ',' */
};
void digest_begin(struct digest *d);
/* A member whose value is JSON text already canonical (digest_canonical's), or NULL. */
void digest_json(struct digest *d, const char *key, const char *canonical);
/* A member whose value is a string (UTF-8), or NULL. */
void digest_string(struct digest *d, const char *key, const char *value);
/* The hex digest; false when a string could not be escaped (out of memory). */
bool digest_end(struct digest *d, char out[33]);

#endif
