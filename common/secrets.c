/* The key ring and the envelope of a binding's stored result. XChaCha20-Poly1305 (IETF AEAD):
 * 24-byte random nonces are safe for any number of values under one key, and the associated
 * data binds each ciphertext to the binding it belongs to (docs/decisions/0007). */
#include "secrets.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "owned.h"

#define KEY_BYTES   crypto_aead_xchacha20poly1305_ietf_KEYBYTES
#define NONCE_BYTES crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG_BYTES   crypto_aead_xchacha20poly1305_ietf_ABYTES
#define KEY_HEX     (KEY_BYTES * 2)
#define ID_BYTES    8
/* "osbq:v1:" + 16 hex + ":" */
#define ENVELOPE_V1   OSBQ_SECRETS_PREFIX "v1:"
#define ENVELOPE_HEAD (sizeof ENVELOPE_V1 - 1 + ID_BYTES * 2 + 1)
/* Every line at its longest (a key, CR, LF), and one byte more to see a line past the last. */
#define FILE_MAX (OSBQ_SECRETS_KEYS_MAX * (KEY_HEX + 2) + 1)

struct osbq_secrets {
    unsigned char (*keys)[KEY_BYTES]; /* sodium_malloc'd, read-only after loading */
    char ids[OSBQ_SECRETS_KEYS_MAX][OSBQ_SECRETS_ID_SIZE];
    size_t count;
};

_Static_assert(OSBQ_SECRETS_KEY_BYTES == KEY_BYTES, "the key size the header announces");

/* A keyed hash of a fixed label: names the key, and without the key says nothing of it. */
void osbq_secrets_key_id(const unsigned char *key, char out[OSBQ_SECRETS_ID_SIZE])
{
    static const char label[] = "osbq secret key id";
    unsigned char id[ID_BYTES];
    crypto_generichash(id, sizeof id, (const unsigned char *)label, sizeof label - 1, key,
                       KEY_BYTES);
    sodium_bin2hex(out, OSBQ_SECRETS_ID_SIZE, id, sizeof id);
}

/* Opens the key file. A Kubernetes Secret volume presents each key as a symbolic link (through
 * `..data` to a timestamped directory), so the path's links are resolved first; the file found
 * is then opened without following a link, so a link swapped in meanwhile is refused, and the
 * checks on the descriptor (read_key_file) are about the very file read (decision 0027). */
static int open_key_file(const char *path, struct osbq_error *err)
{
    char *resolved = realpath(path, NULL);
    if (resolved == NULL)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "cannot open: %s", strerror(errno));
    int fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    int open_errno = errno;
    if (fd < 0 && open_errno == ELOOP)
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "%s became a symbolic link while it was opened; start again", resolved);
    else if (fd < 0)
        osbq_error_set(err, OSBQ_ERR_INVALID, "cannot open %s: %s", resolved, strerror(open_errno));
    else if (strcmp(resolved, path) != 0)
        log_debug("OSBQ_SECRET_KEY_FILE %s: reading %s", path, resolved);
    free(resolved);
    return fd < 0 ? -1 : fd;
}

/* Reads at most FILE_MAX bytes of path into buf (sodium_malloc'd by the caller); *len gets
 * how many. Checks the file's type, mode and owner on the descriptor it reads. */
