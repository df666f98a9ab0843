/* SPDX-License-Identifier: MIT */
#include "fake-core.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "fake-table.h"

#define ALIGNMENT 256
/* An H100-sized device; pinned host memory as much as a test machine gives. */
#define DEFAULT_DEVICE_CAPACITY ((size_t)80 << 30)
#define DEFAULT_HOST_CAPACITY ((size_t)16 << 30)
#define DEFAULT_DEVICES 1

/* What a stream or pool handle points at; only its address matters. */
struct fake_handle_object {
	int kind;
	int device;
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;

/* Set once by init(). */
static size_t device_capacity;
static size_t host_capacity;
static int device_count;

/* Guarded by state_lock. */
static struct fake_table allocations;   /* device, managed and pinned */
/*
 * Apart from allocations: a program may free registered memory without
 * unregistering it, and the address may then come back from our allocator.
 */
static struct fake_table registrations;
static struct fake_table handles;       /* streams and pools */
static size_t device_live[FAKE_MAX_DEVICES];
static size_t host_live;

/* Each device's default pool is the address of one of these bytes. */
static char default_pools[FAKE_MAX_DEVICES];

static _Thread_local cudaError_t last_error;
static _Thread_local int current_device;

/*
 * Parses a byte count: decimal digits and an optional binary suffix K, M, G
 * or T. Anything else leaves the default, as does an overflow.
 */
static size_t parse_bytes(const char *name, size_t fallback)
{
	const char *text = getenv(name);
	unsigned long long value;
	unsigned int shift = 0;
	char *end;

	if (!text || *text < '0' || *text > '9')
		return fallback;
	errno = 0;
	value = strtoull(text, &end, 10);
	if (errno)
		return fallback;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (*end || value > (unsigned long long)(SIZE_MAX >> shift))
		return fallback;
	return (size_t)value << shift;
}

static int parse_device_count(void)
{
	const char *text = getenv("FAKECUDA_DEVICES");
	long value;
	char *end;

	if (!text || *text < '0' || *text > '9')
		return DEFAULT_DEVICES;
	errno = 0;
	value = strtol(text, &end, 10);
	if (errno || *end)
		return DEFAULT_DEVICES;
	return value > FAKE_MAX_DEVICES ? FAKE_MAX_DEVICES : (int)value;
}

/*
 * A child forked while another thread holds the lock would wait for it
 * forever: hold it across fork().
 */
static void lock_before_fork(void)
{
	pthread_mutex_lock(&state_lock);
}

static void unlock_after_fork(void)
{
	pthread_mutex_unlock(&state_lock);
}

static void init(void)
{
	device_capacity = parse_bytes("FAKECUDA_CAPACITY", DEFAULT_DEVICE_CAPACITY);
	host_capacity = parse_bytes("FAKECUDA_HOST_CAPACITY", DEFAULT_HOST_CAPACITY);
	device_count = parse_device_count();
	pthread_atfork(lock_before_fork, unlock_after_fork, unlock_after_fork);
}

static void ensure_init(void)
{
	pthread_once(&init_once, init);
}

static void lock(void)
{
	ensure_init();
	pthread_mutex_lock(&state_lock);
}

static void unlock(void)
{
	pthread_mutex_unlock(&state_lock);
}

cudaError_t fake_return(cudaError_t err)
{
	if (err != cudaSuccess)
		last_error = err;
	return err;
}

cudaError_t fake_last_error(int clear)
{
	cudaError_t err = last_error;

	if (clear)
		last_error = cudaSuccess;
	return err;
}

int fake_device_count(void)
{
	ensure_init();
	return device_count;
}

cudaError_t fake_require_device(void)
{
	return fake_device_count() > 0 ? cudaSuccess : cudaErrorNoDevice;
}

int fake_current_device(void)
{
	return current_device;
}

void fake_set_current_device(int device)
{
	current_device = device;
}

/* The live-bytes counter an allocation of kind is charged to. */
static size_t *live_counter(int kind, int device, size_t *capacity)
{
	if (kind == FAKE_PINNED || device < 0) {
		*capacity = host_capacity;
		return &host_live;
	}
	*capacity = device_capacity;
	return &device_live[device];
}

void fake_mem_info(int device, size_t *free_bytes, size_t *total_bytes)
{
	lock();
	*free_bytes = device_capacity - device_live[device];
	*total_bytes = device_capacity;
	unlock();
}

cudaError_t fake_mem_alloc(int kind, int device, size_t size, void **out)
{
	struct fake_entry entry = { .kind = kind, .device = device, .size = size };
	size_t capacity;
	size_t *live;
	void *mem;

	if (size == 0) {
		*out = NULL;
		return cudaSuccess;
	}
	if (size > SIZE_MAX - (ALIGNMENT - 1))
		return cudaErrorMemoryAllocation;
	if (kind == FAKE_PINNED)
		entry.device = -1;

	lock();
	live = live_counter(kind, device, &capacity);
	if (size > capacity - *live)
		goto error_unlock;
	if (posix_memalign(&mem, ALIGNMENT, (size + ALIGNMENT - 1) & ~(size_t)(ALIGNMENT - 1)))
		goto error_unlock;
	entry.key = (uintptr_t)mem;
	if (fake_table_insert(&allocations, &entry))
		goto error_free;
	*live += size;
	unlock();
	*out = mem;
	return cudaSuccess;

error_free:
	free(mem);
error_unlock:
	unlock();
	return cudaErrorMemoryAllocation;
}

static void uncharge(const struct fake_entry *entry)
{
	size_t capacity;

	if (entry->kind == FAKE_DEVICE || entry->kind == FAKE_MANAGED ||
	    entry->kind == FAKE_PINNED || entry->kind == FAKE_PHYSICAL)
		*live_counter(entry->kind, entry->device, &capacity) -= entry->size;
}

int fake_mem_kind(const void *ptr)
{
	const struct fake_entry *entry;
	int kind;

	lock();
	entry = fake_table_find(&allocations, (uintptr_t)ptr);
	kind = entry ? entry->kind : 0;
	unlock();
	return kind;
}

cudaError_t fake_mem_free(void *ptr, unsigned int kind_mask)
{
	struct fake_entry *entry;

	if (!ptr)
		return cudaSuccess;
	lock();
	entry = fake_table_find(&allocations, (uintptr_t)ptr);
	if (!entry || !(kind_mask & FAKE_KIND_BIT(entry->kind))) {
		unlock();
		return cudaErrorInvalidValue;
	}
	uncharge(entry);
	fake_table_remove(&allocations, entry);
	unlock();
	free(ptr);
	return cudaSuccess;
}

struct range {
	uintptr_t start;
	uintptr_t end; /* exclusive */
};

static int overlaps(const struct fake_entry *entry, void *context)
{
	const struct range *range = context;

	return entry->key < range->end && range->start < entry->key + entry->size;
}

cudaError_t fake_mem_register(void *ptr, size_t size)
{
	struct fake_entry entry = { .key = (uintptr_t)ptr, .size = size,
				    .kind = FAKE_REGISTERED, .device = -1 };
	struct range range = { (uintptr_t)ptr, (uintptr_t)ptr + size };
	const struct fake_entry *other;
	cudaError_t err = cudaSuccess;

	if (!ptr || !size || range.end < range.start)
		return cudaErrorInvalidValue;
	lock();
	other = fake_table_scan(&allocations, overlaps, &range);
	if (other && other->kind != FAKE_PINNED)
		err = cudaErrorInvalidValue; /* device memory is not the host's */
	else if (other || fake_table_scan(&registrations, overlaps, &range))
		err = cudaErrorHostMemoryAlreadyRegistered;
	else if (fake_table_insert(&registrations, &entry))
		err = cudaErrorMemoryAllocation;
	unlock();
	return err;
}

cudaError_t fake_mem_unregister(void *ptr)
{
	struct fake_entry *entry;

	if (!ptr)
		return cudaErrorInvalidValue;
	lock();
	entry = fake_table_find(&registrations, (uintptr_t)ptr);
	if (!entry) {
		unlock();
		return cudaErrorHostMemoryNotRegistered;
	}
	fake_table_remove(&registrations, entry);
	unlock();
	return cudaSuccess;
}

static int contains_start(const struct fake_entry *entry, void *context)
{
	const struct range *range = context;

	return (entry->kind == FAKE_DEVICE || entry->kind == FAKE_MANAGED ||
		entry->kind == FAKE_RESERVED) &&
	       entry->key <= range->start && range->start < entry->key + entry->size;
}

void fake_mem_set_pool(void *ptr, cudaMemPool_t pool)
{
	struct fake_entry *entry;

	lock();
	entry = fake_table_find(&allocations, (uintptr_t)ptr);
	if (entry)
		entry->pool = (uintptr_t)pool;
	unlock();
}

static int in_pool(const struct fake_entry *entry, void *context)
{
	struct { uintptr_t pool; size_t used; } *sum = context;

	if (entry->pool == sum->pool)
		sum->used += entry->size;
	return 0;
}

size_t fake_mem_pool_used(cudaMemPool_t pool)
{
	struct { uintptr_t pool; size_t used; } sum = { (uintptr_t)pool, 0 };

	/* Linear, as the stats query it answers is rare. */
	lock();
	fake_table_scan(&allocations, in_pool, &sum);
	unlock();
	return sum.used;
}

cudaError_t fake_mem_reserve(void *ptr, size_t size, int device)
{
	struct fake_entry entry = { .key = (uintptr_t)ptr, .size = size,
				    .kind = FAKE_RESERVED, .device = device };
	cudaError_t err = cudaSuccess;

	if (!ptr || !size)
		return cudaErrorInvalidValue;
	lock();
	if (fake_table_insert(&allocations, &entry))
		err = cudaErrorMemoryAllocation;
	unlock();
	return err;
}

cudaError_t fake_mem_unreserve(void *ptr)
{
	struct fake_entry *entry;

	lock();
	entry = fake_table_find(&allocations, (uintptr_t)ptr);
	if (!entry || entry->kind != FAKE_RESERVED) {
		unlock();
		return cudaErrorInvalidValue;
	}
	fake_table_remove(&allocations, entry);
	unlock();
	return cudaSuccess;
}

cudaError_t fake_mem_range(const void *ptr, void **base, size_t *size)
{
	struct range range = { (uintptr_t)ptr, (uintptr_t)ptr + 1 };
	const struct fake_entry *entry;
	cudaError_t err = cudaErrorInvalidValue;

	lock();
	entry = fake_table_find(&allocations, range.start);
	if (!entry || !contains_start(entry, &range))
		entry = fake_table_scan(&allocations, contains_start, &range);
	if (entry) {
		if (base)
			*base = (void *)entry->key;
		if (size)
			*size = entry->size;
		err = cudaSuccess;
	}
	unlock();
	return err;
}

enum fake_place fake_classify(const void *ptr, size_t count)
{
	struct range range = { (uintptr_t)ptr, (uintptr_t)ptr + count };
	const struct fake_entry *entry;
	enum fake_place place = FAKE_PLACE_HOST;

