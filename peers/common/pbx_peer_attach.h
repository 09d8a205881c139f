/*
 * pbx_peer_attach.h: the attach channel a supervisor (`pbx up`) holds to
 * every peer it starts with --attach-fd N (hosted; libc).
 *
 * The channel is one end of an AF_UNIX SOCK_SEQPACKET socketpair. Each
 * message from the supervisor is one op byte ('R': adopt route(s); 'P':
 * vfsd only, make a route pair for the process whose pid is the body) and
 * an optional body, with at most PBX_PEER_ATTACH_FDS_MAX descriptors. The
 * peer answers with the op in lower case, a status byte (0 done, 1
 * refused) and the message's tag echoed (its body when it has at most
 * PBX_PEER_ATTACH_TAG_MAX bytes: 'P''s pid, 'R''s call number), so the
 * supervisor takes only the answer to the message it sent and skips a
 * late one of an earlier call; vfsd's answer to 'P' carries the route's
 * far end.
 * There is no listening op: no socket of the stack makes its first
 * connector a route (docs/HOST.md, "The attach channel").
 * A peer polls the channel with its other descriptors and never blocks
 * on it: receives and answers both use MSG_DONTWAIT.
 */
#ifndef PBX_PEER_ATTACH_H
#define PBX_PEER_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** PBX_PEER_ATTACH_FDS_MAX is how many descriptors one message may carry. */
#define PBX_PEER_ATTACH_FDS_MAX 2U

/**
 * PBX_PEER_ATTACH_BODY_MAX is the longest body accepted after the op byte
 * (every op's body is shorter). A longer message is truncated by the
 * kernel and refused.
 */
#define PBX_PEER_ATTACH_BODY_MAX 120U

/**
 * PBX_PEER_ATTACH_OP_ROUTE is 'R': adopt the attached route(s). The body
 * is empty or a call number (PBX_PEER_ATTACH_TAG_MAX bytes, any value)
 * that the answer echoes.
 */
#define PBX_PEER_ATTACH_OP_ROUTE 0x52U

/**
 * PBX_PEER_ATTACH_OP_PAIR is 'P' (vfsd only): the body is a pid (4 bytes,
 * little-endian, 1..INT32_MAX). vfsd makes a route socketpair, serves
 * RESOLVE on it to that pid alone, and answers 'p' 0, the pid echoed,
 * with the far end attached (pbx_peer_attach_reply). The supervisor gives that
 * end to the process it forked and holds before exec (powerboxd's slot 5).
 */
#define PBX_PEER_ATTACH_OP_PAIR 0x50U

/** PBX_PEER_ATTACH_PID_BYTES is the length of the 'P' body. */
#define PBX_PEER_ATTACH_PID_BYTES 4U

/**
 * PBX_PEER_ATTACH_TAG_MAX is the longest body an answer echoes (a longer
 * body is not echoed: its answer is the op and status alone).
 */
#define PBX_PEER_ATTACH_TAG_MAX 4U

/** PBX_PEER_ATTACH_ANSWER_MAX is the longest answer: op, status, tag. */
#define PBX_PEER_ATTACH_ANSWER_MAX (2U + PBX_PEER_ATTACH_TAG_MAX)

/** PBX_PEER_ATTACH_DONE is the answer status of an applied message. */
#define PBX_PEER_ATTACH_DONE 0U

/** PBX_PEER_ATTACH_REFUSED is the answer status of a refused message. */
#define PBX_PEER_ATTACH_REFUSED 1U

/**
 * pbx_peer_attach_msg is one received channel message. body holds the
 * bytes after the op (body_len of them, not NUL-terminated). The receiver
 * owns every descriptor in fds[0..nfds) and must close or keep each one.
 * ok is false when the message was truncated (bytes or descriptors) or
 * carried foreign control data, or had no op byte: its descriptors are
 * then already closed (nfds is 0) and the peer answers it refused.
 */
typedef struct pbx_peer_attach_msg {
    /** op is the first byte (0 when the message had no bytes). */
    uint8_t op;
    /** ok is false for a message that must be refused as malformed. */
    bool ok;
    /** body is the bytes after the op. */
    uint8_t body[PBX_PEER_ATTACH_BODY_MAX];
    /** body_len is the number of valid bytes in body. */
    size_t body_len;
    /** fds are the descriptors received (owned by the receiver). */
    int fds[PBX_PEER_ATTACH_FDS_MAX];
    /** nfds is the number of valid entries in fds. */
    size_t nfds;
} pbx_peer_attach_msg;

