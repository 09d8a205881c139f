/*
 * broker_open.c: OPEN on an approved object (broker_open.h). Until the
 * FUSE server's OPEN op is merged (branch fuse, peers/app/pbx_obj.h's
 * pbx_obj_open_fd), no revocable descriptor can be had, and nothing is
 * handed over without revocation: every approved open is refused here
 * with a line saying so.
 */
#include "peers/broker/broker_open.h"

#include <stdio.h>

int pbx_broker_open_fd(int obj, uint32_t mode, int *fd)
{
    (void)obj;
    (void)mode;
    *fd = -1;
    (void)fprintf(stderr, "pbx-broker: no revocable descriptors: this build "
                          "has no OPEN op (vfsd's FUSE server)\n");
    return 1;
}
