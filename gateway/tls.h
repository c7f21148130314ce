/* HTTPS of the gateway: the certificate chain and key of OSBQ_TLS_CERT / OSBQ_TLS_KEY, reloaded
 * on SIGHUP while the daemon runs. Each connection pins the identity that was current when it
 * was accepted (a reference), so a reload never frees what a handshake in flight uses, and
 * connections accepted after it use the new certificate. */
#ifndef OSBQ_GATEWAY_TLS_H
#define OSBQ_GATEWAY_TLS_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "error.h"

/* TLS 1.2 and 1.3 only, GnuTLS's NORMAL cipher suites (the system policy applies on top). */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

struct tls_credentials;

/* Reads and checks the certificate chain and key (both PEM; the key unencrypted); the paths
 * are copied. NULL with err on failure; err's text starts with the variable at fault
 * ("OSBQ_TLS_CERT: ..." or "OSBQ_TLS_KEY: ..."). */
struct tls_credentials *tls_credentials_load(const char *cert_path, const char *key_path,
                                             struct osbq_error *err);

/* Reads both files again; on success connections accepted from now on get the new identity,
 * on failure (err, as for tls_credentials_load) the current one stays. Thread-safe. */
int tls_credentials_reload(struct tls_credentials *tls, struct osbq_error *err);

/* Drops the current identity (connections still open keep theirs until they close) and frees;
 * sets *tp to NULL. Call after the daemon stopped. */
void tls_credentials_free(struct tls_credentials **tp);

/* MHD_OPTION_NOTIFY_CONNECTION callback, cls the tls_credentials: on a new connection, sets the
 * current identity on its TLS session and keeps a reference in *socket_context; on its close,
 * drops it. */
void tls_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode code);

/* MHD_OPTION_HTTPS_CERT_CALLBACK: the daemon's own credentials answer only a connection that
 * could not be given an identity; it fails that handshake (logged) rather than guess. */
int tls_refuse_handshake(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                         const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                         gnutls_pcert_st **pcert, unsigned int *pcert_length,
                         gnutls_privkey_t *privkey);

#endif
