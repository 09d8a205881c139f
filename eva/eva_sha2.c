/*
 * EVA driver for sha2/: a message of every length up to EVA_MAX hashed in
 * one shot, and a message of two parts, each of every length up to EVA_MAX,
 * hashed streaming (docs/SECURITY.md, "Abstract interpretation"). The two
 * parts come from two buffers with lengths of their own: a split of one
 * buffer at `cut` of `n` hands the second update `n - cut` bytes at
 * `eva_buf + cut`, a sum intervals lose, and EVA then reports reads past
 * eva_buf that no split makes. Two parts of any lengths cover every split
 * of every message up to EVA_MAX bytes, and more. Before hashing, the
 * path selection runs as powerboxd's start does (select, then any path
 * asked for by number, then the current one), so the portable path is
 * analysed behind the same selection code (the SHA-NI path is not built
 * under __FRAMAC__).
 */
#include "base/pbx_base.h"
#include "sha2/pbx_sha2.h"
#include <__fc_builtin.h>

/* The largest buffer the driver hands over: covers every SHA-256 block
 * boundary (0..64, 65..128 and the partial tails in between). */
#define EVA_MAX 130u

static uint8_t eva_buf[EVA_MAX];
static uint8_t eva_tail[EVA_MAX];

/* Fills eva_buf with unknown bytes and returns a length in [0, EVA_MAX]. */
static size_t eva_any_len(void)
{
    Frama_C_make_unknown((char *)eva_buf, EVA_MAX);
    return Frama_C_size_t_interval(0, EVA_MAX);
}

static void eva_sha2(void)
{
    pbx_sha2_ctx ctx;
    uint8_t d1[PBX_SHA2_DIGEST_BYTES];
    uint8_t d2[PBX_SHA2_DIGEST_BYTES];
    size_t n = eva_any_len();
    size_t tail = Frama_C_size_t_interval(0, EVA_MAX);

    Frama_C_make_unknown((char *)eva_tail, EVA_MAX);
    pbx_sha2_init(&ctx);
    (void)pbx_sha2_update(&ctx, eva_buf, n);
    (void)pbx_sha2_update(&ctx, eva_tail, tail);
    pbx_sha2_final(&ctx, d1);
    (void)pbx_sha2_digest(eva_buf, n, d2);
    (void)pbx_sha2_digest_equal(d1, d2);
}

/* The entry point EVA starts from (-main eva_main). */
void eva_main(void);
void eva_main(void)
{
    (void)pbx_sha2_select();
    (void)pbx_sha2_path_set((pbx_sha2_path)Frama_C_interval(0, 2));
    (void)pbx_sha2_path_current();
    eva_sha2();
}
