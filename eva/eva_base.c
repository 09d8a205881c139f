/*
 * EVA driver for base/: every public function over abstract inputs
 * (buffers of every length up to EVA_MAX, every error code, every size)
 * (docs/SECURITY.md, "Abstract interpretation").
 */
#include "base/pbx_base.h"
#include <__fc_builtin.h>

/* The largest buffer the driver hands over. */
#define EVA_MAX 130u

static uint8_t eva_buf[EVA_MAX];
static uint8_t eva_dst[EVA_MAX];

/* Fills eva_buf with unknown bytes and returns a length in [0, EVA_MAX]. */
static size_t eva_any_len(void)
{
    Frama_C_make_unknown((char *)eva_buf, EVA_MAX);
    return Frama_C_size_t_interval(0, EVA_MAX);
}

static void eva_base(void)
{
    size_t n = eva_any_len();
    size_t out = 0;
    pbx_err e = (pbx_err)Frama_C_unsigned_int_interval(0, 0xffffu);

    pbx_mem_copy(eva_dst, eva_buf, n);
    pbx_mem_set(eva_dst, (uint8_t)Frama_C_interval(0, 255), n);
    (void)pbx_mem_equal(eva_dst, eva_buf, n);
    (void)pbx_err_text(e);
    (void)pbx_err_name(e);
    (void)pbx_add_overflows_size(Frama_C_size_t_interval(0, SIZE_MAX),
                                 Frama_C_size_t_interval(0, SIZE_MAX), &out);
    (void)pbx_mul_overflows_size(Frama_C_size_t_interval(0, SIZE_MAX),
                                 Frama_C_size_t_interval(0, SIZE_MAX), &out);
    if (n >= 8u) {
        (void)pbx_le_get16(eva_buf);
        (void)pbx_le_get32(eva_buf);
        (void)pbx_le_get64(eva_buf);
        pbx_le_put16(eva_dst, (uint16_t)Frama_C_interval(0, 0xffff));
        pbx_le_put32(eva_dst, Frama_C_unsigned_int_interval(0, 0xffffffffu));
        pbx_le_put64(eva_dst,
                     (uint64_t)Frama_C_unsigned_int_interval(0, 0xffffffffu));
    }
}

/* The entry point EVA starts from (-main eva_main). */
void eva_main(void);
void eva_main(void)
{
    eva_base();
}
