/* mode.c - the table of state-saving modes (mode.h), and the full mode: no tracking, every
 * checkpoint a copy of every live chunk. */
#include "state/mode.h"
#include <string.h>

static const struct kr__state_ops full = { .name = "full", .id = KR_STATE_FULL };

/* Indexed by enum kr__state_mode; then the modes added at run time (kr__state_add). */
const struct kr__state_ops *kr__state_modes[KR_STATE_MAX] = {
    [KR_STATE_FULL] = &full,
    [KR_STATE_CHUNK] = &kr__state_chunk,
    [KR_STATE_PAGE] = &kr__state_page,
    [KR_STATE_BUDDY] = &kr__state_buddy,
    [KR_STATE_SCAN] = &kr__state_scan,
    [KR_STATE_REVERSE] = &kr__state_reverse,
};
static size_t nmodes = KR_STATE_REVERSE + 1;

int kr__state_add(const struct kr__state_ops *m)
{
    if (nmodes == KR_STATE_MAX || m->id != (int)nmodes || kr__state_ops_find(m->name)) return -1;
    kr__state_modes[nmodes++] = m;
    return m->id;
}

const struct kr__state_ops *kr__state_default(void) { return &full; }

const struct kr__state_ops *kr__state_ops_find(const char *name)
{
    for (size_t i = 0; i < nmodes; i++)
        if (!strcmp(kr__state_modes[i]->name, name)) return kr__state_modes[i];
    return NULL;
}

const char *kr__state_mode_names(void)
{
    static char buf[96];
    buf[0] = 0; /* (rebuilt each time: a mode added since is named too) */
    for (size_t i = 0; i < nmodes; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s",
                 i == 0 ? "" : i + 1 == nmodes ? " or " : ", ", kr__state_modes[i]->name);
    return buf;
}
