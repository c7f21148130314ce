/* HTTPS credentials of the gateway: loading and checking the PEM files, the reload on SIGHUP,
 * and the identity each connection pins for its lifetime.
 *
 * libmicrohttpd 0.9.75 reads its certificate once, when the daemon starts. Instead of its
 * credentials, each new connection gets the current identity set on its GnuTLS session before
 * the handshake begins (MHD_OPTION_NOTIFY_CONNECTION runs then) and holds a reference to it
 * until it closes: a reload swaps the current identity under a lock, and the old one is freed
 * when its last connection ends. */
#include "tls.h"

#include <errno.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "owned.h"

/* One certificate chain and key, loaded from the files at one moment. */
struct tls_identity {
    atomic_uint refs; /* one while current, plus one per connection that pinned it */
    gnutls_certificate_credentials_t cred; /* what the handshakes use */
};

struct tls_credentials {
    pthread_mutex_t lock;         /* guards current: swap and pin */
    struct tls_identity *current; /* what connections accepted now get */
    char *cert_path;              /* OSBQ_TLS_CERT */
    char *key_path;               /* OSBQ_TLS_KEY */
};

static void identity_release(struct tls_identity *id)
{
    if (id == NULL || atomic_fetch_sub(&id->refs, 1) != 1)
        return;
    gnutls_certificate_free_credentials(id->cred);
    free(id);
}

/* Reads a whole file; out is gnutls_free'd by the caller. */
static int read_file(const char *var, const char *path, gnutls_datum_t *out, struct osbq_error *err)
{
    errno = 0;
    int rc = gnutls_load_file(path, out);
    if (rc < 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s: cannot read %s: %s", var, path,
                              errno != 0 ? strerror(errno) : gnutls_strerror(rc));
    return 0;
}

/* Logs when the leaf certificate stops being valid: a warning once it has. */
static void log_expiry(const char *cert_path, gnutls_x509_crt_t leaf)
{
    time_t expires = gnutls_x509_crt_get_expiration_time(leaf);
    struct tm tm;
    char when[32] = "an unknown time";
    if (expires != (time_t)-1 && gmtime_r(&expires, &tm) != NULL)
        (void)strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (expires != (time_t)-1 && expires < time(NULL))
        log_warnx("TLS certificate %s expired at %s: clients will refuse it", cert_path, when);
    else
        log_info("TLS certificate %s loaded, valid until %s", cert_path, when);
}

/* Reads the chain (leaf first, each certificate signed by the next) and the key, and checks
 * that the key belongs to the leaf. */
static struct tls_identity *identity_load(const char *cert_path, const char *key_path,
                                          struct osbq_error *err)
{
    gnutls_datum_t cert_pem = {NULL, 0};
    gnutls_datum_t key_pem = {NULL, 0};
    gnutls_x509_crt_t *chain = NULL;
    unsigned chain_len = 0;
    gnutls_x509_privkey_t key = NULL;
    struct tls_identity *id = NULL;
    bool ok = false;
    int rc;

    if (read_file("OSBQ_TLS_CERT", cert_path, &cert_pem, err) < 0)
        goto out;
    rc = gnutls_x509_crt_list_import2(&chain, &chain_len, &cert_pem, GNUTLS_X509_FMT_PEM,
                                      GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
    if (rc < 0 || chain_len == 0) {
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "OSBQ_TLS_CERT: %s is not a PEM certificate chain (leaf first): %s",
                       cert_path, gnutls_strerror(rc));
        goto out;
    }
    if (read_file("OSBQ_TLS_KEY", key_path, &key_pem, err) < 0)
        goto out;
    rc = gnutls_x509_privkey_init(&key);
    if (rc >= 0)
        rc = gnutls_x509_privkey_import2(key, &key_pem, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (rc < 0) {
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "OSBQ_TLS_KEY: %s is not an unencrypted PEM private key: %s", key_path,
                       gnutls_strerror(rc));
        goto out;
    }
    id = calloc(1, sizeof *id);
    if (id == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        goto out;
    }
    rc = gnutls_certificate_allocate_credentials(&id->cred);
    if (rc >= 0)
        rc = gnutls_certificate_set_x509_key(id->cred, chain, (int)chain_len, key);
    if (rc < 0) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "OSBQ_TLS_KEY: %s does not fit OSBQ_TLS_CERT %s: %s",
                       key_path, cert_path, gnutls_strerror(rc));
        goto out;
    }
    atomic_init(&id->refs, 1);
    log_expiry(cert_path, chain[0]);
    ok = true;
