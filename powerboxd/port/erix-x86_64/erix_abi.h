/*
 * erix_abi.h: the EriX x86_64 system call ABI as powerboxd's erix port
 * uses it. This header is the boundary: a real EriX kernel ABI header
 * replaces it, and only the erix port includes it. docs/PORTS.md documents
 * every number and layout here.
 *
 * Convention: `syscall` with the number in rax and arguments in rdi, rsi,
 * rdx and r10. The kernel returns a status in rax (ERIX_OK or a negative
 * ERIX_E_*) and one result word in rdx; rcx and r11 are clobbered. Slots
 * are indices into the calling process's capability space (CSpace).
 */
#ifndef PBX_ERIX_ABI_H
#define PBX_ERIX_ABI_H

#include <stdint.h>

/** ERIX_SYS_EXIT ends the process: (status). Never returns. */
#define ERIX_SYS_EXIT 0x00U
/** ERIX_SYS_ENDPOINT_CREATE: (dest_slot) a new endpoint, full rights. */
#define ERIX_SYS_ENDPOINT_CREATE 0x10U
/** ERIX_SYS_IPC_SEND: (slot, desc *) send; NONBLOCK gives WOULD_BLOCK. */
#define ERIX_SYS_IPC_SEND 0x20U
/** ERIX_SYS_IPC_RECV: (slot, desc *) receive; caps land in desc->caps. */
#define ERIX_SYS_IPC_RECV 0x21U
/** ERIX_SYS_IPC_CALL: (slot, send desc *, recv desc *, timeout_ms) send,
 * then wait for the reply at most timeout_ms (0: unbounded); when it runs
 * out the kernel cancels the pending reply and answers ERIX_E_TIMED_OUT. */
#define ERIX_SYS_IPC_CALL 0x22U
/** ERIX_SYS_IPC_REPLY: (reply_slot, desc *) answer; consumes the slot. */
#define ERIX_SYS_IPC_REPLY 0x23U
/** ERIX_SYS_WAITSET_CREATE: (dest_slot) a new, empty wait set. */
#define ERIX_SYS_WAITSET_CREATE 0x30U
/** ERIX_SYS_WAITSET_BIND: (waitset, slot, interest, token); 0 unbinds. */
#define ERIX_SYS_WAITSET_BIND 0x31U
/** ERIX_SYS_WAITSET_WAIT: (waitset, event *, flags, timeout_ms) one
 * event; blocks unless flags has ERIX_WAIT_NONBLOCK; with
 * ERIX_WAIT_TIMEOUT, answers WOULD_BLOCK after timeout_ms without one. */
#define ERIX_SYS_WAITSET_WAIT 0x32U
/** ERIX_SYS_SLOT_DELETE: (slot) delete; a reserved slot stays reserved. */
#define ERIX_SYS_SLOT_DELETE 0x40U
/** ERIX_SYS_SLOT_QUERY: (slot, info *) describe without changing. */
#define ERIX_SYS_SLOT_QUERY 0x41U
/** ERIX_SYS_SLOT_MOVE: (from, to) into a reserved empty slot only. */
#define ERIX_SYS_SLOT_MOVE 0x42U
/** ERIX_SYS_SLOT_RESERVE: (slot) mark an empty slot reserved. */
#define ERIX_SYS_SLOT_RESERVE 0x43U
/** ERIX_SYS_SLOT_UNRESERVE: (slot) release a reserved empty slot. */
#define ERIX_SYS_SLOT_UNRESERVE 0x44U
/** ERIX_SYS_SLOT_DERIVE: (from, to, rights) a revocable child capability
 * with rights masked, into a reserved empty slot only. */
#define ERIX_SYS_SLOT_DERIVE 0x45U
/** ERIX_SYS_SLOT_IDENTIFY: (slot) -> identity in rdx: the kernel's nonzero
 * identity of the object behind the capability, the same through every
 * copy and derived child, never shared by two live objects; ERIX_E_EMPTY
 * for an empty or only reserved slot. A server names the objects it mints
 * (a vfsd scope) by this identity, so a holder can check the name. */
