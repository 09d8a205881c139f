/*
 * pbx_test_sock.h: the two socket moves the hosted tests of the built
 * images share (tests/port and tests/e2e): connecting to powerboxd's
 * abstract public endpoint and sending one message with descriptors.
 */
#ifndef PBX_TEST_SOCK_H
#define PBX_TEST_SOCK_H

#include <stdbool.h>
#include <stddef.h>

/** PBX_TEST_SOCK_FDS_MAX is the most descriptors one message may carry. */
#define PBX_TEST_SOCK_FDS_MAX 253

/**
 * pbx_test_sock_connect opens a SOCK_SEQPACKET connection to the abstract
 * address name (its first byte stands for the leading NUL; name is read
 * only during the call). Returns the descriptor, owned by the caller, or
 * -1 (nothing is left open).
 */
int pbx_test_sock_connect(const char *name);

/**
 * pbx_test_sock_send sends the len bytes at msg on fd as one message with
 * nfds descriptors from fds attached (copies; the caller keeps its own).
 * nfds must be 0..PBX_TEST_SOCK_FDS_MAX. Returns true when the whole
 * message was sent; false for a bad nfds (nothing sent) or a failed send.
 */
bool pbx_test_sock_send(int fd, const void *msg, size_t len, const int *fds,
                        int nfds);

/** PBX_TEST_SOCK_CHILD_MAX is the most connections one
 * pbx_test_sock_connect_child call opens. */
#define PBX_TEST_SOCK_CHILD_MAX 32

/**
 * pbx_test_sock_connect_child opens n connections to the abstract address
 * name (as pbx_test_sock_connect) from one fresh child process, which
 * passes them back (SCM_RIGHTS) and exits; the caller has reaped it on
 * return. powerboxd therefore sees the n connections as one process that
 * is neither the caller nor any earlier child. n must be
 * 1..PBX_TEST_SOCK_CHILD_MAX. Stores the received descriptors, owned by the
 * caller, in fds[0..n) and returns how many arrived (n, or 0 on any
 * failure, when fds holds -1 and nothing is left open).
 */
int pbx_test_sock_connect_child(const char *name, int *fds, int n);

#endif /* PBX_TEST_SOCK_H */
