/* The idempotency digest streamed from a request's members, and canonical JSON. */
#include "digest.h"

#include <stdlib.h>
#include <string.h>

char *digest_canonical(const json_t *value)
{
    if (value == NULL)
        return NULL;
    return json_dumps(value, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

static void digest_bytes(struct digest *d, const char *bytes, size_t len)
{
    crypto_generichash_update(&d->state, (const unsigned char *)bytes, len);
}

void digest_begin(struct digest *d)
{
    crypto_generichash_init(&d->state, NULL, 0, 16);
    d->failed = false;
    d->next = '{';
}

/* ["{" or ","] "key": */
static void digest_key(struct digest *d, const char *key)
{
    digest_bytes(d, &d->next, 1);
    d->next = ',';
    digest_bytes(d, "\"", 1);
    digest_bytes(d, key, strlen(key));
    digest_bytes(d, "\":", 2);
}

void digest_json(struct digest *d, const char *key, const char *canonical)
{
    digest_key(d, key);
    if (canonical == NULL)
        canonical = "null";
    digest_bytes(d, canonical, strlen(canonical));
}

void digest_string(struct digest *d, const char *key, const char *value)
{
    digest_key(d, key);
    if (value == NULL) {
        digest_bytes(d, "null", 4);
        return;
    }
    /* A dump escapes only '"', '\\' and control characters (no ASCII or slash escaping is
     * asked for): a string without them is written as it is; one with them is escaped by
     * jansson itself, so the text is the dump's to the byte. */
    size_t len = strlen(value);
    bool plain = true;
    for (size_t i = 0; i < len && plain; i++) {
        unsigned char c = (unsigned char)value[i];
        plain = c >= 0x20 && c != '"' && c != '\\';
    }
    if (plain) {
        digest_bytes(d, "\"", 1);
        digest_bytes(d, value, len);
        digest_bytes(d, "\"", 1);
        return;
    }
    json_t *string = json_string(value);
    char *text = digest_canonical(string);
    json_decref(string);
    if (text == NULL) {
        d->failed = true;
        return;
    }
    digest_bytes(d, text, strlen(text));
    free(text);
}

bool digest_end(struct digest *d, char out[33])
{
    unsigned char hash[16];
    if (d->next == ',')
        digest_bytes(d, "}", 1);
    else
        digest_bytes(d, "{}", 2);
    crypto_generichash_final(&d->state, hash, sizeof hash);
    sodium_bin2hex(out, 33, hash, sizeof hash);
    return !d->failed;
}