#define ERIX_SYS_SLOT_IDENTIFY 0x46U
/** ERIX_SYS_FRAME_READ: (frame, offset, buf, len) -> bytes in rdx. */
#define ERIX_SYS_FRAME_READ 0x50U
/** ERIX_SYS_VM_ALLOC: (bytes) zeroed private RW memory -> address. */
#define ERIX_SYS_VM_ALLOC 0x51U
/** ERIX_SYS_CLOCK_MS: () -> the kernel's monotonic clock in milliseconds
 * in rdx; never goes back. */
#define ERIX_SYS_CLOCK_MS 0x52U

/** ERIX_OK is success. */
#define ERIX_OK 0
/** ERIX_E_WOULD_BLOCK: a NONBLOCK operation found no room or no message. */
#define ERIX_E_WOULD_BLOCK (-1)
/** ERIX_E_INTERRUPTED: the wait ended without an event; or (an
 * assumption of this port, docs/PORTS.md) SLOT_DELETE or SLOT_UNRESERVE
 * was interrupted before taking effect: the slot is unchanged and the
 * call may be repeated. */
#define ERIX_E_INTERRUPTED (-2)
/** ERIX_E_EMPTY: the slot holds no capability. */
#define ERIX_E_EMPTY (-3)
/** ERIX_E_OCCUPIED: the destination slot is not empty. */
#define ERIX_E_OCCUPIED (-4)
/** ERIX_E_RIGHTS: the capability lacks a needed right. */
#define ERIX_E_RIGHTS (-5)
/** ERIX_E_PEER_GONE: the peer endpoint or reply no longer exists. */
#define ERIX_E_PEER_GONE (-6)
/** ERIX_E_RANGE: slot number or length out of range. */
#define ERIX_E_RANGE (-7)
/** ERIX_E_TIMED_OUT: IPC_CALL got no reply within its timeout_ms. */
#define ERIX_E_TIMED_OUT (-8)

/** ERIX_SLOT_NONE means "no slot" in descriptors. */
#define ERIX_SLOT_NONE 0xFFFFFFFFU

/** ERIX_IPC_CAPS_MAX: capabilities one message can carry. A sender with
 * more is refused by the kernel; a receiver naming fewer receive slots
 * than arrived gets ERIX_IPC_CAPS_DROPPED (the surplus is deleted). */
#define ERIX_IPC_CAPS_MAX 4U

/** ERIX_IPC_NONBLOCK (desc flags, in): fail rather than wait. */
#define ERIX_IPC_NONBLOCK 1U
/** ERIX_IPC_TRUNC (desc flags, out): message longer than the buffer. */
#define ERIX_IPC_TRUNC 2U
/** ERIX_IPC_CAPS_DROPPED (desc flags, out): more caps than slots named. */
#define ERIX_IPC_CAPS_DROPPED 4U
/** ERIX_IPC_REPLY_TO (send desc flags, in): the kernel mints a one-shot
 * reply capability to the endpoint in reply_slot and delivers it with the
 * message; the receiver's IPC_REPLY then arrives there as an ordinary
 * message. This is how a split-phase call is sent: the sender goes on and
 * receives the reply later from its own endpoint. */
#define ERIX_IPC_REPLY_TO 8U

/** erix_ipc_desc describes one message in either direction. */
struct erix_ipc_desc {
    /** buf is the user address of the message bytes. */
    uint64_t buf;
    /** len: send length, or receive capacity in and length out. */
    uint32_t len;
    /** flags: ERIX_IPC_* bits in and out. */
    uint32_t flags;
    /** badge: out, the badge of the capability the sender invoked. */
    uint64_t badge;
    /** cap_count: send: caps to transfer; receive: caps that arrived. */
    uint32_t cap_count;
    /** reply_slot: receive: empty slot for the reply capability, or NONE. */
    uint32_t reply_slot;
    /** caps: send: slots to transfer (copied); receive: empty receive
     * slots the kernel fills in order. */
    uint32_t caps[ERIX_IPC_CAPS_MAX];
};

