/* A platform's client certificate (OSBQ_PLATFORMS' "client_certificate", docs/platforms.md): the
 * CA to trust and what the certificate must say (its subject, a subject alternative name, its
 * SHA-256 fingerprint). The gateway's TLS asks every client for a certificate; a request to a
 * platform that names one is admitted only when the connection's certificate chain verifies
 * against that CA, now, for TLS client authentication, and says what is named. */
#ifndef OSBQ_GATEWAY_CLIENT_CERT_H
#define OSBQ_GATEWAY_CLIENT_CERT_H

#include <gnutls/gnutls.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

struct client_cert;

/* Reads a "client_certificate" member: {"ca_file": PATH, "subject": DN, "san": NAME,
 * "sha256": HEX}, ca_file and at least one of the others (each one given must match).
 * Relative paths are relative to base_dir. NULL with err naming place's member at fault. */
struct client_cert *client_cert_parse(const json_t *spec, const char *base_dir, const char *place,
                                      struct osbq_error *err);

void client_cert_free(struct client_cert *cert);

/* True when session (NULL: plain HTTP) presented a certificate cert accepts; false with a
 * one-line reason in why (no secret in it: the subject at most). */
bool client_cert_accepts(const struct client_cert *cert, gnutls_session_t session, char *why,
                         size_t size);

#endif
