/*
 * test_core_fixture.h: the set-up that tests sending raw public frames
 * share (hosted; tests only): a harness, the default BEGIN for a
 * selector, that BEGIN encoded into a frame buffer, and the reply record
 * and core status each send fills in.
 */
#ifndef TEST_CORE_FIXTURE_H
#define TEST_CORE_FIXTURE_H

#include "test_core_harness.h"

/**
 * tfx_public is one test's public-frame state; caller-allocated (it holds
 * a full frame buffer, so a test keeps it on its stack), filled by
 * tfx_setup and ended by tfx_teardown.
 */
typedef struct tfx_public {
    /** h is the harness, owned by the fixture until tfx_teardown. */
    th_h *h;
    /** b is the default BEGIN (th_default_begin) for the selector. */
    pbx_ipc_begin b;
    /** buf is the frame a test sends: b encoded, unless it changed it. */
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    /** n is the length of b's encoding in buf. */
    size_t n;
    /** out is the reply record every send fills (zeroed by tfx_setup). */
    pbx_core_out out;
    /** core is the core's own status of the last send. */
    pbx_err core;
} tfx_public;

/**
 * tfx_setup fills f: a harness of records records per pool, b the default
 * BEGIN for sel[0..sel_len) (sel is borrowed and must outlive f), buf
 * and n its encoding, out zeroed and core PBX_OK. The test fails at once
 * when the BEGIN does not encode.
 */
void tfx_setup(tfx_public *f, uint32_t records, const uint8_t *sel,
               uint32_t sel_len);

/** tfx_encode_begin encodes f->b into f->buf again and sets f->n (after
 * a test changed b or overwrote buf); the test fails at once when it does
 * not encode. */
void tfx_encode_begin(tfx_public *f);

/**
 * tfx_send sends buf[0..len) from badge with slots[0..count) (slots may
 * be NULL when count is 0) through th_public, filling f->out and f->core;
 * returns what th_public returns (0, the error reply's status, or
 * UINT32_MAX when there is no reply).
 */
uint32_t tfx_send(tfx_public *f, uint32_t badge, size_t len,
                  const uint32_t *slots, size_t count);

/** tfx_teardown releases f's harness; f is not to be used after it. */
void tfx_teardown(tfx_public *f);

#endif /* TEST_CORE_FIXTURE_H */
