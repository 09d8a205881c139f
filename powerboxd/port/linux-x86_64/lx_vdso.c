/*
 * lx_vdso.c: finding a function in the vDSO's dynamic symbol table,
 * written from the System V ABI's ELF-64 object file format (the ELF
 * header, program headers, the dynamic section, the symbol and hash
 * tables) and the kernel's vdso(7) manual page.
 *
 * The walk is the loader's: the program headers give the PT_LOAD segments
 * (which map virtual addresses to image offsets) and PT_DYNAMIC; the
 * dynamic entries give the symbol table, the string table and the hash
 * table whose chain count is the number of symbols. Each step checks its
 * offset and length against the image before reading, in the overflow-
 * free form `off <= len && n <= len - off`.
 */
#include "powerboxd/port/linux-x86_64/lx_vdso.h"

/** ELF-64 sizes and offsets (System V ABI, ELF-64 object file format). */
#define LX_ELF_EHDR_BYTES 64U
/** e_type: a shared object. */
#define LX_ELF_ET_DYN 3U
/** Program header entry size and the fields read from it. */
#define LX_ELF_PHDR_BYTES 56U
/** PT_LOAD: a segment mapped from the file. */
#define LX_ELF_PT_LOAD 1U
/** PT_DYNAMIC: the dynamic section. */
#define LX_ELF_PT_DYNAMIC 2U
/** p_flags: executable. */
#define LX_ELF_PF_X 1U
/** Bound on program headers (the vDSO has about five). */
#define LX_ELF_PHNUM_MAX 64U
/** A dynamic entry: d_tag and d_val, eight bytes each. */
#define LX_ELF_DYN_BYTES 16U
/** Dynamic tags read here. */
#define LX_ELF_DT_NULL 0U
/** The symbol hash table. */
#define LX_ELF_DT_HASH 4U
/** The string table. */
#define LX_ELF_DT_STRTAB 5U
/** The symbol table. */
#define LX_ELF_DT_SYMTAB 6U
/** The string table's size. */
#define LX_ELF_DT_STRSZ 10U
/** One symbol entry's size. */
#define LX_ELF_DT_SYMENT 11U
/** An ELF-64 symbol: st_name u32, st_info, st_other, st_shndx u16,
 * st_value u64, st_size u64. */
#define LX_ELF_SYM_BYTES 24U
/** st_info's type: a function. */
#define LX_ELF_STT_FUNC 2U
/** st_info's binding: global. */
#define LX_ELF_STB_GLOBAL 1U
/** st_info's binding: weak. */
#define LX_ELF_STB_WEAK 2U

/** What the dynamic section says; each address is a virtual address. */
struct lx_vdso_dyn {
    /** DT_SYMTAB. */
    uint64_t symtab;
    /** DT_STRTAB. */
    uint64_t strtab;
    /** DT_STRSZ. */
    uint64_t strsz;
    /** DT_SYMENT (LX_ELF_SYM_BYTES when absent). */
    uint64_t syment;
    /** DT_HASH, or 0 when absent. */
    uint64_t hash;
};

/* True when n bytes at off lie inside an image of len bytes. */
static bool lx_vdso_span(size_t len, uint64_t off, uint64_t n)
{
    return off <= (uint64_t)len && n <= (uint64_t)len - off;
}

/* Checks the ELF header in the first len bytes and returns the program
 * header table's offset in *phoff and its count in *phnum. */
static bool lx_vdso_header(const uint8_t *image, size_t len, uint64_t *phoff,
                           uint32_t *phnum)
{
    if (len < LX_ELF_EHDR_BYTES || image[0] != 0x7FU || image[1] != 'E' ||
        image[2] != 'L' || image[3] != 'F' || image[4] != 2U ||
        image[5] != 1U || pbx_le_get16(image + 16) != LX_ELF_ET_DYN) {
        return false;
    }
    uint16_t entsize = pbx_le_get16(image + 54);
    uint16_t count = pbx_le_get16(image + 56);
    *phoff = pbx_le_get64(image + 32);
    *phnum = count;
    return entsize == LX_ELF_PHDR_BYTES && count > 0U &&
           count <= LX_ELF_PHNUM_MAX &&
           lx_vdso_span(len, *phoff, (uint64_t)count * LX_ELF_PHDR_BYTES);
}

