/* match.c - the remote-id map (see match.h). */
#include "msg/match.h"
#include <stdlib.h>
#include "base/error.h"

#define MATCH_FIRST 256

void kr__match_init(struct kr__match *m)
{
    m->s = NULL;
    m->mask = 0;
    m->n = m->waiting = 0;
}

void kr__match_destroy(struct kr__match *m)
{
    free(m->s);
    kr__match_init(m);
}

static size_t home(const struct kr__match *m, uint64_t rid)
{
    return (size_t)((rid * 0x9E3779B97F4A7C15ull) >> 20) & m->mask;
}

/* The slot holding rid, or the empty slot where it would go. */
static size_t find(const struct kr__match *m, uint64_t rid)
{
    size_t i = home(m, rid);
    while (m->s[i].rid && m->s[i].rid != rid) i = (i + 1) & m->mask;
    return i;
}

/* Keep the load at most one half: double and put every entry back. */
static void grow(struct kr__match *m)
{
    size_t cap = m->mask ? 2 * (m->mask + 1) : MATCH_FIRST;
    struct kr__match_slot *old = m->s;
    size_t oldcap = m->mask ? m->mask + 1 : 0;
    m->s = calloc(cap, sizeof *m->s);
    if (!m->s) kr__fatal_oom("remote event map", cap * sizeof *m->s);
    m->mask = cap - 1;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].rid) m->s[find(m, old[i].rid)] = old[i];
    free(old);
}

/* Remove slot i, shifting back the entries of its cluster that would not be found past the
 * hole (Knuth's deletion for linear probing). */
static void remove_at(struct kr__match *m, size_t i)
{
    size_t j = i;
    for (;;) {
        m->s[i].rid = 0;
        for (;;) {
            j = (j + 1) & m->mask;
            if (!m->s[j].rid) return;
            size_t h = home(m, m->s[j].rid);
            /* j's entry may stay if its home lies cyclically in (i, j] */
            if (i <= j ? (i < h && h <= j) : (i < h || h <= j)) continue;
            break;
        }
        m->s[i] = m->s[j];
        i = j;
    }
}

int kr__match_event(struct kr__match *m, uint64_t rid, struct kr__ev *e)
{
    if (2 * (m->n + 1) > m->mask + 1) grow(m);
    size_t i = find(m, rid);
    if (m->s[i].rid) {
        if (m->s[i].e) return KR_MATCH_DUPLICATE;
        remove_at(m, i); /* its antimessage was waiting */
        m->n--;
        m->waiting--;
        return KR_MATCH_ANNIHILATED;
    }
    m->s[i] = (struct kr__match_slot){ rid, e, e->k.ts };
    m->n++;
    return KR_MATCH_KEPT;
}

struct kr__ev *kr__match_anti(struct kr__match *m, uint64_t rid, kr_time ts)
{
    if (2 * (m->n + 1) > m->mask + 1) grow(m);
    size_t i = find(m, rid);
    if (m->s[i].rid && m->s[i].e) {
        struct kr__ev *e = m->s[i].e;
        remove_at(m, i);
        m->n--;
        return e;
    }
    if (!m->s[i].rid) { /* (a second antimessage for one id is the sender's bug: kept once) */
        m->s[i] = (struct kr__match_slot){ rid, NULL, ts };
        m->n++;
        m->waiting++;
    }
    return NULL;
}

size_t kr__match_fossil(struct kr__match *m, kr_time t)
{
    size_t dropped = 0;
    for (size_t i = 0; m->n && i <= m->mask;) {
        if (m->s[i].rid && m->s[i].e && m->s[i].ts < t) {
            remove_at(m, i); /* (an entry may have shifted into i: look at i again) */
            m->n--;
            dropped++;
        } else {
            i++;
        }
    }
    return dropped;
}
