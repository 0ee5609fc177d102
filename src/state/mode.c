/* mode.c - the table of state-saving modes (mode.h). */
#include "state/mode.h"
#include <string.h>
#include "state/buddy.h"

static void page_summary(FILE *f, uint64_t faults, uint64_t mprotects)
{
    fprintf(f, "  page tracking:    %llu write faults, %llu mprotect calls\n",
            (unsigned long long)faults, (unsigned long long)mprotects);
}

static void buddy_summary(FILE *f, uint64_t faults, uint64_t mprotects)
{
    fprintf(f, "  page tracking:    %llu write faults, %llu mprotect calls, buddy partitions "
            "re-planned\n", (unsigned long long)faults, (unsigned long long)mprotects);
}

static void scan_summary(FILE *f, uint64_t faults, uint64_t mprotects)
{
    (void)faults;
    fprintf(f, "  page tracking:    by the kernel, %llu scans\n", (unsigned long long)mprotects);
}

/* The costs the buddy planner measured at start-up. */
static void buddy_json(FILE *f)
{
    const struct kr__buddy_costs *c = kr__buddy_costs();
    fprintf(f, ", \"buddy_costs\": {\"fault_ns\": %.1f, \"mprotect_ns\": [", c->fault_ns);
    for (int k = 0; k < KR_BUDDY_CAL_ORDERS; k++)
        fprintf(f, "%s%.1f", k ? ", " : "", c->mprotect_ns[k]);
    fputs("], \"copy_ns\": [", f);
    for (int k = 0; k < KR_BUDDY_CAL_ORDERS; k++)
        fprintf(f, "%s%.1f", k ? ", " : "", c->copy_ns[k]);
    fputs("]}", f);
}

static void buddy_lp_ready(struct kr__seg *seg)
{
    if (!seg->bud) kr__buddy_init(seg);
}

/* Indexed by enum kr__state_mode. */
static const struct kr__state_ops modes[] = {
    { .name = "full", .id = KR_STATE_FULL },
    { .name = "chunk", .id = KR_STATE_CHUNK, .region = true, .incremental = true, .marks = true },
    { .name = "page", .id = KR_STATE_PAGE, .region = true, .incremental = true,
      .by_pages = true, .open_pages = true, .summary = page_summary },
    { .name = "buddy", .id = KR_STATE_BUDDY, .region = true, .incremental = true,
      .by_pages = true, .open_pages = true, .region_ready = kr__buddy_calibrate,
      .lp_ready = buddy_lp_ready, .summary = buddy_summary, .json = buddy_json },
    { .name = "scan", .id = KR_STATE_SCAN, .region = true, .incremental = true,
      .by_pages = true, .summary = scan_summary },
};
#define NMODES (sizeof modes / sizeof modes[0])

const struct kr__state_ops *kr__state_ops(int id)
{
    return &modes[id >= 0 && (size_t)id < NMODES ? id : 0];
}

const struct kr__state_ops *kr__state_ops_find(const char *name)
{
    for (size_t i = 0; i < NMODES; i++)
        if (!strcmp(modes[i].name, name)) return &modes[i];
    return NULL;
}

const char *kr__state_mode_names(void)
{
    static char buf[96];
    if (buf[0]) return buf;
    for (size_t i = 0; i < NMODES; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s",
                 i == 0 ? "" : i + 1 == NMODES ? " or " : ", ", modes[i].name);
    return buf;
}
