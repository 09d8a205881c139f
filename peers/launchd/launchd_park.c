/*
 * launchd_park.c: a program's DECISION waits ("parks") at launchd until
 * powerboxd's WAKE for its request, so powerboxd is asked once per
 * lifecycle, after the decision was published. A parked DECISION is still
 * the caller's call and bounded like any other: it goes to powerboxd at
 * its WAKE, or half of --call-ms after it came when no WAKE came by then
 * (a slow prompt, a lost WAKE, a request not committed); either way its
 * deadline stays --call-ms after it came (at least half of --call-ms after
 * it was relayed), so a stopped powerboxd's callers are answered ROUTE on
 * their own seq then, as for every relayed call.
 * powerboxd's PENDING answer holds the caller as before (launchd_reply.c).
 */
#include <string.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"

void launchd_park_add(launchd_srv *srv, uint32_t ci, pbx_ipc_id id,
                      uint32_t seq)
{
    launchd_conn *c = &srv->conns[ci];
    /* One DECISION per request is admitted at a time and a connection
     * holds at most PBX_PEER_TRACK_MAX requests, so there is room. */
    if (c->nparks >= PBX_PEER_TRACK_MAX) {
        return;
    }
    c->parks[c->nparks++] = (launchd_park){id, seq, srv->now};
    launchd_conn_arm(srv, ci);
}

/* Removes park i of c (the last one fills its place). */
static launchd_park launchd_park_take(launchd_conn *c, uint32_t i)
{
    launchd_park p = c->parks[i];
    c->parks[i] = c->parks[c->nparks - 1U];
    c->nparks--;
    return p;
}

/* Answers the caller of park p on ci a status-only DECISION reply st. */
static void launchd_park_answer(launchd_srv *srv, uint32_t ci,
                                const launchd_park *p, pbx_err st)
{
    uint8_t out[PBX_IPC_HEADER_BYTES];
    size_t n = 0;
    if (srv->conns[ci].fd >= 0 &&
        pbx_ipc_status_reply_encode(PBX_IPC_OP_DECISION, p->id, st, out,
                                    sizeof(out), &n) == PBX_OK) {
        (void)launchd_reply(srv, ci, out, n, p->seq, -1);
    }
}

/* Relays park i of ci now, with the deadline it had from its start
 * (powerboxd is given at least half of --call-ms to answer, should
 * launchd itself come late); a DECISION that cannot go is answered
 * (BUSY, or ROUTE without a broker) and its request's wait ends. */
static void launchd_park_send(launchd_srv *srv, uint32_t ci, uint32_t i)
{
    launchd_park p = launchd_park_take(&srv->conns[ci], i);
    uint64_t deadline = p.since_ms + srv->call_ms;
    uint64_t least = srv->now + srv->call_ms / 2U;
    if (launchd_decision_send(srv, ci, p.id, p.seq,
                              deadline > least ? deadline : least)) {
        return;
    }
    uint32_t seq = 0;
    (void)pbx_peer_track_release(&srv->conns[ci].track, p.id, &seq);
    pbx_peer_log("launchd", "parked DECISION of request %u.%u refused: %s",
                 p.id.index, p.id.gen,
                 srv->broker < 0 ? "no broker"
                                 : "call table full or broker full");
    launchd_park_answer(srv, ci, &p,
                        srv->broker < 0 ? PBX_E_PEER_ROUTE : PBX_E_PEER_BUSY);
}

bool launchd_park_woken(launchd_srv *srv, uint32_t ci, pbx_ipc_id id)
{
    launchd_conn *c = &srv->conns[ci];
    for (uint32_t i = 0; i < c->nparks && i < PBX_PEER_TRACK_MAX; i++) {
        if (c->parks[i].id.index == id.index && c->parks[i].id.gen == id.gen) {
            launchd_park_send(srv, ci, i);
            return true;
        }
    }
    return false;
}

/* When park p goes to powerboxd without its WAKE. */
static uint64_t launchd_park_when(const launchd_srv *srv, const launchd_park *p)
{
    return p->since_ms + srv->call_ms / 2U;
}

void launchd_park_timer(launchd_srv *srv, uint32_t ci)
{
    launchd_conn *c = &srv->conns[ci];
    uint32_t i = 0;
    /* Bounded: each pass either sends (and removes) one park or moves
     * on. */
    for (uint32_t step = 0; step < PBX_PEER_TRACK_MAX && i < c->nparks;
         step++) {
        if (launchd_park_when(srv, &c->parks[i]) <= srv->now) {
            launchd_park_send(srv, ci, i);
        } else {
            i++;
        }
    }
}

uint64_t launchd_park_due(const launchd_srv *srv, uint32_t ci)
{
    const launchd_conn *c = &srv->conns[ci];
    uint64_t due = UINT64_MAX;
    for (uint32_t i = 0; i < c->nparks && i < PBX_PEER_TRACK_MAX; i++) {
        uint64_t w = launchd_park_when(srv, &c->parks[i]);
        due = w < due ? w : due;
    }
    return due;
}

void launchd_park_lost(launchd_srv *srv, uint32_t ci)
{
    launchd_conn *c = &srv->conns[ci];
    /* Copied out first: a failed answer closes the connection. */
    launchd_park parks[PBX_PEER_TRACK_MAX];
    uint32_t n = c->nparks <= PBX_PEER_TRACK_MAX ? c->nparks : 0U;
    memcpy(parks, c->parks, n * sizeof(parks[0]));
    c->nparks = 0U;
    for (uint32_t i = 0; i < n; i++) {
        launchd_park_answer(srv, ci, &parks[i], PBX_E_PEER_ROUTE);
    }
}
