/* test_image.c - an LP's state image (state/image.h): a state of linked blocks of several
 * size classes, holes where blocks were freed, a dangling pointer, a pointer one past a
 * block, a function pointer and a string literal, saved and loaded into a fresh arena at
 * other addresses (full mode, and page mode in the LP region): the same state hash, the
 * pointers between blocks rebuilt, the next blocks allocated at the same ordinals, the
 * same bytes in use. A pointer into the C heap is refused, naming it; every truncated
 * image is refused; damaged bytes never crash the loader (ASan). In the LP region, a word
 * equal to an address in another LP's slice that no area ever reached is a number (saved,
 * no warning); one into that LP's blocks is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "core/core.h"
#include "state/addrmap.h"
#include "state/image.h"

struct node {
    struct node *next;
    uint64_t value;
    char pad[40];
};

struct root {
    struct node *head;
    double x;
    int (*fn)(int);
    const char *lit;
    char *end;          /* one past a block (no block follows it) */
    struct node *gone;  /* dangling: its block was freed, past the last live one */
    uint64_t foreign;   /* a pointer into the C heap, when the test wants one */
    char *big;
};

static int twice(int v) { return 2 * v; }

static void *alloc(struct kr__arena *a, size_t n)
{
    int err = 0;
    void *p = kr__arena_alloc(a, n, &err);
    CHECK(p != NULL);
    return p;
}

/* A state with holes: 12 nodes of class 64, every third freed; a big block (class 4 KiB)
 * whose end the root keeps; a freed last node left dangling. */
static struct root *build(struct kr__arena *a)
{
    struct root *r = alloc(a, sizeof *r);
    struct node *all[12];
    for (int i = 0; i < 12; i++) {
        all[i] = alloc(a, sizeof(struct node));
        all[i]->value = 1000u + (unsigned)i;
        snprintf(all[i]->pad, sizeof all[i]->pad, "node %d", i);
    }
    struct node **link = &r->head;
    for (int i = 0; i < 11; i++) {
        if (i % 3 == 1) {
            CHECK(kr__arena_free(a, all[i]) == KR_ARENA_OK);
            continue;
        }
        *link = all[i];
        link = &all[i]->next;
    }
    CHECK(kr__arena_free(a, all[11]) == KR_ARENA_OK);
    r->gone = all[11];
    r->x = 3.25;
    r->fn = twice;
    r->lit = "a string literal";
    r->big = alloc(a, 3000);
    for (int i = 0; i < 3000; i++) r->big[i] = (char)(i * 7);
    r->end = r->big + kr__arena_chunk_size(a, r->big);
    return r;
}

static uint64_t hash(const struct kr__arena *a, const void *root)
{
    struct kr__alien al = { 0 };
    uint64_t h = kr__arena_hash(a, root, &al);
    CHECK(!al.found);
    return h;
}

static void same_state(const struct kr__arena *a, const struct root *ra,
                       const struct kr__arena *b, const struct root *rb)
{
    CHECK(rb != ra && hash(a, ra) == hash(b, rb));
    CHECK(b->used == a->used);
    CHECK(rb->x == 3.25 && rb->fn == twice && rb->fn(21) == 42 && rb->lit == ra->lit);
    CHECK(rb->end == rb->big + kr__arena_chunk_size(b, rb->big));
    CHECK(kr__arena_chunk_size(b, rb->gone) == 0); /* (its slot is free there too) */
    const struct node *x = ra->head, *y = rb->head;
    for (; x && y; x = x->next, y = y->next)
        CHECK(x != y && x->value == y->value && !strcmp(x->pad, y->pad));
    CHECK(!x && !y);
    for (int i = 0; i < 3000; i++) CHECK(rb->big[i] == (char)(i * 7));
}

/* The same blocks allocated next in each, linked in the same way: the same hash. */
static void grows_alike(struct kr__arena *a[3], struct root *r[3])
{
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 3; k++) {
            struct node *p = alloc(a[k], sizeof *p);
            p->value = 77u + (unsigned)i;
            p->next = r[k]->head;
            r[k]->head = p;
        }
    CHECK(hash(a[0], r[0]) == hash(a[1], r[1]) && hash(a[0], r[0]) == hash(a[2], r[2]));
}

static struct kr__bytes save(const struct kr__arena *a, const void *root)
{
    struct kr__bytes img = { 0 };
    struct kr__alien al = { 0 };
    CHECK(kr__image_save(a, root, NULL, &img, &al) && !al.found && img.n > 3000);
    return img;
}

static void load_into(struct kr__arena *b, const struct kr__bytes *img, struct root **rb)
{
    const char *why = "unset";
    void *r = NULL, *x = (void *)1;
    CHECK(kr__image_load(b, img->p, img->n, &r, &x, &why) == img->n && why == NULL);
    CHECK(x == NULL); /* (saved without an engine's root) */
    *rb = r;
}

