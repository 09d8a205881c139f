/*
 * lx_sys.h: raw Linux x86_64 system calls and the few kernel ABI layouts
 * the port needs, written from the kernel's documented interface.
 *
 * Convention: the number goes in rax, arguments in rdi, rsi, rdx, r10, r8
 * and r9; the `syscall` instruction clobbers rcx and r11; a result in
 * [-4095, -1] is a negated errno. No C library is involved anywhere.
 */
#ifndef PBX_LX_SYS_H
#define PBX_LX_SYS_H

#include <stddef.h>
#include <stdint.h>

/** LX_SYS_* are the x86_64 system call numbers the port uses. */
#define LX_SYS_CLOSE 3
/** write(fd, buf, count), for diagnostics only. */
#define LX_SYS_WRITE 1
/** fstat(fd, struct stat *). */
#define LX_SYS_FSTAT 5
/** mmap(addr, len, prot, flags, fd, off). */
#define LX_SYS_MMAP 9
/** pread64(fd, buf, count, off). */
#define LX_SYS_PREAD64 17
/** socket(domain, type, protocol). */
#define LX_SYS_SOCKET 41
/** sendmsg(fd, msghdr *, flags). */
#define LX_SYS_SENDMSG 46
/** recvmsg(fd, msghdr *, flags). */
#define LX_SYS_RECVMSG 47
/** bind(fd, addr, len). */
#define LX_SYS_BIND 49
/** listen(fd, backlog). */
#define LX_SYS_LISTEN 50
/** getsockopt(fd, level, name, val, len *). */
#define LX_SYS_GETSOCKOPT 55
/** fcntl(fd, cmd, arg). */
#define LX_SYS_FCNTL 72
/** exit_group(status). */
#define LX_SYS_EXIT_GROUP 231
/** epoll_wait(epfd, events, max, timeout). */
#define LX_SYS_EPOLL_WAIT 232
/** epoll_ctl(epfd, op, fd, event *). */
#define LX_SYS_EPOLL_CTL 233
/** accept4(fd, addr, len *, flags). */
#define LX_SYS_ACCEPT4 288
/** epoll_create1(flags). */
#define LX_SYS_EPOLL_CREATE1 291
/** dup3(old, new, flags). */
#define LX_SYS_DUP3 292
/** memfd_create(name, flags). */
#define LX_SYS_MEMFD_CREATE 319

/** LX_E* are the errno values the port distinguishes. */
#define LX_EINTR 4
/** Bad file descriptor: the slot is empty. */
#define LX_EBADF 9
/** Would block. */
#define LX_EAGAIN 11

/** Socket constants (AF_UNIX, types, flags). */
#define LX_AF_UNIX 1
/** SOCK_STREAM. */
#define LX_SOCK_STREAM 1
/** SOCK_DGRAM. */
#define LX_SOCK_DGRAM 2
/** SOCK_SEQPACKET. */
#define LX_SOCK_SEQPACKET 5
/** SOCK_NONBLOCK (same bit as O_NONBLOCK). */
#define LX_SOCK_NONBLOCK 0x800
/** SOCK_CLOEXEC (same bit as O_CLOEXEC). */
#define LX_SOCK_CLOEXEC 0x80000
/** SOL_SOCKET level. */
#define LX_SOL_SOCKET 1
/** SCM_RIGHTS control message type. */
#define LX_SCM_RIGHTS 1
/** SO_TYPE socket option. */
#define LX_SO_TYPE 3
/** SO_PEERCRED socket option. */
#define LX_SO_PEERCRED 17
/** SO_ACCEPTCONN socket option. */
#define LX_SO_ACCEPTCONN 30
/** MSG_CTRUNC: control data was truncated. */
#define LX_MSG_CTRUNC 0x8
/** MSG_TRUNC: datagram was truncated. */
#define LX_MSG_TRUNC 0x20
/** MSG_DONTWAIT: never block. */
#define LX_MSG_DONTWAIT 0x40
/** MSG_NOSIGNAL: no SIGPIPE on a closed peer. */
#define LX_MSG_NOSIGNAL 0x4000
/** MSG_CMSG_CLOEXEC: received descriptors get close-on-exec. */
#define LX_MSG_CMSG_CLOEXEC 0x40000000

/** File constants (fcntl, seals, memfd, mode bits). */
#define LX_O_CLOEXEC 0x80000
/** F_GETFD: used as the cheapest "is this slot open" probe. */
#define LX_F_GETFD 1
/** F_DUPFD_CLOEXEC: duplicate at the lowest free number at or above arg. */
#define LX_F_DUPFD_CLOEXEC 1030
/** F_ADD_SEALS. */
#define LX_F_ADD_SEALS 1033
/** F_GET_SEALS. */
#define LX_F_GET_SEALS 1034
/** F_SEAL_SEAL. */
#define LX_F_SEAL_SEAL 1
/** F_SEAL_SHRINK. */
#define LX_F_SEAL_SHRINK 2
/** F_SEAL_GROW. */
#define LX_F_SEAL_GROW 4
/** F_SEAL_WRITE. */
#define LX_F_SEAL_WRITE 8
/** MFD_CLOEXEC. */
#define LX_MFD_CLOEXEC 1
/** MFD_ALLOW_SEALING. */
#define LX_MFD_ALLOW_SEALING 2
/** S_IFMT mask and the two file types the port accepts. */
#define LX_S_IFMT 0170000U
/** S_IFSOCK. */
#define LX_S_IFSOCK 0140000U
/** S_IFREG. */
#define LX_S_IFREG 0100000U

