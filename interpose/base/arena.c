/* SPDX-License-Identifier: MIT */
#include "arena.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

/*
 * Small blocks come from size classes (16 bytes to 4 KiB, powers of two)
 * carved out of 1 MiB chunks and recycled through per-class free lists.
 * Larger blocks are mapped on their own. Every block is preceded by a
 * 16-byte header that names its class, so free needs no size.
 */
#define CHUNK_SIZE (1u << 20)
#define MIN_SHIFT 4
#define MAX_SHIFT 12
#define NCLASSES (MAX_SHIFT - MIN_SHIFT + 1)
#define HEADER_SIZE 16
#define LARGE_CLASS 0xff

struct block_header {
	size_t mapped_size; /* large blocks: the whole mapping */
	uint8_t size_class;
};

struct free_block {
	struct free_block *next;
};

static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static struct free_block *free_lists[NCLASSES];
static uint8_t *chunk_cursor, *chunk_end;
static size_t mapped_bytes, mapped_limit, mapped_peak;

static void *map_pages(size_t size)
{
	if (mapped_limit && mapped_bytes + size > mapped_limit)
		return NULL;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	mapped_bytes += size;
	if (mapped_bytes > mapped_peak)
		mapped_peak = mapped_bytes;
	return p;
}

static unsigned class_for(size_t total)
{
	unsigned shift = MIN_SHIFT;
	while (((size_t)1 << shift) < total)
		shift++;
	return shift - MIN_SHIFT;
}

void *lw_arena_alloc(size_t size)
{
	struct block_header *h;

	if (size > SIZE_MAX - HEADER_SIZE - 4096)
		return NULL;
	size_t total = size + HEADER_SIZE;

	pthread_mutex_lock(&arena_lock);
	if (total > ((size_t)1 << MAX_SHIFT)) {
		size_t mapped = (total + 4095) & ~(size_t)4095;
		h = map_pages(mapped);
		pthread_mutex_unlock(&arena_lock);
		if (!h)
			return NULL;
		h->mapped_size = mapped;
		h->size_class = LARGE_CLASS;
		return (uint8_t *)h + HEADER_SIZE; /* fresh pages are zero */
	}

	unsigned cls = class_for(total);
	size_t block = (size_t)1 << (cls + MIN_SHIFT);
	if (free_lists[cls]) {
		struct free_block *fb = free_lists[cls];
		free_lists[cls] = fb->next;
		h = (struct block_header *)fb;
	} else {
		if (!chunk_cursor || (size_t)(chunk_end - chunk_cursor) < block) {
			uint8_t *chunk = map_pages(CHUNK_SIZE);
			if (!chunk) {
				pthread_mutex_unlock(&arena_lock);
				return NULL;
			}
			chunk_cursor = chunk;
			chunk_end = chunk + CHUNK_SIZE;
		}
		h = (struct block_header *)chunk_cursor;
		chunk_cursor += block;
	}
	pthread_mutex_unlock(&arena_lock);

	memset(h, 0, block);
	h->size_class = (uint8_t)cls;
	return (uint8_t *)h + HEADER_SIZE;
}

void lw_arena_free(void *ptr)
{
	if (!ptr)
		return;
	struct block_header *h =
		(struct block_header *)((uint8_t *)ptr - HEADER_SIZE);

	pthread_mutex_lock(&arena_lock);
	if (h->size_class == LARGE_CLASS) {
		size_t mapped = h->mapped_size;
		munmap(h, mapped);
		mapped_bytes -= mapped;
	} else {
		struct free_block *fb = (struct free_block *)h;
		unsigned cls = h->size_class;
		fb->next = free_lists[cls];
		free_lists[cls] = fb;
	}
	pthread_mutex_unlock(&arena_lock);
}

size_t lw_arena_mapped_bytes(void)
{
	pthread_mutex_lock(&arena_lock);
	size_t n = mapped_bytes;
	pthread_mutex_unlock(&arena_lock);
	return n;
}

size_t lw_arena_peak_bytes(void)
{
	pthread_mutex_lock(&arena_lock);
	size_t n = mapped_peak;
	pthread_mutex_unlock(&arena_lock);
	return n;
}

void lw_arena_set_limit(size_t bytes)
{
	pthread_mutex_lock(&arena_lock);
	mapped_limit = bytes;
	pthread_mutex_unlock(&arena_lock);
}

void lw_arena_lock_for_fork(void)
{
	pthread_mutex_lock(&arena_lock);
}

void lw_arena_unlock_after_fork(void)
{
	pthread_mutex_unlock(&arena_lock);
}