/* Truncated images are refused; flipped bytes load or are refused, never crash. */
static void damaged(const struct kr__bytes *img)
{
    unsigned refused = 0;
    for (size_t n = 0; n < img->n; n += 1 + n / 64) {
        struct kr__arena b;
        kr__arena_init(&b, 0, KR_STATE_FULL, NULL);
        void *r, *x;
        const char *why = NULL;
        CHECK(kr__image_load(&b, img->p, n, &r, &x, &why) == 0 && why != NULL);
        refused++;
        kr__arena_destroy(&b);
    }
    unsigned char *copy = malloc(img->n);
    CHECK(copy != NULL);
    uint64_t s = 12345;
    for (int k = 0; k < 400; k++) {
        memcpy(copy, img->p, img->n);
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        copy[(s >> 33) % img->n] ^= (unsigned char)(1u << (s >> 20) % 8);
        struct kr__arena b;
        kr__arena_init(&b, 0, KR_STATE_FULL, NULL);
        void *r, *x;
        const char *why = NULL;
        refused += kr__image_load(&b, copy, img->n, &r, &x, &why) == 0;
        kr__arena_destroy(&b);
    }
    free(copy);
    CHECK(refused > 100);
}

/* Chunk mode, two LPs: LP 0's state holds a word into LP 1's slice. */
static void other_slices(void)
{
    CHECK(kr__region_init(2, (size_t)64 << 20, &kr__state_chunk) == 0);
    kr__addrmap_reset(); /* (the maps as they are now: the earlier look-ups used up the
                          * re-reads a miss may cause) */
    struct kr__arena a, b;
    kr__arena_init(&a, 0, KR_STATE_CHUNK, kr__region_seg(0));
    kr__arena_init(&b, 0, KR_STATE_CHUNK, kr__region_seg(1));
    struct root *ra = build(&a);
    char *theirs = alloc(&b, 100);
    struct kr__bytes img = { 0 };
    struct kr__alien al = { 0 };
    /* (past every area LP 1 carved: nothing ever lived there, so it is only a number) */
    ra->foreign = (uint64_t)(uintptr_t)(kr__region_seg(1)->base + ((size_t)48 << 20));
    CHECK(kr__image_save(&a, ra, NULL, &img, &al) && !al.found);
    (void)hash(&a, ra);
    kr__bytes_free(&img);
    ra->foreign = (uint64_t)(uintptr_t)theirs; /* (another LP's block: cannot be named) */
    CHECK(!kr__image_save(&a, ra, NULL, &img, &al) && al.found && al.word == ra->foreign);
    kr__bytes_free(&img);
    al = (struct kr__alien){ 0 };
    (void)kr__arena_hash(&a, ra, &al);
    CHECK(al.found && al.word == ra->foreign);
    kr__arena_destroy(&a);
    kr__arena_destroy(&b);
    kr__region_destroy();
}

/* A second root (the engine's: an LP's pending timers) names its block in the loaded
 * arena, which holds the same words. */
static void second_root(struct kr__arena *a)
{
    uint64_t *list = alloc(a, 7 * sizeof *list);
    for (int i = 0; i < 7; i++) list[i] = 1000u + (uint64_t)i;
    struct kr__bytes img = { 0 };
    struct kr__alien al = { 0 };
    CHECK(kr__image_save(a, NULL, list, &img, &al) && !al.found);
    struct kr__arena b;
    kr__arena_init(&b, 0, KR_STATE_FULL, NULL);
    void *r = (void *)1, *x = NULL;
    const char *why = "unset";
    CHECK(kr__image_load(&b, img.p, img.n, &r, &x, &why) == img.n && why == NULL);
    CHECK(r == NULL && x != NULL && x != list && kr__arena_chunk_size(&b, x) >= 56);
    CHECK(x && memcmp(x, list, 7 * sizeof *list) == 0);
    CHECK(hash(a, list) == hash(&b, x));
    kr__arena_destroy(&b);
    kr__bytes_free(&img);
    kr__arena_free(a, list);
}

static struct kr__lp lp; /* page mode: the fault handler takes writes of the running LP */

int main(void)
{
    kr__fault_install();
    struct kr__arena a;
    kr__arena_init(&a, 0, KR_STATE_FULL, NULL);
    struct root *ra = build(&a);
    struct kr__bytes img = save(&a, ra);

    struct kr__arena b;
    kr__arena_init(&b, 0, KR_STATE_FULL, NULL);
    struct root *rb;
    load_into(&b, &img, &rb);
    same_state(&a, ra, &b, rb);

    CHECK(kr__region_init(1, (size_t)64 << 20, &kr__state_page) == 0);
    kr__arena_init(&lp.arena, 0, KR_STATE_PAGE, kr__region_seg(0));
    kr__ctx.lp = &lp;
    kr__ctx.mode = KR_MODE_EVENT;
    struct root *rp;
    load_into(&lp.arena, &img, &rp);
    same_state(&a, ra, &lp.arena, rp);
    grows_alike((struct kr__arena *[3]){ &a, &b, &lp.arena }, (struct root *[3]){ ra, rb, rp });
    kr__ctx.lp = NULL;
    kr__ctx.mode = KR_MODE_NONE;
    kr__arena_destroy(&lp.arena);
    kr__region_destroy();

    other_slices();
    second_root(&a);
    damaged(&img);
    kr__bytes_free(&img);

    char *heap = malloc(64); /* a pointer no image can name */
    ra->foreign = (uint64_t)(uintptr_t)heap;
    struct kr__bytes bad = { 0 };
    struct kr__alien al = { 0 };
    CHECK(!kr__image_save(&a, ra, NULL, &bad, &al) && al.found && al.word == ra->foreign);
    kr__bytes_free(&bad);
    free(heap);
    kr__arena_destroy(&a);
    kr__arena_destroy(&b);
    return check_done("image");
}
