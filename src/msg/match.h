/* match.h - remote ids matched with events in either order of arrival (docs/cluster.md).
 *
 * An event that came from another rank is named by the remote id its sender gave it, and
 * its antimessage carries only that id. The receiving thread keeps its remote events here
 * until they commit; an antimessage finds its event by id, and one that arrives before its
 * event (the two left the sender through different buffers) waits here until the event
 * comes, and the two annihilate. One map per receiving thread: no locks. Open addressing
 * with linear probing and deletion by backward shift, so no tombstones pile up although
 * entries come and go at the rate of remote events.
 */
#ifndef KR_MSG_MATCH_H
#define KR_MSG_MATCH_H

#include <stddef.h>
#include <stdint.h>
#include "msg/event.h"

struct kr__match_slot {
    uint64_t rid;             /* 0: empty (remote ids are never 0) */
    struct kr__ev *e;         /* NULL: an antimessage waiting for its event */
    kr_time ts;               /* the event's time (fossil collection, without touching e) */
};

struct kr__match {
    struct kr__match_slot *s;
    size_t mask;              /* capacity - 1 (a power of two); 0 before the first entry */
    size_t n;                 /* entries, events and waiting antimessages */
    size_t waiting;           /* of which waiting antimessages */
};

enum { KR_MATCH_KEPT, KR_MATCH_ANNIHILATED, KR_MATCH_DUPLICATE };

void kr__match_init(struct kr__match *m);
void kr__match_destroy(struct kr__match *m);
/* Event e (remote id rid) arrived: KR_MATCH_KEPT (kept for its antimessage), or
 * KR_MATCH_ANNIHILATED (its antimessage was waiting: both are gone, drop e), or
 * KR_MATCH_DUPLICATE (an event with that id is here already: the sender broke its ids). */
int kr__match_event(struct kr__match *m, uint64_t rid, struct kr__ev *e);
/* The antimessage of rid (its event at time ts) arrived: the event, removed from the map,
 * to cancel; or NULL, and the antimessage waits for its event. */
struct kr__ev *kr__match_anti(struct kr__match *m, uint64_t rid, kr_time ts);
/* Forget every event before time t (committed: no antimessage can come for it any more);
 * returns how many. A waiting antimessage is never that old: its event is in flight and
 * holds GVT back. */
size_t kr__match_fossil(struct kr__match *m, kr_time t);

#endif