out:
    if (!ok && id != NULL) {
        if (id->cred != NULL)
            gnutls_certificate_free_credentials(id->cred);
        free(id);
        id = NULL;
    }
    for (unsigned i = 0; i < chain_len; i++)
        gnutls_x509_crt_deinit(chain[i]);
    gnutls_free(chain);
    if (key != NULL)
        gnutls_x509_privkey_deinit(key);
    gnutls_free(cert_pem.data);
    if (key_pem.data != NULL) {
        gnutls_memset(key_pem.data, 0, key_pem.size);
        gnutls_free(key_pem.data);
    }
    return id;
}

struct tls_credentials *tls_credentials_load(const char *cert_path, const char *key_path,
                                             struct osbq_error *err)
{
    struct tls_credentials *tls = calloc(1, sizeof *tls);
    if (tls == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    (void)pthread_mutex_init(&tls->lock, NULL);
    tls->cert_path = strdup(cert_path);
    tls->key_path = strdup(key_path);
    if (tls->cert_path == NULL || tls->key_path == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        tls_credentials_free(&tls);
        return NULL;
    }
    tls->current = identity_load(cert_path, key_path, err);
    if (tls->current == NULL)
        tls_credentials_free(&tls);
    return tls;
}

int tls_credentials_reload(struct tls_credentials *tls, struct osbq_error *err)
{
    struct tls_identity *fresh = identity_load(tls->cert_path, tls->key_path, err);
    if (fresh == NULL)
        return -1;
    pthread_mutex_lock(&tls->lock);
    struct tls_identity *old = tls->current;
    tls->current = fresh;
    pthread_mutex_unlock(&tls->lock);
    identity_release(old);
    return 0;
}

void tls_credentials_free(struct tls_credentials **tp)
{
    OSBQ_OWNED_OR_RETURN(struct tls_credentials, tls, tp);
    (void)pthread_mutex_destroy(&tls->lock);
    identity_release(tls->current);
    free(tls->cert_path);
    free(tls->key_path);
    free(tls);
    *tp = NULL;
}

void tls_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode code)
{
    struct tls_credentials *tls = cls;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        identity_release(*socket_context);
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (info == NULL || info->tls_session == NULL)
        return; /* tls_refuse_handshake ends it */
    pthread_mutex_lock(&tls->lock);
    struct tls_identity *id = tls->current;
    atomic_fetch_add(&id->refs, 1);
    pthread_mutex_unlock(&tls->lock);
    if (gnutls_credentials_set(info->tls_session, GNUTLS_CRD_CERTIFICATE, id->cred) < 0) {
        identity_release(id);
        return;
    }
    /* Asked of every client, required of none: a platform that names a client certificate
     * checks it per request (client_cert.h), against the platforms file current then. */
    gnutls_certificate_server_set_request(info->tls_session, GNUTLS_CERT_REQUEST);
    *socket_context = id;
}

int tls_refuse_handshake(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                         const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                         gnutls_pcert_st **pcert, unsigned int *pcert_length,
                         gnutls_privkey_t *privkey)
{
    (void)session;
    (void)req_ca_dn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    (void)pcert;
    (void)pcert_length;
    (void)privkey;
    log_warnx("TLS handshake refused: the connection got no certificate");
    return -1;
}