/* Translates the n bytes at virtual address vaddr to an image offset
 * through the PT_LOAD that holds them wholly (an executable one when exec
 * is set); false when none does or the bytes pass the image's end. */
static bool lx_vdso_addr(const uint8_t *image, size_t len, uint64_t phoff,
                         uint32_t phnum, uint64_t vaddr, uint64_t n, bool exec,
                         uint64_t *off)
{
    for (uint32_t i = 0; i < phnum; i++) {
        const uint8_t *ph = image + phoff + (uint64_t)i * LX_ELF_PHDR_BYTES;
        uint64_t p_off = pbx_le_get64(ph + 8);
        uint64_t p_vaddr = pbx_le_get64(ph + 16);
        uint64_t p_filesz = pbx_le_get64(ph + 32);
        if (pbx_le_get32(ph) != LX_ELF_PT_LOAD ||
            (exec && (pbx_le_get32(ph + 4) & LX_ELF_PF_X) == 0U) ||
            vaddr < p_vaddr || vaddr - p_vaddr > p_filesz ||
            n > p_filesz - (vaddr - p_vaddr)) {
            continue;
        }
        uint64_t at = vaddr - p_vaddr;
        if (p_off > UINT64_MAX - at || !lx_vdso_span(len, p_off + at, n)) {
            return false;
        }
        *off = p_off + at;
        return true;
    }
    return false;
}

/* Finds PT_DYNAMIC and reads its entries, up to DT_NULL, into *d. */
static bool lx_vdso_dynamic(const uint8_t *image, size_t len, uint64_t phoff,
                            uint32_t phnum, struct lx_vdso_dyn *d)
{
    uint64_t off = 0;
    uint64_t count = 0;
    for (uint32_t i = 0; i < phnum && count == 0U; i++) {
        const uint8_t *ph = image + phoff + (uint64_t)i * LX_ELF_PHDR_BYTES;
        if (pbx_le_get32(ph) == LX_ELF_PT_DYNAMIC) {
            off = pbx_le_get64(ph + 8);
            count = pbx_le_get64(ph + 32) / LX_ELF_DYN_BYTES;
        }
    }
    if (count == 0U || !lx_vdso_span(len, off, count * LX_ELF_DYN_BYTES)) {
        return false;
    }
    d->syment = LX_ELF_SYM_BYTES;
    for (uint64_t i = 0; i < count; i++) {
        const uint8_t *e = image + off + i * LX_ELF_DYN_BYTES;
        uint64_t tag = pbx_le_get64(e);
        uint64_t val = pbx_le_get64(e + 8);
        if (tag == LX_ELF_DT_NULL) {
            break;
        }
        d->symtab = tag == LX_ELF_DT_SYMTAB ? val : d->symtab;
        d->strtab = tag == LX_ELF_DT_STRTAB ? val : d->strtab;
        d->strsz = tag == LX_ELF_DT_STRSZ ? val : d->strsz;
        d->syment = tag == LX_ELF_DT_SYMENT ? val : d->syment;
        d->hash = tag == LX_ELF_DT_HASH ? val : d->hash;
    }
    return d->symtab != 0U && d->strtab != 0U && d->strsz != 0U &&
           d->syment == LX_ELF_SYM_BYTES;
}

/* The number of symbols: DT_HASH's nchain, or, without a hash table,
 * the symbols that fit between the symbol table and a string table
 * placed after it (the vDSO's layout). 0 when neither can be read. */
