/*
 * rt_fake_port.h: a scripted, in-memory implementation of
 * powerboxd/port/pbx_port.h for hosted tests of the runtime. It is a test
 * tool and never ships: the runtime's own sources are compiled against it
 * into build/bin/pbx-rt-test (mk/rt.mk), so the very code of
 * powerboxd/runtime runs here without a kernel.
 *
 * A slot holds a kind (pbx_port_slot_kind). Deletions can be told to
 * answer PBX_E_PORT_DELETE_AGAIN a number of times per slot (the slot is
 * then left exactly as it was, as the contract requires) or to fail for
 * good with PBX_E_PORT_DELETE_UNPROVEN. Waits return scripted events; once
 * the script is used up, a wait answers PBX_E_PORT_PUBLIC_DOWN, which the
 * runtime turns into fail-stop 64, so a test run of rt_loop always ends.
 */
#ifndef RT_FAKE_PORT_H
#define RT_FAKE_PORT_H

#include <stdint.h>

#include "powerboxd/port/pbx_port.h"

/** FK_SLOTS bounds the slot numbers the fake knows: beyond the end of
 * the runtime's transient range (slot 4095), which the usage report walks
 * whole. */
#define FK_SLOTS 4160U
/** FK_STAGE_FIRST is the first of the fake's receipt staging slots (they
 * lie below the transient range, as a real port's do). */
#define FK_STAGE_FIRST 40
/** FK_EVENTS_MAX bounds the scripted events. */
#define FK_EVENTS_MAX 64U

/** fk_msg is the one scripted public message public_recv delivers. */
typedef struct fk_msg {
    /** bytes is the frame. */
    uint8_t bytes[256];
    /** len is the number of valid bytes. */
    uint32_t len;
    /** receipts is how many endpoint receipts arrive with it. */
    uint32_t receipts;
    /** badge is the caller's badge. */
    uint32_t badge;
    /** pad keeps the layout explicit. */
    uint32_t pad;
} fk_msg;

/** fk_state is the whole fake kernel; tests read and set it directly. */
typedef struct fk_state {
    /** kind[slot] is what slot holds (pbx_port_slot_kind). */
    uint32_t kind[FK_SLOTS];
    /** again[slot] is how many more deletions of slot answer AGAIN. */
    uint32_t again[FK_SLOTS];
    /** reject[slot] nonzero: every deletion of slot fails for good. */
    uint32_t reject[FK_SLOTS];
    /** deletes[slot] counts deletion attempts of slot (any outcome). */
    uint32_t deletes[FK_SLOTS];
    /** events is the wait script; next_event the next one to return. */
    pbx_port_event events[FK_EVENTS_MAX];
    /** event_count is how many entries of events are scripted. */
    uint32_t event_count;
    /** next_event indexes the next scripted event. */
    uint32_t next_event;
    /** msg is delivered by the next public_recv, once. */
    fk_msg msg;
    /** msg_ready nonzero: msg has not been received yet. */
    uint32_t msg_ready;
    /** now_ms is the fake clock; a TIMEOUT event advances it. */
    uint64_t now_ms;
    /** sends counts successful sends (replies and calls). */
    uint32_t sends;
    /** closes counts client_close calls. */
    uint32_t closes;
    /** held is the last public_hold value. */
    uint32_t held;
    /** holds counts public_hold calls that held intake. */
    uint32_t holds;
    /** sup is delivered once by the next supervisor_recv (slot 4). */
    fk_msg sup;
    /** sup_ready nonzero: sup has not been received yet. Without it a
     * supervisor_recv answers PBX_E_PORT_STATE (no connection). */
    uint32_t sup_ready;
    /** notified holds the first bytes of the last notify sent. */
    uint8_t notified[128];
    /** notified_len is the last notify's whole length. */
    uint32_t notified_len;
    /** notified_slot is the slot the last notify went to. */
    int32_t notified_slot;
    /** queries[slot] counts pbx_port_slot_query calls on slot. */
    uint32_t queries[FK_SLOTS];
    /** notify_fail is how many more notifies answer notify_err and send
     * nothing (a kernel refusing the datagram). */
    uint32_t notify_fail;
    /** notify_err is what those notifies answer. */
    pbx_err notify_err;
    /** notifies counts notify calls, whatever they answered. */
    uint32_t notifies;
    /** log is the last line pbx_port_log took (NUL-terminated, cut to
     * fit). */
    char log[128];
    /** logs counts the lines pbx_port_log took. */
    uint32_t logs;
    /** identity_on nonzero: an endpoint has the identity FK_IDENTITY(slot),
     * which its query vouches for (PBX_PORT_INFO_IDENTITY) as Linux's
     * does; zero (the default): no slot has an identity. */
    uint32_t identity_on;
    /** identities[slot] counts pbx_port_slot_identity calls on slot. */
    uint32_t identities[FK_SLOTS];
} fk_state;

/** FK_IDENTITY is the fake identity of the endpoint in slot. */
#define FK_IDENTITY(slot) (UINT64_C(0x1000) + (uint64_t)(slot))

/** fk is the one fake kernel (static storage, reset by fk_reset). */
extern fk_state fk;

/** fk_reset empties every slot and script and rewinds the clock. */
void fk_reset(void);

/** fk_event appends one scripted event of kind on slot. */
void fk_event(uint32_t kind, int32_t slot);

/** fk_staged_held counts staged receipts ctx still holds. */
uint32_t fk_staged_held(const pbx_port_ctx *ctx);

#endif /* RT_FAKE_PORT_H */
