/* The job bus's CurveZMQ keys: the certificates named by OSBQ_BUS_CURVE_*, loaded once at
 * start-up, and the gateway's ZAP handler (czmq's zauth) that admits only the workers whose
 * public certificates are in OSBQ_BUS_CURVE_CLIENTS_DIR. */
#ifndef OSBQ_BUS_CURVE_H
#define OSBQ_BUS_CURVE_H

#include <czmq.h>
#include <stdbool.h>

#include "config.h"
#include "error.h"

/* The ZAP domain the gateway's ROUTER asks zauth about. */
#define OSBQ_BUS_ZAP_DOMAIN "osbq-bus"

/* What a bus socket needs to speak CurveZMQ. A zeroed struct (own == NULL) is a plain bus. */
struct osbq_bus_curve {
    zcert_t *own;           /* gateway: the gateways' server certificate; worker: its client
                             * certificate; both with their secret key; owned */
    char server_public[41]; /* worker: the gateways' public key, Z85; "" on a gateway */
};

/* Loads the certificates role uses from cfg (bus_server_cert with the secret key on a gateway;
 * bus_client_cert with the secret key and the public key of bus_server_cert on a worker). With
 * no bus certificate configured, leaves *curve zeroed and returns 0. On a problem returns -1,
 * *curve zeroed, *variable the OSBQ_ name of the setting at fault and err what is wrong with
 * it (a file that is no certificate, a secret key missing or not matching its public key). */
int osbq_bus_curve_load(struct osbq_bus_curve *curve, const struct osbq_config *cfg,
                        enum osbq_role role, const char **variable, struct osbq_error *err);

/* True when curve holds keys (the bus is authenticated and encrypted). */
bool osbq_bus_curve_on(const struct osbq_bus_curve *curve);

/* Frees the certificate (its secret key with it); accepts a zeroed struct. */
void osbq_bus_curve_clear(struct osbq_bus_curve *curve);

/* Starts the process's ZAP handler: a zauth actor that accepts a CURVE client only when a
 * certificate in clients_dir has its public key (the directory is read again whenever its
 * files change). Call before the ROUTER binds: a CURVE server without a ZAP handler admits any
 * client. verbose makes zauth log each decision. Caller owns it (zactor_destroy). NULL with err
 * when the directory cannot be read, holds two certificates with the same public key (czmq
 * would abort at the first handshake), or the actor cannot start. */
zactor_t *osbq_bus_auth_start(const char *clients_dir, bool verbose, struct osbq_error *err);

#endif