/** Object types reported by ERIX_SYS_SLOT_QUERY. */
#define ERIX_OBJ_EMPTY 0U
/** An empty slot that carries a reservation. */
#define ERIX_OBJ_RESERVED 1U
/** A message endpoint. */
#define ERIX_OBJ_ENDPOINT 2U
/** An authority-free notification object. */
#define ERIX_OBJ_NOTIFICATION 3U
/** A memory frame. */
#define ERIX_OBJ_FRAME 4U
/** A one-shot reply capability. */
#define ERIX_OBJ_REPLY 5U
/** A wait set. */
#define ERIX_OBJ_WAITSET 6U

/** Rights bits reported by ERIX_SYS_SLOT_QUERY. */
#define ERIX_RIGHT_READ 1U
/** Write access (frames). */
#define ERIX_RIGHT_WRITE 2U
/** Send access (endpoints). */
#define ERIX_RIGHT_SEND 8U
/** Receive access (endpoints). */
#define ERIX_RIGHT_RECV 16U
/** Manage access: revoke or delete derived copies. */
#define ERIX_RIGHT_MANAGE 32U
/** Grant access: transfer the capability onward. */
#define ERIX_RIGHT_GRANT 64U

/** ERIX_WAIT_NONBLOCK: WAITSET_WAIT returns WOULD_BLOCK when idle. */
#define ERIX_WAIT_NONBLOCK 1U
/** ERIX_WAIT_TIMEOUT: WAITSET_WAIT blocks at most its timeout_ms. */
#define ERIX_WAIT_TIMEOUT 2U

/** ERIX_SLOTF_IMMUTABLE: the frame's contents and size can never change
 * through any capability (the kernel's sealed frame). */
#define ERIX_SLOTF_IMMUTABLE 1U
/** ERIX_SLOTF_RESERVED: the slot carries a reservation. */
#define ERIX_SLOTF_RESERVED 2U

/** erix_slot_info is the result of ERIX_SYS_SLOT_QUERY. */
struct erix_slot_info {
    /** type is an ERIX_OBJ_* value. */
    uint32_t type;
    /** rights is a set of ERIX_RIGHT_* bits. */
    uint32_t rights;
    /** object_id names the kernel object (stable while it exists). */
    uint64_t object_id;
    /** badge is the capability's badge (endpoints), else zero. */
    uint64_t badge;
    /** size is the frame size in bytes (frames), else zero. */
    uint64_t size;
    /** flags is a set of ERIX_SLOTF_* bits. */
    uint32_t flags;
    /** pad is zero. */
    uint32_t pad;
};

/** Wait set interest and readiness bits. */
#define ERIX_READY_RECV 1U
/** The bound slot accepts a non-blocking send. */
#define ERIX_READY_SEND 2U
/** The bound object is gone or failed. */
#define ERIX_READY_ERROR 4U

/** erix_wait_event is one event from ERIX_SYS_WAITSET_WAIT. */
struct erix_wait_event {
    /** token is the word given at bind time. */
    uint64_t token;
    /** ready is a set of ERIX_READY_* bits. */
    uint32_t ready;
    /** pad is zero. */
    uint32_t pad;
};

/**
 * erix_sys performs one EriX system call with up to four arguments and
 * returns the status; the result word is stored in *out when out is not
 * NULL.
 */
static inline int64_t erix_sys(uint64_t n, uint64_t a, uint64_t b, uint64_t c,
                               uint64_t d, uint64_t *out)
{
    int64_t st;
    uint64_t rdx = c;
    register uint64_t r10 __asm__("r10") = d;
    __asm__ volatile("syscall"
                     : "=a"(st), "+d"(rdx)
                     : "a"(n), "D"(a), "S"(b), "r"(r10)
                     : "rcx", "r11", "memory");
    if (out != (uint64_t *)0) {
        *out = rdx;
    }
    return st;
}

#endif /* PBX_ERIX_ABI_H */
