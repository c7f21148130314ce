/* A platform's client certificate: see client_cert.h. */
#include "client_cert.h"

#include <gnutls/x509.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform_files.h"

/* The longest chain a client may present, leaf first. */
#define CHAIN_MAX 8
/* Longest subject alternative name compared. */
#define SAN_MAX 1024

struct client_cert {
    gnutls_x509_trust_list_t trust; /* the CA file's certificates */
    char *subject;                  /* RFC 4514 DN, or NULL */
    char *san;                      /* a DNS name, URI or e-mail, or NULL */
    bool has_sha256;                /* sha256 is set */
    unsigned char sha256[32];       /* the leaf's DER fingerprint */
};

void client_cert_free(struct client_cert *cert)
{
    if (cert == NULL)
        return;
    if (cert->trust != NULL)
        gnutls_x509_trust_list_deinit(cert->trust, 1);
    free(cert->subject);
    free(cert->san);
    free(cert);
}

/* An optional non-empty string member; -1 with err when it is there but not one. */
static int optional_text(const json_t *spec, const char *name, char **out, const char *place,
                         struct osbq_error *err)
{
    const json_t *v = json_object_get(spec, name);
    if (v == NULL)
        return 0;
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > SAN_MAX)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s.%s: must be a string of 1 to %d bytes",
                              place, name, SAN_MAX);
    *out = strdup(json_string_value(v));
    return *out != NULL ? 0 : osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
}

/* The fingerprint as 64 hex digits, pairs optionally separated by ':' (as openssl prints it). */
static int parse_sha256(const json_t *spec, struct client_cert *cert, const char *place,
                        struct osbq_error *err)
{
    const json_t *v = json_object_get(spec, "sha256");
    if (v == NULL)
        return 0;
    size_t len = 0;
    const char *text = json_string_value(v);
    if (text == NULL ||
        sodium_hex2bin(cert->sha256, sizeof cert->sha256, text, strlen(text), ":", &len, NULL) !=
            0 ||
        len != sizeof cert->sha256)
        return osbq_error_set(err, OSBQ_ERR_INVALID,
                              "%s.sha256: must be 64 hex digits (pairs may be separated by ':')",
                              place);
    cert->has_sha256 = true;
    return 0;
}

static int load_ca(const json_t *spec, const char *base_dir, struct client_cert *cert,
                   const char *place, struct osbq_error *err)
{
    const char *file = json_string_value(json_object_get(spec, "ca_file"));
    if (file == NULL || file[0] == '\0')
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s.ca_file: a CA file is required", place);
    char path[PATH_MAX];
    if (platform_file_path(base_dir, file, path, sizeof path) < 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s.ca_file: path too long", place);
    if (gnutls_x509_trust_list_init(&cert->trust, 0) < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    int added =
        gnutls_x509_trust_list_add_trust_file(cert->trust, path, NULL, GNUTLS_X509_FMT_PEM, 0, 0);
    if (added <= 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s.ca_file: %s: %s", place, path,
                              added == 0 ? "no PEM certificate in it" : gnutls_strerror(added));
    return 0;
}

struct client_cert *client_cert_parse(const json_t *spec, const char *base_dir, const char *place,
                                      struct osbq_error *err)
{
    if (!json_is_object(spec)) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "%s: must be an object", place);
        return NULL;
    }
    const char *key;
    const json_t *value;
    json_object_foreach ((json_t *)(uintptr_t)spec, key, value) {
        (void)value;
        if (strcmp(key, "ca_file") != 0 && strcmp(key, "subject") != 0 && strcmp(key, "san") != 0 &&
            strcmp(key, "sha256") != 0) {
            osbq_error_set(err, OSBQ_ERR_INVALID,
                           "%s: unknown member \"%s\" (ca_file, subject, san, sha256)", place, key);
            return NULL;
        }
    }
    struct client_cert *cert = calloc(1, sizeof *cert);
    if (cert == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    if (load_ca(spec, base_dir, cert, place, err) < 0 ||
        optional_text(spec, "subject", &cert->subject, place, err) < 0 ||
        optional_text(spec, "san", &cert->san, place, err) < 0 ||
        parse_sha256(spec, cert, place, err) < 0) {
        client_cert_free(cert);
        return NULL;
    }
    if (cert->subject == NULL && cert->san == NULL && !cert->has_sha256) {
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "%s: name what the certificate must say (\"subject\", \"san\" or "
                       "\"sha256\"): the CA alone may sign other clients' certificates",
                       place);
        client_cert_free(cert);
        return NULL;
    }
    return cert;
}

