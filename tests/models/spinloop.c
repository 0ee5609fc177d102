/* spinloop.c - a model whose event loops for ever on a state that only a wrong speculative
 * path can produce (case 0), or on the committed path (case 1).
 *
 * Case 0, 4 LPs on 2 threads (LPs 0-1 on the first, 2-3 on the second): LP 1's event at
 * time 10 spins until its gate is open. The gate is opened by an event at time 5 from LP 2,
 * which first works for `delay_ms` of wall time. Sequentially the gate is open by time 10;
 * optimistically the first thread runs time 10 at once and spins. Only preemption breaks
 * the loop: the straggler at time 5 arrives, the spinning event is abandoned, rolled back
 * and run again after it. Plain Time Warp (--preempt off) hangs here.
 * Case 1: LP 0's event at time 1 spins for ever: --event-timeout must report it.
 * Case 2: the same, but the looping event is the 200th of a type that was quick until then
 * (the conservative engine by then runs that type on its scheduler thread, not a worker). */
#include <time.h>
#include "kairos.h"

struct spin_state { int gate; uint64_t seen; };

static const struct kr_param spin_params[] = {
    { "case", KR_PARAM_INT, "0", "0: speculative endless loop, 1: committed endless loop, "
      "2: committed endless loop after 199 quick events of its type", 0, 0 },
    { "delay_ms", KR_PARAM_DOUBLE, "30", "wall time LP 2 works before opening the gate", 0, 0 },
    { 0 },
};

static void work_ms(double ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) * 1e-6 < ms);
}

static void spin_init(kr_lp me)
{
    struct spin_state *s = kr_calloc(1, sizeof *s);
    kr_set_state(s);
    int64_t c = kr_param_int("case", 0);
    if (c == 0 && me == 1) kr_schedule(1, 10.0, 1, NULL, 0);
    if (c == 0 && me == 2) kr_schedule(2, 1.0, 0, NULL, 0);
    if (c == 1 && me == 0) kr_schedule(0, 1.0, 3, NULL, 0);
    if (c == 2 && me == 0) kr_schedule(0, 1.0, 4, NULL, 0);
}

static void spin_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                       void *state)
{
    (void)payload;
    (void)size;
    struct spin_state *s = state;
    volatile int *gate = &s->gate;
    s->seen++;
    switch (type) {
    case 0: /* LP 2: slow work, then open LP 1's gate */
        work_ms(kr_param_double("delay_ms", 30));
        kr_schedule(1, 5.0, 2, NULL, 0);
        break;
    case 1: /* LP 1 at time 10: needs the gate open */
        while (!*gate) {
        }
        kr_printf("LP %llu passed the gate at time %g\n", (unsigned long long)me, now);
        break;
    case 2:
        s->gate = 1;
        break;
    case 4: /* quick, then at time 200 an endless loop */
        if (s->seen < 200) {
            kr_schedule(me, now + 1, 4, NULL, 0);
            break;
        }
        while (!*gate) {
        }
        break;
    default: /* committed endless loop */
        while (!*gate) {
        }
    }
}

static const struct kr_model spin_model = {
    .name = "spinloop",
    .params = spin_params,
    .lookahead = 1.0, /* (its one send between LPs is 4 ahead; lets --sync conservative run it) */
    .init = spin_init,
    .event = spin_event,
};
KR_MODEL_EXPORT(spinloop, spin_model)
