/*
 * eva/native/main.c: runs eva/eva_live.c's valid event sequence natively
 * (eva/native/__fc_builtin.h) and checks that it reached every milestone:
 * exit 0 when it did, 1 (with the bits missing) when a change to the core
 * or the driver stopped the sequence short of a live state, which would
 * leave EVA analysing less than docs/SECURITY.md, section 7, says.
 */
#include <stdint.h>
#include <stdio.h>

/** Milestone bits eva_live.c sets (eva_mark). */
extern volatile uint32_t eva_reached;
/** The driver's entry point. */
void eva_main(void);

/** Every milestone: bits 0 to 10 (eva_live.c, eva_seq_*). */
#define EVA_REACHED_ALL 0x7FFU

int main(void)
{
    eva_main();
    if (eva_reached != EVA_REACHED_ALL) {
        printf("eva-native: milestones missing: 0x%x\n",
               (unsigned)(EVA_REACHED_ALL & ~eva_reached));
        return 1;
    }
    printf("eva-native: every milestone reached (0x%x)\n",
           (unsigned)eva_reached);
    return 0;
}
