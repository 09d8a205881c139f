/*
 * broker_open.h: the revocable descriptor of an approved object (pinned
 * interface 1 of issue 21: object op OPEN on vfsd's object connection,
 * answered with one descriptor on vfsd's private FUSE mount).
 */
#ifndef PBX_BROKER_OPEN_H
#define PBX_BROKER_OPEN_H

#include <stdint.h>

/** OPEN modes (the call body's u32 mode). */
#define PBX_BROKER_OPEN_READ       1U
#define PBX_BROKER_OPEN_WRITE      2U
#define PBX_BROKER_OPEN_READ_WRITE 3U

/**
 * pbx_broker_open_fd asks vfsd, on the object connection obj (borrowed),
 * for a descriptor with access mode; stores it in *fd (the caller owns
 * it) and returns 0, or returns a nonzero status after a line on stderr
 * saying why nothing was handed over.
 */
int pbx_broker_open_fd(int obj, uint32_t mode, int *fd);

#endif /* PBX_BROKER_OPEN_H */
