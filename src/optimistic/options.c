/* options.c - the optimistic engine's rows of the 'kairos run' option table (core/optdef.h):
 * its options, their defaults, checks and help, written into its record (options.h). */
#include "optimistic/options.h"
#include <stddef.h>
#include "ult/ult.h"

#define OFF(field) offsetof(struct kr__tw_options, field)

static const char *const on_off[] = { "on", "off", NULL };
static const int on_off_values[] = { 1, 0 };
static const char *const balance_names[] = { "off", "auto", "storm", NULL };
static const char *const cancel_names[] = { "aggressive", "lazy", NULL };
static const char *const preempt_names[] = { "off", "return", "tick", "adaptive", NULL };

static void tw_tick_given(void *rec)
{
    ((struct kr__tw_options *)rec)->tick_from = "option";
}

static void tw_ckpt_given(void *rec)
{
    ((struct kr__tw_options *)rec)->ckpt_given = true;
}

/* ThreadSanitizer builds cannot run time-sharing (tw_validate). */
#if defined(KR_TSAN)
#define PREEMPT_DEFAULT "off"
#else
#define PREEMPT_DEFAULT "adaptive"
#endif

const struct kr__opt tw_option_rows[] = {
    { "--ckpt-interval", "K", KR_OPT_UINT, OFF(ckpt_interval), "16", 1, 1000000, .autoz = true,
      .json = "ckpt_interval", .after = tw_ckpt_given,
      .help = "checkpoint an LP every K events it processes, or 'auto':\n"
              "tuned at run time from checkpoint and coasting costs. Default\n"
              "16, or 1 while an event costs over 64 checkpoints (a rollback\n"
              "then re-runs nothing, for at most 1/64 more work)" },
    { "--ckpt-full-every", "F", KR_OPT_UINT, OFF(ckpt_full_every), "10", 1, 65535,
      .json = "ckpt_full_every",
      .help = "with chunk/page/buddy/scan, every F-th checkpoint is full\n"
              "and the others incremental (default 10)" },
    { "--gvt-period", "MS", KR_OPT_TIME, OFF(gvt_period_ms), "5", 0, 60000,
      .json = "gvt_period_ms", .what = "milliseconds",
      .help = "milliseconds between GVT rounds (default 5, at most 60000)" },
    { "--balance", "MODE", KR_OPT_CHOICE, OFF(balance), "auto", .names = balance_names,
      .names_shown = 3, .json = "balance",
      .help = "moving LPs between worker threads: off, storm (for testing:\n"
              "random LPs move at GVT rounds, and now and then all go to\n"
              "one worker), or auto\n"
              "(default: when another process runs on a worker's core, a\n"
              "run starts alone on a worker whose core is free and\n"
              "spreads to the others once their cores are found free,\n"
              "else it starts spread; a worker whose core another process\n"
              "keeps busy\n"
              "hands its LPs to the others until the core is free again,\n"
              "and is tried with a share in proportion to the CPU it gets;\n"
              "when rollbacks undo much of the work or speculation does\n"
              "not pay (--window), one worker fewer is tried and kept\n"
              "while it commits as much per second)" },
    { "--safe", "on|off", KR_OPT_SWITCH, OFF(safe_events), "on", .names = on_off,
      .values = on_off_values, .json_bool = true,
      .json = "safe",
      .help = "an event that no straggler can reach any more (below what\n"
              "every other thread may still send, from their next events\n"
              "plus the lookahead) runs without a checkpoint and commits at\n"
              "once (default on; off: plain Time Warp)" },
    { "--cancel", "MODE", KR_OPT_CHOICE, OFF(cancel), "aggressive", .names = cancel_names,
      .names_shown = 2, .json = "cancel",
      .help = "what a rollback does with the events the undone events sent:\n"
              "  aggressive  cancels them at once (default)\n"
              "  lazy        keeps them until the event runs again; one it\n"
              "              sends again alike (destination, time, type,\n"
              "              payload) stays, the others are cancelled\n"
              "              (events to other ranks: always at once)" },
    { "--window", "N|auto", KR_OPT_UINT, OFF(window), "auto", 1, 1u << 30, .autoz = true,
      .json_auto = true, .json = "window",
      .help = "speculative events a thread may hold uncommitted before it\n"
              "waits for GVT (default auto: up to 8192, cut to safe events\n"
              "only while its rollbacks - restores, undone and coasted\n"
              "events - take over 4x the time of what its speculation\n"
              "committed, two periods in a row)" },
    { "--preempt", "MODE", KR_OPT_CHOICE, OFF(preempt), PREEMPT_DEFAULT, .names = preempt_names,
      .names_shown = 4, .json = "preempt",
      .help = "time-sharing (event preemption):\n"
              "  off       plain Time Warp: an event runs to its end\n"
              "  return    events on their own stacks, preempted when a\n"
              "            model call returns and earlier work has arrived\n"
              "  tick      also preempted by extra ticks every --tick-us\n"
              "  adaptive  ticks only while events are long next to the\n"
              "            gaps between model calls; events under 5 us\n"
              "            on average are not preempted (default)" },
    { "--tick-us", "US", KR_OPT_TIME, OFF(tick_us), NULL, KR_TICK_US_MIN, 1e6,
      .json = "tick_us", .after = tw_tick_given, .local = true, /* (calibrated per machine) */
      .what = "microseconds (shorter ticks leave the worker no time between them)",
      .help = "extra-tick period (default: from 'kairos calibrate', else 1000)" },
    { "--alpha", "A", KR_OPT_REAL, OFF(alpha), "-0.5", -1, .json = "alpha",
      .what = "a number of at least -1 (-1: ticks always on)",
      .help = "adaptive rule: ticks while mean event time / (model calls per\n"
              "event + 1) >= (1 + A) x tick (default -0.5; -1: always)" },
    { 0 },
};

/* The extra-tick period when --tick-us is not given: 'kairos calibrate''s, else the
 * default (kr__calibrated_tick_us says which). */
void tw_options_init(void *rec)
{
    struct kr__tw_options *o = rec;
    o->tick_us = kr__calibrated_tick_us(&o->tick_from);
}
