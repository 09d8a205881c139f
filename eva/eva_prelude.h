/*
 * eva_prelude.h: included before every file EVA reads (make eva).
 *
 * PBX_ASSERT traps with __builtin_trap, which Frama-C does not know: as
 * an undeclared function it would return, and EVA would carry on past
 * every failed assertion. Here it becomes a function whose precondition
 * is false and which never returns, so a trap the driver's inputs can
 * reach is reported (an unproven precondition, counted with the alarms)
 * and the path stops there, as the real trap stops the program.
 */
#ifndef EVA_PRELUDE_H
#define EVA_PRELUDE_H

/*@ requires eva_trap_unreachable: \false;
    assigns \nothing;
    ensures \false; */
void eva_trap(void);

#define __builtin_trap eva_trap

/* Frama-C 25 does not parse C11's _Alignof (the core's pool layouts use
 * alignof); its GNU spelling gives the same value. */
#define _Alignof __alignof__

#endif /* EVA_PRELUDE_H */