static int read_key_file(const char *path, char *buf, size_t *len, struct osbq_error *err)
{
    int fd = open_key_file(path, err);
    if (fd < 0)
        return -1;
    int rc = 0;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        rc = osbq_error_set(err, OSBQ_ERR_INVALID, "cannot stat: %s", strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        rc = osbq_error_set(err, OSBQ_ERR_INVALID, "not a regular file");
    } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        rc = osbq_error_set(err, OSBQ_ERR_INVALID,
                            "writable by group or others (mode %03o): chmod 0600 or 0640",
                            (unsigned)(st.st_mode & 0777));
    } else if ((st.st_mode & (S_IRGRP | S_IROTH)) != 0) {
        log_warnx("OSBQ_SECRET_KEY_FILE %s is readable by group or others (mode %03o); 0600 "
                  "keeps the keys to the broker's user",
                  path, (unsigned)(st.st_mode & 0777));
    }
    /* A warning, not a refusal: compose run without root mounts the file as its maker's. */
    if (rc == 0 && st.st_uid != geteuid() && st.st_uid != 0)
        log_warnx("OSBQ_SECRET_KEY_FILE %s belongs to uid %u, neither this process's user nor "
                  "root: that user can change the keys",
                  path, (unsigned)st.st_uid);
    size_t got = 0;
    while (rc == 0 && got < FILE_MAX) {
        ssize_t n = read(fd, buf + got, FILE_MAX - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = osbq_error_set(err, OSBQ_ERR_INVALID, "cannot read: %s", strerror(errno));
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    (void)close(fd);
    *len = got;
    return rc;
}

/* Parses the file's text into s; errors name the line, never its content. */
static int parse_keys(struct osbq_secrets *s, const char *text, size_t len, struct osbq_error *err)
{
    if (len == 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID,
                              "line 1: the file is empty; it needs one key (64 hex characters) "
                              "a line");
    size_t pos = 0;
    unsigned line = 0;
    while (pos < len) {
        line++;
        const char *start = text + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t n = nl != NULL ? (size_t)(nl - start) : len - pos;
        pos += n + (nl != NULL);
        if (n > 0 && start[n - 1] == '\r')
            n--;
        if (s->count == OSBQ_SECRETS_KEYS_MAX)
            return osbq_error_set(err, OSBQ_ERR_INVALID, "line %u: more than %d keys", line,
                                  OSBQ_SECRETS_KEYS_MAX);
        if (n == 0)
            return osbq_error_set(err, OSBQ_ERR_INVALID,
                                  "line %u: empty (blank lines and comments are not allowed)",
                                  line);
        if (n != KEY_HEX)
            return osbq_error_set(err, OSBQ_ERR_INVALID,
                                  "line %u: not a key: a key is 64 hex characters", line);
        size_t bin_len = 0;
        const char *end = NULL;
        unsigned char *key = s->keys[s->count];
        if (sodium_hex2bin(key, KEY_BYTES, start, n, NULL, &bin_len, &end) != 0 ||
            bin_len != KEY_BYTES || end != start + n)
            return osbq_error_set(err, OSBQ_ERR_INVALID,
                                  "line %u: not a key: a key is 64 hex characters", line);
        osbq_secrets_key_id(key, s->ids[s->count]);
        for (size_t i = 0; i < s->count; i++)
            if (sodium_memcmp(s->keys[i], key, KEY_BYTES) == 0)
                return osbq_error_set(err, OSBQ_ERR_INVALID, "line %u: the same key as line %zu",
                                      line, i + 1);
        s->count++;
    }
    return 0;
}

struct osbq_secrets *osbq_secrets_load(const char *path, struct osbq_error *err)
{
    if (sodium_init() < 0) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "libsodium cannot start");
        return NULL;
    }
    struct osbq_secrets *s = calloc(1, sizeof *s);
    char *text = sodium_malloc(FILE_MAX);
    if (s != NULL)
        s->keys = sodium_malloc(sizeof *s->keys * OSBQ_SECRETS_KEYS_MAX);
    if (s == NULL || text == NULL || s->keys == NULL) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "out of memory (or cannot lock memory)");
        goto fail;
    }
    size_t len = 0;
    if (read_key_file(path, text, &len, err) < 0 || parse_keys(s, text, len, err) < 0)
        goto fail;
    sodium_free(text);
    if (sodium_mprotect_readonly(s->keys) < 0)
        log_warnx("cannot make the secret keys' memory read-only");
    return s;
fail:
    sodium_free(text);
    osbq_secrets_destroy(&s);
    return NULL;
}

void osbq_secrets_destroy(struct osbq_secrets **sp)
{
    OSBQ_OWNED_OR_RETURN(struct osbq_secrets, secrets, sp);
    /* sodium_free zeroes the pages before it unlocks and frees them. */
    sodium_free(secrets->keys);
    free(secrets);
    *sp = NULL;
}

size_t osbq_secrets_count(const struct osbq_secrets *secrets)
{
    return secrets->count;
}

const char *osbq_secrets_current_id(const struct osbq_secrets *secrets)
{
    return secrets->ids[0];
}

/* The associated data: the place's parts joined by NULs, which none of them contains, so two
 * different places never give the same bytes. A binding's result keeps the label it was sealed
 * with before other fields were; the others name their field. Caller frees; NULL when out of
 * memory. */
static unsigned char *place_ad(const struct osbq_secret_place *place, size_t *len)
{
    const char *label = place->field == NULL ? "osbq binding result" : "osbq field";
    const char *parts[] = {label, place->namespace_, place->instance_id, place->binding_id,
                           place->field != NULL ? place->field : ""};
    size_t total = 0;
    size_t count = place->field != NULL ? 5 : 4;
    for (size_t i = 0; i < count; i++)
        total += strlen(parts[i]) + 1;
    unsigned char *ad = malloc(total);
    if (ad == NULL)
        return NULL;
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        size_t n = strlen(parts[i]) + 1;
        memcpy(ad + at, parts[i], n);
        at += n;
    }
    *len = total;
    return ad;
}

