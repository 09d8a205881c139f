/*
 * erix_int.h: the erix-x86_64 port's private slot layout and helpers.
 * Private to the port; the runtime sees only pbx_port.h.
 */
#ifndef PBX_ERIX_INT_H
#define PBX_ERIX_INT_H

#include "powerboxd/port/erix-x86_64/erix_abi.h"
#include "powerboxd/port/pbx_port.h"

/** ERIX_SLOT_WAITSET holds the port's wait set. */
#define ERIX_SLOT_WAITSET PBX_PORT_STARTUP_SLOTS
/** ERIX_SLOT_PUBLIC holds the process-created public endpoint. */
#define ERIX_SLOT_PUBLIC (PBX_PORT_STARTUP_SLOTS + 1)
/** ERIX_SLOT_STAGE is the first of ERIX_IPC_CAPS_MAX receive slots. */
#define ERIX_SLOT_STAGE (PBX_PORT_STARTUP_SLOTS + 2)
/** ERIX_SLOT_REPLY is the first of PBX_PORT_CLIENTS_MAX reply slots. */
#define ERIX_SLOT_REPLY (ERIX_SLOT_STAGE + (int32_t)ERIX_IPC_CAPS_MAX)
/** ERIX_SLOT_PRIVATE_END is one past the port's private slots. */
#define ERIX_SLOT_PRIVATE_END (ERIX_SLOT_REPLY + (int32_t)PBX_PORT_CLIENTS_MAX)
/** ERIX_SLOT_LIMIT is the highest slot number the port will touch. */
#define ERIX_SLOT_LIMIT 65535

/** ERIX_FLAG_INIT marks a context prepared by pbx_port_init. */
#define ERIX_FLAG_INIT 1U
/** ERIX_FLAG_ARENA marks the arena as allocated. */
#define ERIX_FLAG_ARENA 4U

/** ERIX_TAG_PUBLIC and ERIX_TAG_ROUTE tell wait set bindings apart. */
#define ERIX_TAG_PUBLIC 1U
/** A peer route watched for the runtime. */
#define ERIX_TAG_ROUTE 3U
/** The startup-transferred broker endpoint. */
#define ERIX_TAG_BROKER 4U

/** erix_type returns the ERIX_OBJ_* type of slot, or ERIX_OBJ_EMPTY when
 * the query fails (an out-of-range slot holds nothing). */
uint32_t erix_type(int32_t slot);

/** erix_delete_to deletes slot and proves it now has type want. */
pbx_err erix_delete_to(int32_t slot, uint32_t want);

/** erix_reply_find reports whether slot is a reply slot in use, and where. */
int erix_reply_find(const pbx_port_ctx *ctx, int32_t slot, uint32_t *at);

/** erix_reply_forget removes entry at from the reply slots in use. */
void erix_reply_forget(pbx_port_ctx *ctx, uint32_t at);

#endif /* PBX_ERIX_INT_H */
