/* ROOT-Sim.h - ROOT-Sim 3's model API on Kairos (docs/from-ross-rootsim.md): a model written
 * for ROOT-Sim 3 (the HPDCS group's ROme OpTimistic Simulator) compiles against this header
 * unchanged, links with the kairos-rootsim library and runs on every Kairos engine: its
 * main() fills a struct simulation_configuration and calls RootsimInit and RootsimRun, and
 * Kairos runs inside RootsimRun.
 *
 * Written here from ROOT-Sim 3.0's documented interface (types, names and meanings), not
 * from its code. The configuration gives the run's defaults: `lps` is --lps,
 * `termination_time` --end (0: none, the run ends by `committed`, Kairos's done()),
 * `n_threads` --threads (0: every core), `serial` the sequential engine, `ckpt_interval`
 * --ckpt-interval (0: automatic; `gvt_period` is ROOT-Sim's tuning, not read); the program's own
 * command line may then give any kairos run option (./model --threads 2 --sync conservative
 * --stats run.json), since ROOT-Sim 3 models take none. `committed` is asked after each
 * event on the LP's state, as Kairos asks done(): it must stay true once it is (ROOT-Sim's
 * models count towards a target). What a callback prints with printf is committed output.
 * RootsimRun returns the run's exit status (0, or Kairos's: 1 a model error, 2 a usage
 * error, ...). */
#pragma once

#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef double simtime_t;
#define SIMTIME_MAX DBL_MAX
typedef uint64_t lp_id_t;

typedef void (*ProcessEvent_t)(lp_id_t me, simtime_t now, unsigned event_type,
                               const void *event_content, unsigned event_size, void *st);
typedef bool (*CanEnd_t)(lp_id_t me, const void *snapshot);

/* The dispatcher's own event types: LP_INIT at time 0 before any event (no state yet: the
 * model allocates it with rs_malloc and gives it with SetState), LP_FINI after the last. */
enum rootsim_event { LP_INIT = 65534, LP_FINI };

void ScheduleNewEvent(lp_id_t receiver, simtime_t timestamp, unsigned event_type,
                      const void *event_content, unsigned event_size);
void SetState(void *new_state);
void *rs_malloc(size_t req_size);
void *rs_calloc(size_t nmemb, size_t size);
void rs_free(void *ptr);
void *rs_realloc(void *ptr, size_t req_size);

enum log_level { LOG_TRACE, LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_FATAL, LOG_SILENT };

struct simulation_configuration {
    lp_id_t lps;
    unsigned n_threads;
    simtime_t termination_time;
    unsigned gvt_period;
    enum log_level log_level;
    FILE *logfile;          /* (Kairos's messages go to stderr) */
    const char *stats_file; /* (not written: --stats FILE.json on the command line) */
    unsigned ckpt_interval;
    bool core_binding;      /* (Kairos binds its threads to cores when there are enough) */
    bool serial;
    ProcessEvent_t dispatcher;
    CanEnd_t committed;
};

int RootsimInit(const struct simulation_configuration *conf);
int RootsimRun(void);
/* From another thread of the program: the run stops as on SIGTERM (what was committed is
 * printed; RootsimRun returns 143). */
void RootsimStop(void);

#ifdef __cplusplus
}
#endif
