/* Values at rest: the key ring read from OSBQ_SECRET_KEY_FILE, and sealing and opening with it a
 * binding's stored result (docs/decisions/0007-credentials-at-rest.md) and a request's
 * parameters, context, bind_resource and a step's resume state (decision 0058). */
#ifndef OSBQ_SECRETS_H
#define OSBQ_SECRETS_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Keys one file may hold: the current one and the older ones kept for reading. */
#define OSBQ_SECRETS_KEYS_MAX 16
/* Bytes in a key; a line of the key file holds twice as many hex characters. */
#define OSBQ_SECRETS_KEY_BYTES 32
/* A key id as text: 16 hex characters and the NUL. */
#define OSBQ_SECRETS_ID_SIZE 17
/* What every sealed value starts with; anything else is plaintext from before the keys. */
#define OSBQ_SECRETS_PREFIX "osbq:"

struct osbq_secrets;

/* Where a sealed value is stored: the ciphertext is bound to it (associated data), so a value
 * copied to another record, or to another field of its own, does not open. Borrowed strings. */
struct osbq_secret_place {
    const char *namespace_;  /* OSBQ_NAMESPACE */
    const char *instance_id; /* the record's instance */
    const char *binding_id;  /* the binding, or "" for an instance's own fields */
    const char *field;       /* the field: NULL for a binding's result (sealed since 0007),
                              * else its name: parameters, context, bind_resource, resume */
};

/* Reads the key ring from path: one key a line, 64 hex characters (32 bytes), the first one
 * seals, every one opens; LF or CRLF line ends; no blank line, no comment, at most
 * OSBQ_SECRETS_KEYS_MAX keys, no key twice. Refuses a file group or others may write, warns
 * (log) when they may read it. The keys live in guarded, locked, read-only memory. Returns the ring
 * (osbq_secrets_destroy), or NULL with err->code OSBQ_ERR_INVALID and a text "line N: what is
 * wrong" (no line for file-wide problems) that never quotes the file's content. */
struct osbq_secrets *osbq_secrets_load(const char *path, struct osbq_error *err);

/* Wipes the keys and frees the ring; sets *sp to NULL; accepts NULL. */
void osbq_secrets_destroy(struct osbq_secrets **sp);

/* Keys in the ring. */
size_t osbq_secrets_count(const struct osbq_secrets *secrets);

/* The id of the key that seals (the first line's), as 16 hex characters. Ids are a keyed hash
 * of the key: they name it in logs and envelopes without revealing anything of it. */
const char *osbq_secrets_current_id(const struct osbq_secrets *secrets);

/* Writes the id of key (OSBQ_SECRETS_KEY_BYTES bytes) into out. Needs sodium_init(). */
void osbq_secrets_key_id(const unsigned char *key, char out[OSBQ_SECRETS_ID_SIZE]);

/* Seals len bytes of plain for place under the current key, with a random nonce:
 * "osbq:v1:<key id>:<base64 of nonce, ciphertext and tag>". Returns the NUL-terminated
 * envelope (caller frees), NULL when out of memory. */
char *osbq_secrets_seal(const struct osbq_secrets *secrets, const struct osbq_secret_place *place,
                        const void *plain, size_t len);

/* True when stored is a sealed value (starts with OSBQ_SECRETS_PREFIX). */
bool osbq_secrets_is_sealed(const char *stored);

/* Opens a stored value read from place. A value that is not sealed (plaintext written before
 * keys were configured) passes through unchanged, with or without keys. secrets may be NULL
 * (no key file). Returns 1 (opened) or 0 (plaintext) with *plain a NUL-terminated copy (free
 * with osbq_secrets_free_text), or -1 with err->code OSBQ_ERR_INTERNAL and a text naming the
 * key id when the key is missing, or saying the value does not open (altered, or copied from
 * another place) or is malformed. */
int osbq_secrets_open(const struct osbq_secrets *secrets, const struct osbq_secret_place *place,
                      const char *stored, char **plain, struct osbq_error *err);

/* Opens *text (malloc'd, or NULL) when it is sealed: replaces it by its plaintext (free with
 * osbq_secrets_free_text or free) and frees the envelope. Returns 1 opened, 0 when *text is NULL
 * or plaintext (left as it is), -1 with err as osbq_secrets_open (*text left as it is). */
int osbq_secrets_open_in_place(const struct osbq_secrets *secrets,
                               const struct osbq_secret_place *place, char **text,
                               struct osbq_error *err);

/* Zeroes text and frees it (freed heap memory can be read back by a later allocation or show up
 * in a core dump); accepts NULL. */
void osbq_secrets_free_text(char *text);

#endif
