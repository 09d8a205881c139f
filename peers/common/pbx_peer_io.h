/*
 * pbx_peer_io.h: the reference peers' thin socket layer (hosted; libc).
 *
 * Capabilities are file descriptors and endpoints are AF_UNIX
 * SOCK_SEQPACKET sockets (docs/HOST.md). Every receive takes the frame and
 * its SCM_RIGHTS descriptors together, with a control buffer sized for
 * PBX_PEER_IO_FDS_MAX descriptors, and decodes the frame with the ipc
 * codec against the descriptor count the kernel reported. A message whose
 * descriptors or bytes were truncated, or whose frame is malformed, has
 * every descriptor it carried closed before the caller sees it.
 */
#ifndef PBX_PEER_IO_H
#define PBX_PEER_IO_H

#include "ipc/pbx_ipc.h"

/** PBX_PEER_IO_FDS_MAX is how many descriptors one receive can take. */
#define PBX_PEER_IO_FDS_MAX 16U

/**
 * pbx_peer_msg is one received message: raw bytes, the descriptors that
 * arrived, and the decoded frame. frame borrows buf. The receiver owns
 * every descriptor in fds[0..nfds) and must close or keep each one.
 */
typedef struct pbx_peer_msg {
    /** buf holds the message bytes. */
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    /** len is the number of bytes received. */
    size_t len;
    /** fds are the descriptors received (owned by the receiver). */
    int fds[PBX_PEER_IO_FDS_MAX];
    /** nfds is the number of valid entries in fds. */
    size_t nfds;
    /** err is the frame decode result (PBX_OK when frame is valid). */
    pbx_err err;
    /** frame is the decoded frame, valid only when err is PBX_OK. */
    pbx_ipc_frame frame;
} pbx_peer_msg;

/**
 * pbx_peer_log prints one line "<who>: <message>" to stderr. who and fmt
 * are NUL-terminated; the line is written with one write.
 */
