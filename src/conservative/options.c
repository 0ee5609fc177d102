/* options.c - the conservative engine's rows of the 'kairos run' option table
 * (core/optdef.h): its options, their defaults, checks and help, written into its record
 * (options.h). */
#include "conservative/options.h"
#include <stddef.h>

#define OFF(field) offsetof(struct kr__cons_options, field)

static const char *const on_off[] = { "on", "off", NULL };
static const int on_off_values[] = { 1, 0 };
static const char *const handoff_names[] = { "push", "pull", NULL };
static const char *const barrier_names[] = { "free", "events", NULL };
static const char *const offload_names[] = { "auto", "always", NULL };
static const char *const scheme_names[] = { "auto", "horizon", "windows", NULL };

const struct kr__opt cons_option_rows[] = {
    { "--conservative", "SCHEME", KR_OPT_CHOICE, OFF(scheme), "auto", .names = scheme_names,
      .json = "conservative", .schemes = true,
      .help = "how the conservative engine runs events in parallel:\n"
              "  windows  each worker runs its own LPs' events below what\n"
              "           the others may still send (their next events\n"
              "           plus the lookahead); no scheduler thread, and\n"
              "           across MPI ranks too\n"
              "  horizon  one scheduler hands events out to the workers,\n"
              "           which run those that overlap in virtual time\n"
              "           (paper 003; for events with long, varied spans\n"
              "           and no lookahead); --threads N adds the scheduler\n"
              "  auto     windows when the model's lookahead is known before\n"
              "           the run (struct kr_model: lookahead, run_lookahead)\n"
              "           and it has no done() or queries, else horizon\n"
              "           (default)" },
    { "--handoff", "MODE", KR_OPT_SWITCH, OFF(handoff_pull), "push", .names = handoff_names,
      .json = "handoff",
      .help = "push (the scheduler writes each job into a worker's\n"
              "two-slot buffer, which the worker spins on; default) or pull\n"
              "(a locked work queue; the baseline of paper 003)" },
    { "--barriers", "MODE", KR_OPT_SWITCH, OFF(barrier_events), "free", .names = barrier_names,
      .json = "barriers",
      .help = "free (the scheduler tracks the earliest completion, default)\n"
              "or events (a barrier event queued at each event's\n"
              "completion; the baseline)" },
    { "--scheduler-works", "on|off", KR_OPT_SWITCH, OFF(scheduler_works), "on", .names = on_off,
      .values = on_off_values, .json_bool = true, .json = "scheduler_works",
      .help = "with push, the scheduler runs an event itself\n"
              "when no worker has room for it (default on)" },
    { "--offload", "MODE", KR_OPT_SWITCH, OFF(offload_always), "auto", .names = offload_names,
      .json = "offload",
      .help = "auto (default: event types that take under --offload-us on\n"
              "average run on the scheduler, where they cost less than a\n"
              "hand-out; needs --scheduler-works on) or always" },
    { "--offload-us", "US", KR_OPT_REAL, OFF(offload_us), "2", 0,
      .json = "offload_us", .what = "microseconds (0: hand out every event)",
      .help = "the bound of --offload auto (default 2)" },
    { 0 },
};
