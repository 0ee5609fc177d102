/* reverse.c - the reverse mode (--state reverse): reverse computation, as ROSS does it. No
 * checkpoint of an LP's memory is ever taken; an event that may be rolled back keeps a
 * small record instead - the LP's rolled-back words and the model's reverse area - and is
 * undone by the model's reverse handler (struct kr_model.reverse), newest first
 * (optimistic/reverse.c). It pays where states are large and events change little of
 * them. The run checks that the model has a reverse handler (run/run.c). */
#include "state/mode.h"

static void summary(FILE *f, uint64_t faults, uint64_t mprotects)
{
    (void)faults;
    (void)mprotects;
    fprintf(f, "  reverse:          rolled-back events undone by the model's reverse handler; "
            "no checkpoints taken\n");
}

const struct kr__state_ops kr__state_reverse = {
    .name = "reverse", .id = KR_STATE_REVERSE, .reverse = true, .summary = summary,
};
