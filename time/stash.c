/*
 * A core's stash: packets taken from a reception FIFO as they come in wall
 * clock, kept until the program takes them by name (the timekeeper says
 * which arrived by the core's clock, or the program expects one sent in
 * any order). An open hash by name over a growing array of slots.
 */
#include "../emu/node.h"
#include "../emu/unit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void emu_stash_init(struct emu_stash *s, emu_stash_name_fn name_of)
{
	*s = (struct emu_stash){.name_of = name_of};
}

static void index_put(struct emu_stash *s, uint32_t slot)
{
	uint32_t mask = s->icap - 1, p = (uint32_t)s->name[slot] & mask;
	while (s->index[p])
		p = (p + 1) & mask;
	s->index[p] = slot + 1;
}

/* Room for one more packet: 0 or -ENOMEM. */
static int stash_grow(struct emu_stash *s)
{
	if (s->n == s->cap) {
		uint32_t nc = s->cap ? 2 * s->cap : 64;
		struct torus_packet *np = realloc(s->pkt, (size_t)nc * sizeof(*np));
		if (!np)
			return -ENOMEM;
		s->pkt = np;
		struct torus_side *ns = realloc(s->side, (size_t)nc * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		s->side = ns;
		uint64_t *nn = realloc(s->name, (size_t)nc * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		s->name = nn;
		s->cap = nc;
	}
	if (2 * (s->n + 1) > s->icap) {
		uint32_t ic = s->icap ? 2 * s->icap : 128;
		uint32_t *t = calloc(ic, sizeof(*t));
		if (!t)
			return -ENOMEM;
		free(s->index);
		s->index = t;
		s->icap = ic;
		for (uint32_t i = 0; i < s->n; i++)
			index_put(s, i);
	}
	return 0;
}

int emu_stash_drain(struct emu_node_rt *rt, struct emu_stash *s, struct torus_ring_view *v)
{
	return emu_stash_drain_split(rt, s, NULL, 0, v);
}

int emu_stash_drain_split(struct emu_node_rt *rt, struct emu_stash *main, struct emu_stash *alt, uint64_t bit,
			  struct torus_ring_view *v)
{
	struct torus_side *side;
	struct torus_packet *pkt;
	int n = 0;
	while ((pkt = torus_ring_peek(v, &side))) {
		struct emu_stash *s = alt && (side->vt & bit) ? alt : main;
		if (stash_grow(s))
			return -ENOMEM;
		torus_pkt_copy(&s->pkt[s->n], pkt);
		s->side[s->n] = *side;
		s->name[s->n] = s->name_of(&s->pkt[s->n], side);
		index_put(s, s->n++);
		torus_ring_release(v);
		n++;
	}
	if (n && torus_ring_publish_tail(v))
		emu_bell_ring(&rt->me->bell);
	return n;
}

int emu_stash_find(const struct emu_stash *s, uint64_t name,
		   int (*is)(const struct emu_stash *s, uint32_t slot, const void *key), const void *key)
{
	if (!s->icap)
		return -1;
	uint32_t mask = s->icap - 1;
	for (uint32_t p = (uint32_t)name & mask; s->index[p]; p = (p + 1) & mask) {
		uint32_t slot = s->index[p] - 1;
		if (s->name[slot] == name && is(s, slot, key))
			return (int)slot;
	}
	return -1;
}

/* The index position that holds slot. */
static uint32_t index_of(const struct emu_stash *s, uint32_t slot)
{
	uint32_t mask = s->icap - 1, p = (uint32_t)s->name[slot] & mask;
	while (s->index[p] != slot + 1)
		p = (p + 1) & mask;
	return p;
}

void emu_stash_remove(struct emu_stash *s, uint32_t i)
{
	/* out of the index: backward-shift deletion */
	uint32_t mask = s->icap - 1, p = index_of(s, i), q = p;
	for (;;) {
		q = (q + 1) & mask;
		if (!s->index[q])
			break;
		uint32_t home = (uint32_t)s->name[s->index[q] - 1] & mask;
		/* q's entry moves into the hole at p if p lies on its probe path */
		if ((q > p && (home <= p || home > q)) || (q < p && home <= p && home > q)) {
			s->index[p] = s->index[q];
			p = q;
		}
	}
	s->index[p] = 0;
	/* the last packet takes its slot */
	if (i != --s->n) {
		s->index[index_of(s, s->n)] = i + 1;
		s->pkt[i] = s->pkt[s->n];
		s->side[i] = s->side[s->n];
		s->name[i] = s->name[s->n];
	}
}

void emu_stash_remove_front(struct emu_stash *s, uint32_t k)
{
	if (!k)
		return;
	s->n -= k;
	memmove(s->pkt, s->pkt + k, (size_t)s->n * sizeof(*s->pkt));
	memmove(s->side, s->side + k, (size_t)s->n * sizeof(*s->side));
	memmove(s->name, s->name + k, (size_t)s->n * sizeof(*s->name));
	memset(s->index, 0, (size_t)s->icap * sizeof(*s->index));
	for (uint32_t i = 0; i < s->n; i++)
		index_put(s, i);
}

void emu_stash_free(struct emu_stash *s)
{
	free(s->pkt);
	free(s->side);
	free(s->name);
	free(s->index);
	*s = (struct emu_stash){.name_of = s->name_of};
}
