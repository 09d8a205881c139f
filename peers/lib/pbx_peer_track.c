/*
 * pbx_peer_track.c: launchd's per-connection table of relayed requests
 * that still wait for their terminal DECISION (see pbx_peer_track.h).
 */
#include "peers/lib/pbx_peer_track.h"

#include <string.h>

void pbx_peer_track_init(pbx_peer_track *t)
{
    memset(t, 0, sizeof(*t));
}

bool pbx_peer_track_full(const pbx_peer_track *t)
{
    return t->count >= PBX_PEER_TRACK_MAX;
}

/* Index of id in t, or PBX_PEER_TRACK_MAX when absent. */
static uint32_t pbx_peer_track_find(const pbx_peer_track *t, pbx_ipc_id id)
{
    for (uint32_t i = 0; i < t->count && i < PBX_PEER_TRACK_MAX; i++) {
        if (t->ids[i].index == id.index && t->ids[i].gen == id.gen) {
            return i;
        }
    }
    return PBX_PEER_TRACK_MAX;
}

bool pbx_peer_track_drop(pbx_peer_track *t, pbx_ipc_id id)
{
    uint32_t i = pbx_peer_track_find(t, id);
    if (i == PBX_PEER_TRACK_MAX) {
        return false;
    }
    /* Order does not matter: the last entry fills the hole. */
    t->ids[i] = t->ids[t->count - 1U];
    t->count--;
    return true;
}

/* Whether a DECISION reply ends the caller's interest in its request: a
 * terminal outcome, or a status saying the record is delivered or gone. */
static bool pbx_peer_track_decided(const pbx_ipc_frame *rep)
{
    if (rep->status != 0U) {
        return rep->status == (uint16_t)PBX_E_CORE_UNKNOWN ||
               rep->status == (uint16_t)PBX_E_CORE_STALE ||
               rep->status == (uint16_t)PBX_E_CORE_STATE;
    }
    pbx_ipc_decision d;
    return pbx_ipc_decision_reply_decode(rep, &d) == PBX_OK &&
           d.outcome != (uint8_t)PBX_IPC_OUTCOME_PENDING;
}

bool pbx_peer_track_relayed(pbx_peer_track *t, const pbx_ipc_frame *req,
                            const pbx_ipc_frame *rep)
{
    if (req->op == (uint16_t)PBX_IPC_OP_BEGIN &&
        rep->op == (uint16_t)(PBX_IPC_OP_BEGIN | PBX_IPC_REPLY_BIT) &&
        rep->status == 0U && rep->request.gen != 0U &&
        !pbx_peer_track_full(t) &&
        pbx_peer_track_find(t, rep->request) == PBX_PEER_TRACK_MAX) {
        t->ids[t->count++] = rep->request;
        return true;
    }
    if (req->op == (uint16_t)PBX_IPC_OP_DECISION &&
        rep->op == (uint16_t)(PBX_IPC_OP_DECISION | PBX_IPC_REPLY_BIT) &&
        pbx_peer_track_decided(rep)) {
        return pbx_peer_track_drop(t, req->request);
    }
    return false;
}