/**
 * pbx_peer_attach_recv receives one message from the channel chan without
 * waiting (MSG_DONTWAIT), its descriptors close-on-exec (MSG_CMSG_CLOEXEC).
 * Descriptors beyond PBX_PEER_ATTACH_FDS_MAX are closed by the kernel and
 * the message is marked not ok, as is one whose bytes were truncated.
 * Returns 0 with a message in *m (check m->ok), 1 at end of file (the
 * supervisor is gone), or -1 with errno set (EAGAIN when nothing waits).
 */
int pbx_peer_attach_recv(int chan, pbx_peer_attach_msg *m);

/**
 * pbx_peer_attach_answer sends a 2-byte answer (no tag) to a message of
 * op on chan: op in lower case (an op that is not an upper-case letter is sent
 * as it is), then status. Sent with MSG_DONTWAIT and MSG_NOSIGNAL, so a
 * supervisor that does not read never holds the peer up. Returns 0, or -1
 * with errno set.
 */
int pbx_peer_attach_answer(int chan, uint8_t op, uint8_t status);

/**
 * pbx_peer_attach_reply answers the received message m on chan with
 * status: m's op in lower case, status, then m's tag (its body when
 * body_len <= PBX_PEER_ATTACH_TAG_MAX), with descriptor fd attached when
 * fd >= 0 (a copy: the caller keeps fd and closes it). m is only read.
 * Sent with MSG_DONTWAIT and MSG_NOSIGNAL. Returns 0, or -1 with errno
 * set (nothing left).
 */
int pbx_peer_attach_reply(int chan, const pbx_peer_attach_msg *m,
                          uint8_t status, int fd);

/**
 * pbx_peer_attach_echoes is the supervisor's test of an answer: whether
 * ans (n bytes) answers exactly the message msg (len bytes, op first, a
 * body of at most PBX_PEER_ATTACH_TAG_MAX bytes): msg's op in lower case,
 * any status byte, then msg's body echoed byte for byte. A 'p' for another
 * pid, or an 'r' of another call number, is not msg's answer. Both
 * buffers are only read.
 */
bool pbx_peer_attach_echoes(const uint8_t *ans, size_t n, const uint8_t *msg,
                            size_t len);

/**
 * pbx_peer_attach_is_socket reports whether fd is an AF_UNIX socket of
 * type (SOCK_SEQPACKET, SOCK_DGRAM, ...).
 */
bool pbx_peer_attach_is_socket(int fd, int type);

/**
 * pbx_peer_attach_route_check judges an 'R' message m for a peer whose
 * routes are ntypes descriptors of the socket types types[0..ntypes), in
 * order (ttyd, procd: one SOCK_SEQPACKET; launchd: SOCK_DGRAM then
 * SOCK_SEQPACKET), with an empty body or a call number
 * (PBX_PEER_ATTACH_TAG_MAX bytes). Changes nothing. Returns NULL when m is
 * acceptable, else the refusal reason (a static string): "malformed message",
 * "wrong op for this peer", "wrong descriptor count" or "wrong socket
 * type".
 */
const char *pbx_peer_attach_route_check(const pbx_peer_attach_msg *m,
                                        const int *types, size_t ntypes);

/**
 * pbx_peer_attach_refuse closes every descriptor of m, logs
 * "<who>: attach channel: refused: <reason>" and answers m refused on
 * chan (pbx_peer_attach_reply, its tag echoed). who and reason are
 * NUL-terminated and only read.
 */
void pbx_peer_attach_refuse(int chan, pbx_peer_attach_msg *m, const char *who,
                            const char *reason);

/**
 * pbx_peer_attach_next receives the next message on the attach channel
 * *chan into m (the caller's, reused). Returns true when m holds one.
 * Returns false when nothing waits, or when the channel ended or failed:
 * the supervisor is gone, so *chan is closed, set to -1 and
 * "<who>: attach channel closed; serving on without it" (or the error)
 * logged; the peer serves on. who is NUL-terminated and only read.
 */
bool pbx_peer_attach_next(int *chan, const char *who, pbx_peer_attach_msg *m);

/**
 * pbx_peer_attach_adopt judges m as an 'R' carrying exactly one
 * SOCK_SEQPACKET route (ttyd, procd): adopted as routes[*nroutes] when
 * *nroutes < max (the table then owns the descriptor) and answered done,
 * logged "<who>: attach channel: route(s) adopted"; anything else is
 * refused (pbx_peer_attach_refuse, "route table full" when no room).
 */
void pbx_peer_attach_adopt(int chan, pbx_peer_attach_msg *m, const char *who,
                           int *routes, size_t *nroutes, size_t max);

#endif /* PBX_PEER_ATTACH_H */
