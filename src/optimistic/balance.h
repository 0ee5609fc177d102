/* balance.h - load balancing between worker threads (migrate.c): LP migration, the
 * balancer's policies and their constants. Private to the optimistic engine. */
#ifndef KR_OPTIMISTIC_BALANCE_H
#define KR_OPTIMISTIC_BALANCE_H

#include "optimistic/tw.h"

/* Load balancing (migrate.c). */
#define TW_BALANCE_NS (40u * 1000 * 1000)   /* a balancing decision at most this often */
#define TW_PROBE_NS (10u * 1000 * 1000)     /* a retired worker's probe of its core (longer
                                             * than the scheduler's wake-up credit) */
#define TW_PROBE_EVERY_NS (250u * 1000 * 1000)
#define TW_SHARED_SHARE 0.6                 /* under this CPU share, a core is shared (one
                                             * busy process beside: ~0.5; an idle machine
                                             * shows 20 ms windows down to ~0.7)... */
#define TW_FREE_SHARE 0.9                   /* ...and over this, a core is free */
#define TW_FIRST_NS (5u * 1000 * 1000)      /* a worker's first window may end this soon,
                                             * if it says shared or free */
#define TW_WAIT_SHARED 0.25                 /* run-queue wait over this share of a window:
                                             * another process on the core, seen at once
                                             * (a busy loop beside: 0.4-0.6; an idle VM:
                                             * ~0, the hypervisor's steal is not in it) */
/* The thread-count trial: when rollbacks undo more than 1 - TW_TRIAL_EFF of what is run, or
 * a worker's speculation was cut (optimism.c), a worker is retired for a window of
 * TW_TRIAL_NS; it stays out unless the committed rate fell below TW_TRIAL_FEWER of what it
 * was (fewer workers that commit as much waste less CPU, and a step that gains nothing may
 * lead to one that does: PHOLD with 16 LPs on 4 threads gains nothing from 3 workers and
 * 40x from 1). A retired worker is tried back after a
 * backoff (doubling to TW_TRIAL_MAX_NS) and stays if the rate rose over TW_TRIAL_MORE. */
#define TW_TRIAL_NS (100u * 1000 * 1000)
/* (0.8 until safe-event clocks were published every turn: PHOLD with 16 LPs on 2 threads
 * then undid 18-19% of its events and ran at 3.8-5.6 M/s without a trial, where one worker
 * runs 6-7; 0.85 starts the trial there and in no run of the realistic models but pcs,
 * whose windows dip under 0.8 too) */
#define TW_TRIAL_EFF 0.85
#define TW_TRIAL_FEWER 0.97
#define TW_TRIAL_MORE 1.05
#define TW_TRIAL_BACKOFF_NS (1000ull * 1000 * 1000)
#define TW_TRIAL_MAX_NS (16000ull * 1000 * 1000)
enum { TW_TRIAL_NONE, TW_TRIAL_RUNNING, TW_TRIAL_KEPT, TW_TRIAL_BACK };
/* The share trial: a worker on a shared core is retired at once (cheap events: while it
 * waits for the core its LPs lag, and their messages roll the others back more than its
 * half a core brings - PHOLD-std 7.1 M/s retired, 2.8-3.0 with a third of the LPs). After
 * a window of TW_PART_NS with it out, it gets LPs in proportion to the CPU share it had
 * there (each other worker counting as a whole core: 0.5 -> a third of them on 2 threads)
 * for a window, and keeps them if that commits TW_TRIAL_MORE of the window before (5-us
 * events: 0.187 M/s retired, 0.250 with a third). The question is asked again (a window
 * as it is, one the other way) after 1 s, 2, 4 ... 16: events may get cheaper. A try that
 * commits under TW_PART_ABORT of the window before ends at the first GVT round after
 * TW_PART_EARLY_NS (a bad one stays low - PHOLD-std 0.29-0.37 from 8 ms on - and costs the
 * run most while it lasts: PHOLD-std beside a busy core lost 26 ms in a 40-ms try of a
 * 0.32-s run). A good one climbs slowly - life 0.74 of it at 20 ms, 0.96 at 40, 1.22 at
 * 80; 5-us PHOLD 0.6, 1.0, 1.2 - so it lasts TW_PART_NS, and a try that fails the early
 * check for a while costs only the share's gain: out, the worker left alone runs at the
 * sequential engine's speed (lone.c). */
#define TW_PART_NS (80u * 1000 * 1000)
/* The window "out" starts this long after the retirement: until the moved LPs' history has
 * committed the lone worker runs them speculatively, and a window counting that time
 * measured "out" low - life kept a share that then ran at 0.6 of the lone rate. */
#define TW_PART_SETTLE_NS (30u * 1000 * 1000)
#define TW_PART_EARLY_NS (20u * 1000 * 1000)
#define TW_PART_ABORT 0.5
/* ...and a share of a core under TW_PART_MIN is not tried (the question is asked again
 * after the backoff, with the share its worker's latest probe found): the most a share s
 * can add is s / (1 + s) of the rate, while a try costs about half its length whatever s
 * is. With five busy loops on the core (shares 0.10-0.24) every such try failed, and each
 * cost the run 26-29 ms (datastore, 5-us PHOLD, runs of ~1 s); beside one loop the shares
 * are 0.4-0.6 and the try goes on (5-us PHOLD gains from it). */
#define TW_PART_MIN 0.3
/* ...nor is one when the run will end sooner than TW_PART_WORTH_NS after the window before
 * it (at that window's pace of virtual time): a try costs 10-40 ms whatever it finds, and
 * its gain, a third of the rate at most, needs time to pay for it. Beside a busy core, a
 * try 90 ms into runs of 0.2-0.5 s cost them 5-9% (queueing 0.78x sequential with it, 0.87
 * without; datastore 0.91, 0.96: 15 interleaved runs each). */
#define TW_PART_WORTH_NS (500ull * 1000 * 1000)
/* The start on one worker (tw_balance_home): the first plan waits this long at most for
 * the other workers' first probes (beside a busy loop they end at 20-24 ms) and the home's
 * first window. */
#define TW_START_WAIT_NS (40u * 1000 * 1000)
#define TW_START_PROBE_NS (20u * 1000 * 1000) /* a probe that finds no free core, at most */
#define TW_WEIGHT_FULL 1000u                /* a worker's weight with a core of its own */
/* A try of a share that ends between TW_PART_UNSURE and TW_TRIAL_MORE of "out" goes on for
 * another TW_PART_NS (TW_PART_LONGER), judged alone: work run after the switch commits only
 * at a later GVT round, so the first window's start undercounts what a share brings:
 * life's tries read 0.40-1.47, and with every share kept it ran at 0.96-1.05 of the
 * sequential engine against 0.83-1.07 judged (session 42). A second window costs a
 * clearly worse share little: those read under 0.85 (queueing 0.81-0.82, airport 0.82)
 * or under TW_PART_ABORT. */
#define TW_PART_UNSURE 0.85
enum { TW_PART_NONE, TW_PART_BASE, TW_PART_TRY, TW_PART_WAIT, TW_PART_LONGER };

/* quiesce.c */
/* All n workers meet (spinning, then sleeping); `serve`, if not NULL, answers the queries
 * put to it meanwhile. */
void tw_barrier(struct tw_global *g, struct tw_thread *serve);
/* With every worker inside: publish and drain until no message is in flight. */
void tw_quiesce(struct tw_thread *th);
/* migrate.c */
void tw_migrate(struct tw_thread *th);
bool tw_balance_plan(struct tw_thread *th);
bool tw_balance_plan_at(struct tw_global *g, uint64_t now); /* (now: kr__clock_ns) */
void tw_balance_start(struct tw_thread *th);
void tw_balance_tick(struct tw_thread *th, uint64_t now); /* (a CPU-share window, if due) */
void tw_retired_wait(struct tw_thread *th);
/* The start on one worker: every LP to the home worker (set-up, before init), and the
 * others out (once the clocks started). */
void tw_balance_home(struct tw_global *g);
void tw_balance_home_out(struct tw_global *g);
/* At each GVT round this worker takes part in: its share over the last window. */
void tw_balance_sample(struct tw_thread *th);
/* The mapping by the workers' weights (contiguous blocks), as moves. */
void tw_map_by_weight(struct tw_global *g);
/* The wait before a trial's question is asked again, doubling from *b (0: the first). */
uint64_t tw_backoff_step(uint64_t *b);
/* share.c: the share trial's next step at a decision (g->bl.part not TW_PART_NONE); */
void tw_share_plan(struct tw_global *g, uint64_t now);
/* ...whether a try (or its second window) runs; */
bool tw_share_trying(const struct tw_global *g);
/* ...the weight a CPU share gives a worker in a try (never 0; -1, not measured: 1); */
unsigned tw_share_weight(double share);
/* ...k more workers with a share noted (bal.part) out of their shared cores; */
void tw_share_out(struct tw_global *g, unsigned k, uint64_t now);
/* ...worker w's core shared: out at once, the share it would get there noted. */
void tw_share_retire(struct tw_global *g, unsigned w, double share, uint64_t now);

#endif
