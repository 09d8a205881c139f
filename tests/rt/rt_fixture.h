/*
 * rt_fixture.h: the setup the hosted runtime tests share. It derives a
 * small arena layout (four records per pool) and brings a runtime's core
 * up over a freshly reset fake kernel (rt_fake_port.h), as rt_startup
 * does after PBX1, so each test file states only what it adds.
 */
#ifndef RT_FIXTURE_H
#define RT_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "powerboxd/runtime/rt_int.h"

/**
 * rt_fixture_setup resets the fake kernel (fk_reset), marks each of the
 * base_count slots of base as holding an endpoint there, zeroes *rs and
 * readies it as rt_startup does after PBX1: the small layout in rs->geo
 * and rs->layout, the port's transient range with no receipt staged, the
 * slot layout and an initialised core using rt_ops and rt_identity.
 *
 * Ownership and lifetime: rs is the caller's (it embeds the core, so it
 * is usually static) and must outlive every use of the core. *arena is
 * the caller's arena cache: when NULL, the arena is allocated here
 * (4096-byte aligned, rs->layout.arena_bytes long) and kept there for the
 * rest of the process, never freed; later calls reuse it. base may be
 * NULL only when base_count is 0; every slot in it must be below FK_SLOTS.
 * Any failure ends the test through PBX_REQUIRE.
 */
void rt_fixture_setup(rt_state *rs, uint8_t **arena, const int32_t *base,
                      size_t base_count);

#endif /* RT_FIXTURE_H */