/* True when one of crt's subject alternative names (DNS, URI, e-mail) is san. */
static bool has_san(gnutls_x509_crt_t crt, const char *san)
{
    for (unsigned seq = 0; seq < 64; seq++) {
        char name[SAN_MAX + 1];
        size_t size = sizeof name - 1;
        unsigned critical = 0;
        int type = gnutls_x509_crt_get_subject_alt_name(crt, seq, name, &size, &critical);
        if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            return false;
        if (type < 0)
            continue; /* too long, or unreadable: not this one */
        name[size] = '\0';
        if ((type == GNUTLS_SAN_DNSNAME || type == GNUTLS_SAN_URI ||
             type == GNUTLS_SAN_RFC822NAME) &&
            strlen(name) == size && strcmp(name, san) == 0)
            return true;
    }
    return false;
}

/* Checks the leaf against what cert names; false with why. */
static bool leaf_matches(const struct client_cert *cert, gnutls_x509_crt_t leaf, char *why,
                         size_t size)
{
    gnutls_datum_t dn = {NULL, 0};
    bool ok = gnutls_x509_crt_get_dn3(leaf, &dn, 0) == 0;
    if (!ok)
        (void)snprintf(why, size, "the certificate's subject cannot be read");
    else if (cert->subject != NULL && strcmp((const char *)dn.data, cert->subject) != 0) {
        (void)snprintf(why, size, "the certificate's subject \"%s\" is not the platform's",
                       (const char *)dn.data);
        ok = false;
    } else if (cert->san != NULL && !has_san(leaf, cert->san)) {
        (void)snprintf(why, size, "the certificate of \"%s\" lacks the platform's name (san)",
                       (const char *)dn.data);
        ok = false;
    } else if (cert->has_sha256) {
        unsigned char digest[32];
        size_t len = sizeof digest;
        ok = gnutls_x509_crt_get_fingerprint(leaf, GNUTLS_DIG_SHA256, digest, &len) == 0 &&
             len == sizeof digest && sodium_memcmp(digest, cert->sha256, len) == 0;
        if (!ok)
            (void)snprintf(why, size,
                           "the certificate of \"%s\" is not the one the platform names (sha256)",
                           (const char *)dn.data);
    }
    gnutls_free(dn.data);
    return ok;
}

/* Why a chain did not verify, from the verification's status. */
static void status_text(unsigned status, char *why, size_t size)
{
    const char *what = (status & GNUTLS_CERT_EXPIRED)         ? "has expired"
                       : (status & GNUTLS_CERT_NOT_ACTIVATED) ? "is not valid yet"
                       : (status & (GNUTLS_CERT_SIGNER_NOT_FOUND | GNUTLS_CERT_SIGNER_NOT_CA))
                           ? "is not signed by the platform's CA"
                       : (status & GNUTLS_CERT_REVOKED) ? "is revoked"
                       : (status & GNUTLS_CERT_PURPOSE_MISMATCH)
                           ? "is not for TLS client authentication"
                           : "does not verify";
    (void)snprintf(why, size, "the client certificate %s", what);
}

bool client_cert_accepts(const struct client_cert *cert, gnutls_session_t session, char *why,
                         size_t size)
{
    unsigned count = 0;
    const gnutls_datum_t *peers =
        session != NULL ? gnutls_certificate_get_peers(session, &count) : NULL;
    if (session == NULL) {
        (void)snprintf(why, size, "a client certificate needs HTTPS (OSBQ_TLS_CERT)");
        return false;
    }
    if (peers == NULL || count == 0) {
        (void)snprintf(why, size, "no client certificate was presented");
        return false;
    }
    if (count > CHAIN_MAX)
        count = CHAIN_MAX;
    gnutls_x509_crt_t chain[CHAIN_MAX];
    unsigned imported = 0; /* initialised, to deinit */
    bool ok = true;
    while (ok && imported < count && gnutls_x509_crt_init(&chain[imported]) == 0) {
        ok = gnutls_x509_crt_import(chain[imported], &peers[imported], GNUTLS_X509_FMT_DER) == 0;
        imported++;
    }
    ok = ok && imported == count;
    if (!ok) {
        (void)snprintf(why, size, "the client certificate cannot be read");
    } else {
        gnutls_typed_vdata_st purpose = {GNUTLS_DT_KEY_PURPOSE_OID,
                                         (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT, 0};
        unsigned status = 0;
        ok = gnutls_x509_trust_list_verify_crt2(cert->trust, chain, count, &purpose, 1, 0, &status,
                                                NULL) == 0 &&
             status == 0;
        if (!ok)
            status_text(status, why, size);
        else
            ok = leaf_matches(cert, chain[0], why, size);
    }
    for (unsigned i = 0; i < imported; i++)
        gnutls_x509_crt_deinit(chain[i]);
    return ok;
}
