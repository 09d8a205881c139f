/*
 * launchd_attach.c: launchd's attach channel (serve --attach-fd N). The
 * supervisor (`pbx up`) keeps the other end of a SOCK_SEQPACKET pair and,
 * when powerboxd is restarted alone, hands launchd that powerboxd's
 * routes in one 'R' message: exactly two descriptors, [0] the wake route
 * (SOCK_DGRAM) and [1] the broker (SOCK_SEQPACKET). A broker launchd
 * still has is treated as lost first, exactly as when powerboxd closes
 * it (waiting callers answered ROUTE, every grant of the old powerboxd
 * logged and dropped), so nothing of the dead powerboxd's reaches the
 * new one. Every message is answered ('r', 0 done or 1 refused, then
 * the call number it carried, never waiting) and logged; a refused one has its
 * descriptors closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peers/common/pbx_peer_attach.h"
#include "peers/launchd/launchd.h"

/* Why the attach message m cannot be applied (NULL when it can): its
 * reason text for the refusal line, in buf. */
static const char *launchd_attach_check(const pbx_peer_attach_msg *m, char *buf,
                                        size_t cap)
{
    if (!m->ok) {
        return "malformed message (truncated, or more than 2 descriptors)";
    }
    if (m->op != PBX_PEER_ATTACH_OP_ROUTE) {
        (void)snprintf(buf, cap, "op 0x%02x is not served by launchd",
                       (unsigned)m->op);
        return buf;
    }
    if (m->body_len != 0U && m->body_len != PBX_PEER_ATTACH_TAG_MAX) {
        return "'R' carries no body but a call number (4 bytes)";
    }
    if (m->nfds != 2U) {
        (void)snprintf(buf, cap, "'R' carries %zu descriptor(s), not 2",
                       m->nfds);
        return buf;
    }
    if (!pbx_peer_attach_is_socket(m->fds[0], SOCK_DGRAM)) {
        return "descriptor 0 (wake) is not a SOCK_DGRAM socket";
    }
    if (!pbx_peer_attach_is_socket(m->fds[1], SOCK_SEQPACKET)) {
        return "descriptor 1 (broker) is not a SOCK_SEQPACKET socket";
    }
    return NULL;
}

/* Adopts wake and broker (both owned from now on) as the routes to a new
 * powerboxd; the old ones are closed first, the old broker lost. */
static void launchd_attach_adopt(launchd_srv *srv, int wake, int broker)
{
    if (srv->broker >= 0) {
        launchd_broker_lost(srv, "the old broker is lost: a new one came on "
                                 "the attach channel");
    }
    if (srv->wake >= 0) {
        launchd_loop_forget(srv, srv->wake);
        (void)close(srv->wake);
    }
    srv->wake = wake;
    srv->broker = broker;
    launchd_nonblock(wake);
    launchd_nonblock(broker);
}

/* Handles one message received in m. */
static void launchd_attach_one(launchd_srv *srv, pbx_peer_attach_msg *m)
{
    char buf[96];
    const char *why = launchd_attach_check(m, buf, sizeof(buf));
    if (why != NULL) {
        pbx_peer_attach_refuse(srv->attach, m, "launchd", why);
        return;
    }
    launchd_attach_adopt(srv, m->fds[0], m->fds[1]);
    m->nfds = 0;
    pbx_peer_log("launchd", "attach channel: route(s) adopted");
    if (pbx_peer_attach_reply(srv->attach, m, PBX_PEER_ATTACH_DONE, -1) != 0) {
        pbx_peer_log("launchd", "attach channel: answer not sent: %s",
                     strerror(errno));
    }
}

void launchd_attach_input(launchd_srv *srv)
{
    static pbx_peer_attach_msg m;
    /* At the channel's end the supervisor is gone (its death signal ends
     * launchd anyway): launchd keeps serving what it has. */
    for (int i = 0; i < 8 && pbx_peer_attach_next(&srv->attach, "launchd", &m);
         i++) {
        launchd_attach_one(srv, &m);
    }
}