static uint64_t lx_vdso_symcount(const uint8_t *image, size_t len,
                                 uint64_t phoff, uint32_t phnum,
                                 const struct lx_vdso_dyn *d)
{
    uint64_t at = 0;
    if (d->hash != 0U) {
        if (!lx_vdso_addr(image, len, phoff, phnum, d->hash, 8, false, &at)) {
            return 0;
        }
        return pbx_le_get32(image + at + 4);
    }
    return d->strtab > d->symtab ? (d->strtab - d->symtab) / LX_ELF_SYM_BYTES
                                 : 0U;
}

/* True when the NUL-terminated string at strtab + name_off, inside the
 * string table's strsz bytes, equals name. */
static bool lx_vdso_name_is(const uint8_t *str, uint64_t strsz,
                            uint64_t name_off, const char *name)
{
    uint64_t i = 0;
    /* Bounded by the string table: a name without its NUL never matches. */
    for (; name_off + i < strsz; i++) {
        if (str[name_off + i] != (uint8_t)name[i]) {
            return false;
        }
        if (name[i] == '\0') {
            return true;
        }
    }
    return false;
}

bool lx_vdso_find(const uint8_t *image, size_t len, const char *name,
                  size_t *offset)
{
    uint64_t phoff = 0;
    uint32_t phnum = 0;
    struct lx_vdso_dyn d = {0, 0, 0, 0, 0};
    uint64_t sym = 0;
    uint64_t str = 0;
    if (image == NULL || name == NULL ||
        !lx_vdso_header(image, len, &phoff, &phnum) ||
        !lx_vdso_dynamic(image, len, phoff, phnum, &d) ||
        !lx_vdso_addr(image, len, phoff, phnum, d.strtab, d.strsz, false,
                      &str)) {
        return false;
    }
    uint64_t count = lx_vdso_symcount(image, len, phoff, phnum, &d);
    if (count == 0U || count > (uint64_t)len / LX_ELF_SYM_BYTES ||
        !lx_vdso_addr(image, len, phoff, phnum, d.symtab,
                      count * LX_ELF_SYM_BYTES, false, &sym)) {
        return false;
    }
    /* Symbol 0 is the undefined null symbol; count <= len / 24 bounds the
     * loop by the image. */
    for (uint64_t i = 1; i < count; i++) {
        const uint8_t *s = image + sym + i * LX_ELF_SYM_BYTES;
        uint8_t type = (uint8_t)(s[4] & 0x0FU);
        uint8_t bind = (uint8_t)(s[4] >> 4);
        uint64_t at = 0;
        if (type != LX_ELF_STT_FUNC || pbx_le_get16(s + 6) == 0U ||
            (bind != LX_ELF_STB_GLOBAL && bind != LX_ELF_STB_WEAK) ||
            !lx_vdso_name_is(image + str, d.strsz, pbx_le_get32(s), name)) {
            continue;
        }
        /* The code must start inside an executable segment of the image. */
        if (!lx_vdso_addr(image, len, phoff, phnum, pbx_le_get64(s + 8), 1,
                          true, &at)) {
            return false;
        }
        *offset = (size_t)at;
        return true;
    }
    return false;
}

size_t lx_vdso_image_len(const uint8_t *image)
{
    uint64_t phoff = 0;
    uint32_t phnum = 0;
    uint64_t end = 0;
    if (image == NULL ||
        !lx_vdso_header(image, LX_VDSO_HEAD_BYTES, &phoff, &phnum)) {
        return 0;
    }
    for (uint32_t i = 0; i < phnum; i++) {
        const uint8_t *ph = image + phoff + (uint64_t)i * LX_ELF_PHDR_BYTES;
        uint64_t p_off = pbx_le_get64(ph + 8);
        uint64_t p_filesz = pbx_le_get64(ph + 32);
        if (pbx_le_get32(ph) != LX_ELF_PT_LOAD) {
            continue;
        }
        if (p_off > LX_VDSO_IMAGE_MAX || p_filesz > LX_VDSO_IMAGE_MAX - p_off) {
            return 0;
        }
        end = p_off + p_filesz > end ? p_off + p_filesz : end;
    }
    return end < LX_ELF_EHDR_BYTES ? 0U : (size_t)end;
}
