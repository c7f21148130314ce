/* Basic-auth credentials kept as a keyed BLAKE2b digest (libsodium's generichash). */
#include "auth.h"

#include <sodium.h>
#include <string.h>

static void credentials_digest(const unsigned char key[32], const char *username,
                               const char *password, unsigned char digest[32])
{
    crypto_generichash_state state;
    crypto_generichash_init(&state, key, 32, 32);
    crypto_generichash_update(&state, (const unsigned char *)username, strlen(username));
    /* The NUL cannot occur in either string, so no other split of the same bytes matches. */
    crypto_generichash_update(&state, (const unsigned char *)"", 1);
    crypto_generichash_update(&state, (const unsigned char *)password, strlen(password));
    crypto_generichash_final(&state, digest, 32);
}

int osbq_auth_init(struct osbq_auth *auth, const char *username, const char *password)
{
    if (sodium_init() < 0)
        return -1;
    randombytes_buf(auth->key, sizeof auth->key);
    credentials_digest(auth->key, username, password, auth->digest);
    return 0;
}

bool osbq_auth_check(const struct osbq_auth *auth, const char *username, const char *password)
{
    if (username == NULL || password == NULL)
        return false;
    unsigned char digest[32];
    credentials_digest(auth->key, username, password, digest);
    return sodium_memcmp(digest, auth->digest, sizeof digest) == 0;
}