	lock();
	/* Most copies start at an allocation: try the exact key first. */
	entry = fake_table_find(&allocations, range.start);
	if (!entry || !contains_start(entry, &range))
		entry = fake_table_scan(&allocations, contains_start, &range);
	if (entry) {
		if (range.end >= range.start && range.end <= entry->key + entry->size)
			place = FAKE_PLACE_DEVICE;
		else
			place = FAKE_PLACE_OVERRUN;
	}
	unlock();
	return place;
}

cudaError_t fake_handle_create(int kind, int device, void **out)
{
	struct fake_handle_object *object = malloc(sizeof(*object));
	struct fake_entry entry = { .kind = kind, .device = device };
	int ret;

	if (!object)
		return cudaErrorMemoryAllocation;
	object->kind = kind;
	object->device = device;
	entry.key = (uintptr_t)object;
	lock();
	ret = fake_table_insert(&handles, &entry);
	unlock();
	if (ret) {
		free(object);
		return cudaErrorMemoryAllocation;
	}
	*out = object;
	return cudaSuccess;
}

cudaError_t fake_handle_destroy(int kind, void *handle)
{
	cudaError_t unknown = kind == FAKE_STREAM ? cudaErrorInvalidResourceHandle :
						    cudaErrorInvalidValue;
	struct fake_entry *entry;

	lock();
	entry = fake_table_find(&handles, (uintptr_t)handle);
	if (!entry || entry->kind != kind) {
		unlock();
		return unknown;
	}
	fake_table_remove(&handles, entry);
	unlock();
	free(handle);
	return cudaSuccess;
}

/* Looks up a live handle of kind; returns its device or -1. */
static int handle_device(int kind, const void *handle)
{
	const struct fake_entry *entry;
	int device = -1;

	lock();
	entry = fake_table_find(&handles, (uintptr_t)handle);
	if (entry && entry->kind == kind)
		device = entry->device;
	unlock();
	return device;
}

cudaError_t fake_stream_device(cudaStream_t stream, int *device)
{
	if (!stream || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
		*device = current_device;
		return cudaSuccess;
	}
	*device = handle_device(FAKE_STREAM, stream);
	return *device < 0 ? cudaErrorInvalidResourceHandle : cudaSuccess;
}

cudaError_t fake_pool_device(cudaMemPool_t pool, int *device)
{
	const char *byte = (const char *)pool;

	/* Compare addresses as integers: pool may point anywhere. */
	if ((uintptr_t)byte >= (uintptr_t)default_pools &&
	    (uintptr_t)byte < (uintptr_t)default_pools + (uintptr_t)fake_device_count()) {
		*device = (int)((uintptr_t)byte - (uintptr_t)default_pools);
		return cudaSuccess;
	}
	*device = handle_device(FAKE_POOL, pool);
	return *device < 0 ? cudaErrorInvalidValue : cudaSuccess;
}

cudaMemPool_t fake_default_pool(int device)
{
	return (cudaMemPool_t)(void *)&default_pools[device];
}

static int on_device(const struct fake_entry *entry, void *context)
{
	return entry->device == *(const int *)context;
}

static void release_allocation(const struct fake_entry *entry, void *context)
{
	/* A reserved range is the program's to free (cuMemAddressFree). */
	if (entry->kind == FAKE_RESERVED)
		return;
	uncharge(entry);
	free((void *)entry->key);
}

static void release_handle(const struct fake_entry *entry, void *context)
{
	free((void *)entry->key);
}

void fake_reset_device(int device)
{
	lock();
	fake_table_remove_matching(&allocations, on_device, release_allocation, &device);
	fake_table_remove_matching(&handles, on_device, release_handle, &device);
	unlock();
}