/** epoll and mmap constants. */
#define LX_EPOLL_CLOEXEC 0x80000
/** EPOLL_CTL_ADD. */
#define LX_EPOLL_CTL_ADD 1
/** EPOLL_CTL_DEL. */
#define LX_EPOLL_CTL_DEL 2
/** EPOLL_CTL_MOD. */
#define LX_EPOLL_CTL_MOD 3
/** EPOLLIN. */
#define LX_EPOLLIN 0x001U
/** EPOLLOUT. */
#define LX_EPOLLOUT 0x004U
/** EPOLLERR. */
#define LX_EPOLLERR 0x008U
/** EPOLLHUP. */
#define LX_EPOLLHUP 0x010U
/** EPOLLRDHUP. */
#define LX_EPOLLRDHUP 0x2000U
/** PROT_READ | PROT_WRITE. */
#define LX_PROT_RW 3
/** MAP_PRIVATE | MAP_ANONYMOUS. */
#define LX_MAP_PRIVATE_ANON 0x22
/** The page size the arena is rounded to. */
#define LX_PAGE_BYTES 4096U

/** lx_stat is the x86_64 struct stat (144 bytes). */
struct lx_stat {
    /** Device of the inode. */
    uint64_t dev;
    /** Inode number. */
    uint64_t ino;
    /** Link count. */
    uint64_t nlink;
    /** Type and permission bits. */
    uint32_t mode;
    /** Owner. */
    uint32_t uid;
    /** Group. */
    uint32_t gid;
    /** Padding. */
    uint32_t pad0;
    /** Device number for special files. */
    uint64_t rdev;
    /** Size in bytes. */
    int64_t size;
    /** Remaining fields (block size, blocks, times, reserved). */
    int64_t rest[11];
};
/** The layout must match the kernel exactly. */
_Static_assert(sizeof(struct lx_stat) == 144, "x86_64 struct stat");

/** LX_STAT_OFF_DEV is the byte offset of st_dev in the x86_64 struct stat
 * (the kernel's struct stat in arch/x86/include/uapi/asm/stat.h). */
#define LX_STAT_OFF_DEV 0U
/** LX_STAT_OFF_INO is the byte offset of st_ino. */
#define LX_STAT_OFF_INO 8U
/** LX_STAT_OFF_MODE is the byte offset of st_mode (after the u64 nlink). */
#define LX_STAT_OFF_MODE 24U
/** The fields the port decodes sit at exactly the kernel's offsets. */
_Static_assert(offsetof(struct lx_stat, dev) == LX_STAT_OFF_DEV &&
                   offsetof(struct lx_stat, ino) == LX_STAT_OFF_INO &&
                   offsetof(struct lx_stat, mode) == LX_STAT_OFF_MODE,
               "x86_64 struct stat field offsets");

/** lx_iovec is struct iovec. */
struct lx_iovec {
    /** Base address. */
    void *base;
    /** Length in bytes. */
    uint64_t len;
};

/** lx_msghdr is struct msghdr (56 bytes on x86_64). */
struct lx_msghdr {
    /** Optional address. */
    void *name;
    /** Address length. */
    uint32_t namelen;
    /** Padding. */
    uint32_t pad0;
    /** Scatter/gather array. */
    struct lx_iovec *iov;
    /** Entries in iov. */
    uint64_t iovlen;
    /** Ancillary data buffer. */
    void *control;
    /** Ancillary buffer length. */
    uint64_t controllen;
    /** Flags on received message. */
    int32_t flags;
    /** Padding. */
    uint32_t pad1;
};
/** The layout must match the kernel exactly. */
_Static_assert(sizeof(struct lx_msghdr) == 56, "x86_64 struct msghdr");

/** LX_CMSG_HDR_BYTES is sizeof(struct cmsghdr): len u64, level, type. */
#define LX_CMSG_HDR_BYTES 16U

/** lx_sockaddr_un is struct sockaddr_un. */
struct lx_sockaddr_un {
    /** AF_UNIX. */
    uint16_t family;
    /** Path (or abstract name after a leading NUL). */
    char path[108];
};

/** lx_ucred is struct ucred (SO_PEERCRED). */
struct lx_ucred {
    /** Peer process. */
    int32_t pid;
    /** Peer user. */
    uint32_t uid;
    /** Peer group. */
    uint32_t gid;
};

/** lx_epoll_event is the packed x86_64 struct epoll_event (12 bytes). */
struct __attribute__((packed)) lx_epoll_event {
    /** Event bits. */
    uint32_t events;
    /** Caller data: the port stores the slot and a tag. */
    uint64_t data;
};
/** The layout must match the kernel exactly. */
_Static_assert(sizeof(struct lx_epoll_event) == 12, "packed epoll_event");

/** lx_sys1 performs a one-argument system call. */
static inline int64_t lx_sys1(int64_t n, int64_t a)
{
    int64_t ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a)
                     : "rcx", "r11", "memory");
    return ret;
}

/** lx_sys3 performs a three-argument system call. */
static inline int64_t lx_sys3(int64_t n, int64_t a, int64_t b, int64_t c)
{
    int64_t ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c)
                     : "rcx", "r11", "memory");
    return ret;
}

/** lx_sys6 performs a system call with up to six arguments. */
static inline int64_t lx_sys6(int64_t n, int64_t a, int64_t b, int64_t c,
                              int64_t d, int64_t e, int64_t f)
{
    int64_t ret;
    register int64_t r10 __asm__("r10") = d;
    register int64_t r8 __asm__("r8") = e;
    register int64_t r9 __asm__("r9") = f;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8),
                       "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

/** lx_ptr converts a pointer to a system call argument. */
static inline int64_t lx_ptr(const void *p)
{
    return (int64_t)(uintptr_t)p;
}

#endif /* PBX_LX_SYS_H */
