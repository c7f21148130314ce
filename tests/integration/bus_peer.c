/* osbq-test-bus-peer: a process without keys on the job bus, for test_bus_auth.py. It connects
 * a plain DEALER to a gateway's bus endpoint, announces free slots (READY) as a worker would,
 * and prints "JOB <bytes>" for every job it is sent, until SECONDS are over. */
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s ENDPOINT SECONDS\n", argv[0]);
        return 2;
    }
    zsys_handler_set(NULL);
    long seconds = strtol(argv[2], NULL, 10);
    zsock_t *dealer = zsock_new(ZMQ_DEALER);
    if (dealer == NULL || zsock_connect(dealer, "%s", argv[1]) < 0) {
        fprintf(stderr, "cannot connect to %s\n", argv[1]);
        return 1;
    }
    zsock_set_linger(dealer, 0);
    zsock_set_sndtimeo(dealer, 0);
    int64_t end = zclock_mono() + seconds * 1000;
    int64_t next_ready = 0;
    unsigned jobs = 0;
    while (zclock_mono() < end) {
        if (zclock_mono() >= next_ready) {
            (void)zsock_send(dealer, "sss", "READY", "rogue-peer", "8");
            next_ready = zclock_mono() + 300;
        }
        zmq_pollitem_t item = {.socket = zsock_resolve(dealer), .events = ZMQ_POLLIN};
        if (zmq_poll(&item, 1, 100) > 0 && (item.revents & ZMQ_POLLIN)) {
            zmsg_t *msg = zmsg_recv(dealer);
            zframe_t *command = msg ? zmsg_first(msg) : NULL;
            if (command != NULL && zframe_streq(command, "JOB")) {
                zframe_t *job = zmsg_next(msg);
                printf("JOB %zu\n", job ? zframe_size(job) : 0);
                fflush(stdout);
                jobs++;
            }
            zmsg_destroy(&msg);
        }
    }
    printf("done, %u jobs\n", jobs);
    zsock_destroy(&dealer);
    return 0;
}