void pbx_peer_log(const char *who, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** pbx_peer_io_close_all closes fds[0..n) and sets each entry to -1. */
void pbx_peer_io_close_all(int *fds, size_t n);

/**
 * pbx_peer_io_recv_frame blocks for one message on fd into *m and decodes
 * it. Returns 0 with a message (m->err says whether the frame is valid; on
 * a decode error its descriptors are already closed), 1 when the peer
 * closed the connection, or -1 with errno set on a receive failure
 * (EMSGSIZE for a truncated message, whose descriptors are closed).
 */
int pbx_peer_io_recv_frame(int fd, pbx_peer_msg *m);

/**
 * pbx_peer_io_recv_raw receives one message on fd into m (bytes and up to
 * PBX_PEER_IO_FDS_MAX descriptors, which m then owns) without decoding
 * it, with the extra recvmsg flags (0, or MSG_DONTWAIT). m->err is left
 * as the caller set it. Returns 0 for a message, 1 when the peer closed
 * the connection, or -1 with errno set (EMSGSIZE for a truncated
 * message or foreign control data, whose descriptors are closed).
 */
int pbx_peer_io_recv_raw(int fd, pbx_peer_msg *m, int flags);

/**
 * pbx_peer_io_send sends len bytes of buf on fd with one descriptor cap_fd
 * attached (a copy: the sender keeps cap_fd), or none when cap_fd < 0.
 * Never raises SIGPIPE. Returns 0, or -1 with errno set.
 */
int pbx_peer_io_send(int fd, const uint8_t *buf, size_t len, int cap_fd);

/**
 * pbx_peer_io_send_fds sends len bytes of buf on fd with the nfds
 * descriptors fds[0..nfds) attached (copies: the sender keeps them; at
 * most PBX_PEER_IO_FDS_MAX, else EINVAL), with the extra sendmsg flags
 * (0, or MSG_DONTWAIT so that a full peer answers EAGAIN instead of
 * waiting). An interrupted send is retried, a bounded number of times.
 * Never raises SIGPIPE. Returns 0, or -1 with errno set.
 */
int pbx_peer_io_send_fds(int fd, const uint8_t *buf, size_t len, const int *fds,
                         size_t nfds, int flags);

/**
 * pbx_peer_io_msg_seq returns the per-call seq of the request in m, read
 * from its raw header whether or not the frame decoded (0 when the message
 * is shorter than a header). Every reply a peer sends echoes it, error
 * replies included, so powerboxd can match a reply among many calls
 * outstanding on one route.
 */
uint32_t pbx_peer_io_msg_seq(const pbx_peer_msg *m);

/**
 * pbx_peer_io_send_seq stamps seq into the header of the encoded frame
 * buf[0..len) (pbx_ipc_frame_set_seq), then sends it on fd like
 * pbx_peer_io_send (with cap_fd unless negative). Returns 0, or -1 with
 * errno set (EINVAL when len is shorter than a header).
 */
int pbx_peer_io_send_seq(int fd, uint8_t *buf, size_t len, uint32_t seq,
                         int cap_fd);

/**
 * pbx_peer_io_reply sends the encoded reply buf[0..len) to the request in
 * req on fd, echoing req's seq (pbx_peer_io_msg_seq); cap_fd as in
 * pbx_peer_io_send. Returns 0, or -1 with errno set.
 */
int pbx_peer_io_reply(int fd, const pbx_peer_msg *req, uint8_t *buf, size_t len,
                      int cap_fd);

/**
 * pbx_peer_io_reply_status answers the request in m with an error reply of
 * status (no body, no descriptor) that echoes its request id and seq. When
 * m's frame did not decode, the op, request id and seq are read from the
 * raw header if it names a known request op; otherwise nothing is sent.
 * Returns 0 when sent or skipped, -1 on a send failure.
 */
int pbx_peer_io_reply_status(int fd, const pbx_peer_msg *m, uint32_t status);

/**
 * pbx_peer_io_call sends req (with cap_fd unless negative) on fd, then
 * waits at most timeout_ms for the reply into *reply. Returns 0 with a
 * reply (check reply->err), 1 if the peer closed, or -1 with errno set
 * (ETIMEDOUT when no reply came in time).
 */
int pbx_peer_io_call(int fd, const uint8_t *req, size_t req_len, int cap_fd,
                     pbx_peer_msg *reply, int timeout_ms);

/**
 * pbx_peer_io_listen creates an AF_UNIX socket of type (SOCK_SEQPACKET:
 * listening; SOCK_DGRAM: bound only) at the filesystem path, replacing a
 * stale socket file there. Returns the descriptor (close-on-exec) or -1.
 */
int pbx_peer_io_listen(const char *path, int type);

/**
 * pbx_peer_io_listen_private is pbx_peer_io_listen for a socket that
 * carries its owner's authority (launchd's control socket): the socket
 * file is made mode 0600 after bind and before listen, so no other user
 * can connect to it, whatever the umask. Returns the descriptor
 * (close-on-exec) or -1.
 */
int pbx_peer_io_listen_private(const char *path, int type);

/**
 * pbx_peer_io_connect connects an AF_UNIX socket of type to path. Returns
 * the descriptor (close-on-exec) or -1 with errno set.
 */
int pbx_peer_io_connect(const char *path, int type);

/**
 * pbx_peer_io_fd_arg parses a descriptor number given on the command line
 * and checks that it is open. Returns it, or -1.
 */
int pbx_peer_io_fd_arg(const char *s);

/**
 * pbx_peer_io_inode returns the inode number of what fd holds, or 0 when
 * fstat fails. For sockets this is the connection's identity.
 */
uint64_t pbx_peer_io_inode(int fd);

/**
 * PBX_PEER_IO_SCOPE_BYTES is the length of vfsd's scope hand-out message:
 * the 8 bytes "PBXSCOPE", then the scope identity as a little-endian u64.
 * It travels with exactly one descriptor, the scope (docs/HOST.md).
 */
#define PBX_PEER_IO_SCOPE_BYTES 16U

/**
 * pbx_peer_io_scope_give sends the scope hand-out naming scope_id on conn,
 * with a copy of scope_fd attached (the sender keeps scope_fd). Returns 0,
 * or -1 with errno set.
 */
int pbx_peer_io_scope_give(int conn, int scope_fd, uint64_t scope_id);

/**
 * pbx_peer_io_scope_take waits at most timeout_ms for one scope hand-out
 * on conn. Returns the scope descriptor (owned by the caller) and stores
 * the identity vfsd named it by in *scope_id, or -1 with errno set:
 * ETIMEDOUT, ECONNRESET when conn hung up, EPROTO when the message is not
 * an exact hand-out with one descriptor (whatever arrived is closed).
 */
int pbx_peer_io_scope_take(int conn, int timeout_ms, uint64_t *scope_id);

/**
 * pbx_peer_io_scope_acquire connects to vfsd's scope socket at path, takes
 * one scope (at most timeout_ms) and closes the connection. The scope must
 * be a socket named by its own inode, which is what powerboxd's fstat of
 * its copy reports; anything else is refused with EPROTO. Returns the
 * scope descriptor (close-on-exec), storing the identity in *scope_id, or
 * -1 with errno set.
 */
int pbx_peer_io_scope_acquire(const char *path, int timeout_ms,
                              uint64_t *scope_id);

/**
 * pbx_peer_io_ready reports readiness on ready_fd (when >= 0) by writing
 * "ready\n" and closing it; peers call it after every startup check.
 */
void pbx_peer_io_ready(int ready_fd);

#endif /* PBX_PEER_IO_H */
