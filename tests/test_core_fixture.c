/*
 * test_core_fixture.c: the shared public-frame set-up (see
 * test_core_fixture.h).
 */
#include "test_core_fixture.h"

#include <string.h>

#include "runner/pbx_test.h"

void tfx_setup(tfx_public *f, uint32_t records, const uint8_t *sel,
               uint32_t sel_len)
{
    memset(f, 0, sizeof(*f));
    f->h = th_new(records);
    f->core = PBX_OK;
    th_default_begin(&f->b, sel, sel_len);
    tfx_encode_begin(f);
}

void tfx_encode_begin(tfx_public *f)
{
    f->n = 0;
    PBX_REQUIRE(pbx_ipc_begin_encode(&f->b, f->buf, sizeof(f->buf), &f->n) ==
                PBX_OK);
}

uint32_t tfx_send(tfx_public *f, uint32_t badge, size_t len,
                  const uint32_t *slots, size_t count)
{
    return th_public(f->h, badge, f->buf, len, slots, count, &f->core, &f->out);
}

void tfx_teardown(tfx_public *f)
{
    th_free(f->h);
    f->h = NULL;
}