char *osbq_secrets_seal(const struct osbq_secrets *secrets, const struct osbq_secret_place *place,
                        const void *plain, size_t len)
{
    size_t ad_len = 0;
    unsigned char *ad = place_ad(place, &ad_len);
    size_t raw_len = NONCE_BYTES + len + TAG_BYTES;
    unsigned char *raw = len <= SIZE_MAX / 2 ? malloc(raw_len) : NULL;
    char *out = NULL;
    if (ad == NULL || raw == NULL)
        goto done;
    randombytes_buf(raw, NONCE_BYTES);
    unsigned long long ct_len = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(raw + NONCE_BYTES, &ct_len, plain, len, ad, ad_len,
                                               NULL, raw, secrets->keys[0]);
    size_t b64_len = sodium_base64_ENCODED_LEN(raw_len, sodium_base64_VARIANT_ORIGINAL);
    out = malloc(ENVELOPE_HEAD + b64_len);
    if (out == NULL)
        goto done;
    memcpy(out, ENVELOPE_V1, sizeof ENVELOPE_V1 - 1);
    memcpy(out + sizeof ENVELOPE_V1 - 1, secrets->ids[0], ID_BYTES * 2);
    out[ENVELOPE_HEAD - 1] = ':';
    sodium_bin2base64(out + ENVELOPE_HEAD, b64_len, raw, raw_len, sodium_base64_VARIANT_ORIGINAL);
done:
    free(ad);
    free(raw);
    return out;
}

bool osbq_secrets_is_sealed(const char *stored)
{
    return strncmp(stored, OSBQ_SECRETS_PREFIX, sizeof OSBQ_SECRETS_PREFIX - 1) == 0;
}

/* Copies n bytes of text into a new NUL-terminated string in *out. */
static int copy_text(const char *text, size_t n, char **out, struct osbq_error *err)
{
    char *copy = malloc(n + 1);
    if (copy == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    memcpy(copy, text, n);
    copy[n] = '\0';
    *out = copy;
    return 0;
}

/* Opens an "osbq:v1:" envelope; see osbq_secrets_open. */
static int open_v1(const struct osbq_secrets *secrets, const struct osbq_secret_place *place,
                   const char *stored, char **plain, struct osbq_error *err)
{
    size_t len = strlen(stored);
    const char *id = stored + sizeof ENVELOPE_V1 - 1;
    if (len < ENVELOPE_HEAD || id[ID_BYTES * 2] != ':')
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "the sealed value is malformed");
    char want[OSBQ_SECRETS_ID_SIZE];
    memcpy(want, id, ID_BYTES * 2);
    want[ID_BYTES * 2] = '\0';
    if (secrets == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL,
                              "the value is sealed with key %s but OSBQ_SECRET_KEY_FILE is not "
                              "set",
                              want);
    size_t k = 0;
    while (k < secrets->count && strcmp(secrets->ids[k], want) != 0)
        k++;
    if (k == secrets->count)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL,
                              "the value is sealed with key %s, which is not in "
                              "OSBQ_SECRET_KEY_FILE",
                              want);
    const char *b64 = stored + ENVELOPE_HEAD;
    size_t b64_len = len - ENVELOPE_HEAD;
    size_t raw_max = b64_len / 4 * 3 + 3;
    unsigned char *raw = malloc(raw_max);
    size_t ad_len = 0;
    unsigned char *ad = place_ad(place, &ad_len);
    unsigned char *out = NULL;
    int rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    if (raw == NULL || ad == NULL)
        goto done;
    size_t raw_len = 0;
    const char *end = NULL;
    if (sodium_base642bin(raw, raw_max, b64, b64_len, NULL, &raw_len, &end,
                          sodium_base64_VARIANT_ORIGINAL) != 0 ||
        end != b64 + b64_len || raw_len < NONCE_BYTES + TAG_BYTES) {
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "the sealed value is malformed");
        goto done;
    }
    size_t ct_len = raw_len - NONCE_BYTES;
    out = malloc(ct_len - TAG_BYTES + 1);
    if (out == NULL)
        goto done;
    unsigned long long out_len = 0;
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(out, &out_len, NULL, raw + NONCE_BYTES, ct_len,
                                                   ad, ad_len, raw, secrets->keys[k]) != 0) {
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL,
                            "the value sealed with key %s does not open: altered, or copied "
                            "from another record or field",
                            want);
        goto done;
    }
    out[out_len] = '\0';
    *plain = (char *)out;
    out = NULL;
    rc = 1;
done:
    free(raw);
    free(ad);
    free(out);
    return rc;
}

int osbq_secrets_open(const struct osbq_secrets *secrets, const struct osbq_secret_place *place,
                      const char *stored, char **plain, struct osbq_error *err)
{
    *plain = NULL;
    if (!osbq_secrets_is_sealed(stored))
        return copy_text(stored, strlen(stored), plain, err);
    if (strncmp(stored, ENVELOPE_V1, sizeof ENVELOPE_V1 - 1) != 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL,
                              "the value is sealed in a format this version does not know");
    return open_v1(secrets, place, stored, plain, err);
}

int osbq_secrets_open_in_place(const struct osbq_secrets *secrets,
                               const struct osbq_secret_place *place, char **text,
                               struct osbq_error *err)
{
    if (*text == NULL || !osbq_secrets_is_sealed(*text))
        return 0;
    char *plain = NULL;
    if (osbq_secrets_open(secrets, place, *text, &plain, err) < 0)
        return -1;
    free(*text);
    *text = plain;
    return 1;
}

void osbq_secrets_free_text(char *text)
{
    if (text == NULL)
        return;
    sodium_memzero(text, strlen(text));
    free(text);
}
