/*
 * pbx_peer_sandbox.c: Landlock plans and the static-program check for
 * launchd's sandboxed jobs (see pbx_peer_sandbox.h).
 */
#include "peers/lib/pbx_peer_sandbox.h"

#include <errno.h>

/* ELF64 header fields (System V gABI) read by the static check. */
#define ELF_CLASS_OFF     4U
#define ELF_DATA_OFF      5U
#define ELF_TYPE_OFF      16U
#define ELF_PHOFF_OFF     32U
#define ELF_PHENTSIZE_OFF 54U
#define ELF_PHNUM_OFF     56U
#define ELF64_EHDR_BYTES  64U
#define ELF64_PHDR_BYTES  56U
#define ELF_CLASS64       2U
#define ELF_DATA_LSB      1U
#define ELF_ET_EXEC       2U
#define ELF_ET_DYN        3U
#define ELF_PT_INTERP     3U
/* The largest program header table judged (the field is 16 bits). */
#define ELF_PHNUM_MAX 0xFFFFU

pbx_err pbx_peer_sandbox_decide(long abi, int err, pbx_peer_sandbox_plan *out)
{
    if (abi < 0) {
        /* ENOSYS: built without Landlock; EOPNOTSUPP: built in but
         * disabled at boot. Either way nothing could confine the job. */
        return err == ENOSYS || err == EOPNOTSUPP ? PBX_E_PEER_NO_LANDLOCK
                                                  : PBX_E_PEER_SANDBOX;
    }
    if (abi < 1) {
        return PBX_E_PEER_NO_LANDLOCK;
    }
    uint64_t fs = PBX_PEER_LL_FS_ABI1;
    if (abi >= 2) {
        fs |= PBX_PEER_LL_FS_REFER;
    }
    if (abi >= 3) {
        fs |= PBX_PEER_LL_FS_TRUNCATE;
    }
    /* ABI 4 added network rights (handled_net below) and ABI 7 audit
     * flags: no new filesystem right, so nothing to add for them. */
    if (abi >= 5) {
        fs |= PBX_PEER_LL_FS_IOCTL_DEV;
    }
    out->abi = abi;
    out->handled_fs = fs;
    /* No rule names a port, so a handled network right is denied. */
    out->handled_net =
        abi >= 4 ? (PBX_PEER_LL_NET_BIND_TCP | PBX_PEER_LL_NET_CONNECT_TCP)
                 : 0U;
    out->scoped =
        abi >= 6 ? (PBX_PEER_LL_SCOPE_ABSTRACT_UNIX | PBX_PEER_LL_SCOPE_SIGNAL)
                 : 0U;
    out->prog_access = PBX_PEER_LL_FS_EXECUTE | PBX_PEER_LL_FS_READ_FILE;
    return PBX_OK;
}

/* Whether the phnum entries of the program header table at phoff hold a
 * PT_INTERP; the table lies inside img[0..len) (checked by the caller). */
static bool sandbox_has_interp(const uint8_t *img, size_t phoff, size_t phnum)
{
    for (size_t i = 0; i < phnum && i < ELF_PHNUM_MAX; i++) {
        if (pbx_le_get32(img + phoff + i * ELF64_PHDR_BYTES) == ELF_PT_INTERP) {
            return true;
        }
    }
    return false;
}

pbx_err pbx_peer_sandbox_elf(const uint8_t *img, size_t len)
{
    static const uint8_t magic[4] = {0x7FU, 'E', 'L', 'F'};
    if (img == NULL || len < ELF64_EHDR_BYTES ||
        !pbx_mem_equal(img, magic, sizeof(magic)) ||
        img[ELF_CLASS_OFF] != ELF_CLASS64 ||
        img[ELF_DATA_OFF] != ELF_DATA_LSB) {
        return PBX_E_PEER_NOT_ELF;
    }
    uint16_t type = pbx_le_get16(img + ELF_TYPE_OFF);
    if (type != ELF_ET_EXEC && type != ELF_ET_DYN) {
        return PBX_E_PEER_NOT_ELF;
    }
    uint64_t phoff = pbx_le_get64(img + ELF_PHOFF_OFF);
    uint16_t entsize = pbx_le_get16(img + ELF_PHENTSIZE_OFF);
    uint16_t phnum = pbx_le_get16(img + ELF_PHNUM_OFF);
    if (entsize != ELF64_PHDR_BYTES || phnum == 0U || phoff > len ||
        (uint64_t)phnum * ELF64_PHDR_BYTES > len - phoff) {
        return PBX_E_PEER_NOT_ELF;
    }
    return sandbox_has_interp(img, (size_t)phoff, phnum) ? PBX_E_PEER_DYNAMIC
                                                         : PBX_OK;
}
