/* SPDX-License-Identifier: MIT */
/*
 * PyTorch's objects read from C (see torchread.h).
 *
 * What is read, and where it comes from (offsets printed by offsetof() in a
 * probe compiled against each release's headers):
 *   THPVariable  2.15: {PyObject_HEAD; at::Tensor cdata}: the impl at 16.
 *                older: c10::MaybeOwned<at::Tensor> cdata: a bool at 16
 *                (borrowed), the impl (owned) or an at::Tensor * at 24.
 *   TensorImpl   vptr 0, storage_ 16, autograd_meta_ 24, pyobj_slot_ 48
 *                (2.15: the PyObject *; older: the interpreter, then it).
 *   StorageImpl  data_ptr_ 16 (DataPtr: data 0, device 24), size_bytes_ 48.
 *   AutogradMeta grad_ 40, grad_fn_ 48 (the pointer comes first in both an
 *                intrusive_ptr and a shared_ptr).
 *   Node         2.15: an intrusive_ptr_target, next_edges_ 88 (Edge: the
 *                function's intrusive_ptr, input_nr; 16 bytes), pyobj_slot_
 *                112, sizeof 464. Older (2.11): enable_shared_from_this
 *                first, next_edges_ 96, Edge {shared_ptr, input_nr} 24 bytes.
 *   SavedVariable 2.15: data_ 0, was_default_constructed_ 40 and four more
 *                bools, hooks_ 48, requires_grad_ 72, sizeof 80. Older:
 *                bools 48, hooks_ 56, requires_grad_ 96, sizeof 104.
 * Which Node layout is loaded is read from the RTTI of torch::autograd::Node
 * (its base class), not from a version string; the rest is told apart on
 * each object by validating the candidates.
 *
 * The C++ classes are recognised by their vtables' RTTI (the Itanium ABI's
 * type_info objects, walked through __si_class_type_info and
 * __vmi_class_type_info up to the base wanted), accepted only for vtables
 * inside PyTorch's own libraries, with the verdict cached per vtable. Memory
 * that may not be valid is read with process_vm_readv() on the own process,
 * which answers EFAULT instead of faulting (a pipe's write() where that
 * call is refused): autograd's device threads free nodes without the GIL.
 */
#include "torchread.h"

#include "pyabi.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define CUDA_DEVICE_TYPE 1 /* c10::DeviceType::CUDA */

/* What a vtable's RTTI says its class is. */
enum {
	K_TENSOR = 1 << 0,    /* derives from c10::TensorImpl */
	K_UNDEFINED = 1 << 1, /* c10::UndefinedTensorImpl */
	K_STORAGE = 1 << 2,
	K_AUTOGRAD_META = 1 << 3,
	K_NODE = 1 << 4,
	K_ACCUMULATE = 1 << 5, /* torch::autograd::AccumulateGrad */
	K_PYNODE = 1 << 6,     /* a Python custom Function's backward */
	K_SV_HOOKS = 1 << 7,   /* SavedVariableHooks */
	K_PY_SV_HOOKS = 1 << 9, /* saved_tensors_hooks' own, from Python */
	K_KNOWN = 1 << 8,      /* a verdict was reached (maybe "none") */
};

static const struct {
	const char *name; /* the type_info's name, as the compiler mangles it */
	unsigned kind;
	int exact; /* the most derived class only, not its subclasses */
} classes[] = {
	{ "N3c1010TensorImplE", K_TENSOR, 0 },
	{ "N3c1019UndefinedTensorImplE", K_UNDEFINED, 0 },
	{ "N3c1011StorageImplE", K_STORAGE, 0 },
	{ "N5torch8autograd12AutogradMetaE", K_AUTOGRAD_META, 0 },
	{ "N5torch8autograd4NodeE", K_NODE, 0 },
	{ "N5torch8autograd14AccumulateGradE", K_ACCUMULATE, 1 },
	{ "N5torch8autograd6PyNodeE", K_PYNODE, 1 },
	{ "N5torch8autograd18SavedVariableHooksE", K_SV_HOOKS, 0 },
	{ "N5torch8autograd20PySavedVariableHooksE", K_PY_SV_HOOKS, 1 },
};

struct torch_layout {
	const char *node_base;  /* the RTTI name of Node's base */
	int next_edges;         /* Node::next_edges_ */
	int edge_size;
	int node_pyobj;         /* PyNode's THPFunction (pyobj_slot_); -1: scan */
	int node_fields;        /* where a subclass's own fields may start */
	int node_size;          /* sizeof(Node); -1: unknown, scan */
	int sv_size, sv_flags, sv_hooks, sv_requires_grad;
	int fn_cdata;           /* THPFunction's intrusive_ptr to its node; -1 */
	int make_shared;        /* a node may sit after make_shared's block */
};

static const struct torch_layout layouts[] = {
	{ /* 2.15: from the headers of 2.15.0 */
		.node_base = "N3c1020intrusive_ptr_targetE",
		.next_edges = 88, .edge_size = 16, .node_pyobj = 112,
		.node_fields = 464, .node_size = 464,
		.sv_size = 80, .sv_flags = 40, .sv_hooks = 48,
		.sv_requires_grad = 72, .fn_cdata = 280, .make_shared = 0,
	},
	{ /* shared_ptr-owned nodes (2.11 and before) */
		.node_base = "St23enable_shared_from_thisIN5torch8autograd4NodeEE",
		.next_edges = 96, .edge_size = 24, .node_pyobj = -1,
		.node_fields = 128, .node_size = -1,
		.sv_size = 104, .sv_flags = 48, .sv_hooks = 56,
		.sv_requires_grad = 96, .fn_cdata = -1, .make_shared = 1,
	},
};

#define MAX_SEGMENTS 64
#define VERDICT_SLOTS 1024 /* a power of two */
#define NODE_WINDOW 512    /* bytes scanned when a node's size is unknown */
#define MAX_SNAPSHOT 4096  /* the most of one object read for a scan */
#define MAX_VECTOR 256     /* the most SavedVariables read from a vector */

/* Filled by probe() under the GIL, then read-only; state published last. */
static struct {
	int state; /* 1 ready, -1 not understood, 0 not yet */
	const struct torch_layout *layout;
	struct { uintptr_t start, end; } segment[MAX_SEGMENTS];
	unsigned segments;
	char python_lib[512];
	void *lib; /* a handle on libtorch_python, taken once, never closed */
	const void *const *variable_class; /* &THPVariableClass */
	const void *function_type;         /* &THPFunctionType */
	uintptr_t undefined;               /* &UndefinedTensorImpl::_singleton */
	uintptr_t rtti_si, rtti_vmi; /* cxxabi type_infos' vptrs */
	int vm_readv_refused;
	int pipe_fd[2];
	pid_t pipe_pid; /* a child makes its own pipe: it shares its parent's */
} t = { .pipe_fd = { -1, -1 } };

/* Per vtable: what its class is (K_KNOWN set once decided). */
static struct {
	uintptr_t vptr;
	unsigned kinds;
} verdicts[VERDICT_SLOTS];

/* ---- reading without faulting ---- */

static bool plausible(uintptr_t p)
{
	return p >= 4096 && p < (1ull << 47) && !(p & 7);
}

/* Through a pipe: write() answers EFAULT for what cannot be read. */
static size_t peek_pipe(void *dst, uintptr_t src, size_t len)
{
	size_t done = 0;

	if (t.pipe_fd[0] >= 0 && t.pipe_pid != getpid()) {
		close(t.pipe_fd[0]);
		close(t.pipe_fd[1]);
		t.pipe_fd[0] = t.pipe_fd[1] = -1;
	}
	if (t.pipe_fd[0] < 0) {
		if (pipe2(t.pipe_fd, O_CLOEXEC | O_NONBLOCK) < 0)
			return 0;
		t.pipe_pid = getpid();
	}
	while (done < len) {
		size_t n = len - done < 4096 ? len - done : 4096;
		ssize_t w = write(t.pipe_fd[1], (const void *)(src + done), n);
		if (w <= 0)
			break;
		if (read(t.pipe_fd[0], (char *)dst + done, (size_t)w) != w)
			break;
		done += (size_t)w;
	}
	return done;
}

/* Copies up to len bytes at src into dst; how many could be read (a
 * prefix: reading stops at the first unreadable page). */
static size_t peek(void *dst, uintptr_t src, size_t len)
{
	struct iovec local = { dst, len }, remote = { (void *)src, len };
	ssize_t n;

	if (!len || src < 4096 || src >= (1ull << 47))
		return 0;
	if (!t.vm_readv_refused) {
		n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
		if (n >= 0)
			return (size_t)n;
		if (errno != ENOSYS && errno != EPERM)
			return 0;
		t.vm_readv_refused = 1; /* seccomp, or a kernel without it */
	}
	return peek_pipe(dst, src, len);
}

void lw_torch_test_pipe_reads(void)
{
	t.vm_readv_refused = 1;
}

static bool peek_word(uintptr_t src, uintptr_t *value)
{
	return peek(value, src, sizeof(*value)) == sizeof(*value);
}

/* A NUL-terminated string of at most size-1 bytes; false if none. */
static bool peek_string(uintptr_t src, char *out, size_t size)
{
	size_t n = peek(out, src, size - 1);

	out[n] = '\0';
	return n && strlen(out) < n;
}

/* ---- PyTorch's libraries and their RTTI ---- */

static bool in_torch(uintptr_t addr)
{
	for (unsigned i = 0; i < t.segments; i++)
		if (addr >= t.segment[i].start && addr < t.segment[i].end)
			return true;
	return false;
}

static bool torch_library(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "libtorch", 8) == 0 ||
	       strncmp(base, "libc10", 6) == 0;
}

static int note_library(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (!info->dlpi_name || !torch_library(info->dlpi_name))
		return 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) ||
		    t.segments == MAX_SEGMENTS)
			continue;
		t.segment[t.segments].start = info->dlpi_addr + ph->p_vaddr;
		t.segment[t.segments].end =
			info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		t.segments++;
	}
	const char *base = strrchr(info->dlpi_name, '/');
	base = base ? base + 1 : info->dlpi_name;
	if (strncmp(base, "libtorch_python.so", 18) == 0 &&
	    strlen(info->dlpi_name) < sizeof(t.python_lib))
		strcpy(t.python_lib, info->dlpi_name);
	return 0;
}

/* The type_info of the class whose vtable (address point) is vptr. */
static uintptr_t type_info_of(uintptr_t vptr)
{
	uintptr_t info;

	if (!in_torch(vptr) || !peek_word(vptr - 8, &info) || !plausible(info))
		return 0;
	return info;
}

/* Sets the kinds of the class of type_info info and of its bases. */
static void walk_rtti(uintptr_t info, unsigned *kinds, int depth,
		      unsigned *budget)
{
	uintptr_t head[2]; /* the type_info's own vptr, its name */
	char name[128];

	if (!info || depth > 16 || !*budget || peek(head, info, 16) != 16 ||
	    !peek_string(head[1], name, sizeof(name)))
		return;
	--*budget;
	const char *n = name[0] == '*' ? name + 1 : name;
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if ((!classes[i].exact || depth == 0) &&
		    strcmp(n, classes[i].name) == 0)
			*kinds |= classes[i].kind;

	if (head[0] == t.rtti_si) {
		uintptr_t base;
		if (peek_word(info + 16, &base) && plausible(base))
			walk_rtti(base, kinds, depth + 1, budget);
	} else if (head[0] == t.rtti_vmi) {
		uint32_t counts[2]; /* flags, base count */
		if (peek(counts, info + 16, 8) != 8 || counts[1] > 16)
			return;
		for (uint32_t i = 0; i < counts[1]; i++) {
			uintptr_t base;
			if (peek_word(info + 24 + 16 * i, &base) &&
			    plausible(base))
				walk_rtti(base, kinds, depth + 1, budget);
		}
	}
}

/* What the class with vtable vptr is (K_*), 0 for none or unknown. */
static unsigned kinds_of_vptr(uintptr_t vptr)
{
	if (!plausible(vptr) || !in_torch(vptr))
		return 0;
	size_t slot = (vptr >> 3) * 0x9e3779b97f4a7c15ull >> 54;
	for (unsigned probe = 0; probe < 8; probe++) {
		size_t i = (slot + probe) & (VERDICT_SLOTS - 1);
		if (verdicts[i].vptr == vptr)
			return verdicts[i].kinds & ~K_KNOWN;
		if (!verdicts[i].vptr) {
			unsigned kinds = K_KNOWN, budget = 64;
			walk_rtti(type_info_of(vptr), &kinds, 0, &budget);
			verdicts[i].kinds = kinds;
			verdicts[i].vptr = vptr;
			return kinds & ~K_KNOWN;
		}
	}
	/* The table is crowded: decide without keeping the verdict. */
	unsigned kinds = 0, budget = 64;
	walk_rtti(type_info_of(vptr), &kinds, 0, &budget);
	return kinds;
}

/* The kinds of the C++ object at p (its first word its vptr). */
static unsigned kinds_of(uintptr_t p)
{
	uintptr_t vptr;

	if (!plausible(p) || !peek_word(p, &vptr))
		return 0;
	return kinds_of_vptr(vptr);
}

/* A defined TensorImpl (UndefinedTensorImpl's singleton is not one). */
static bool is_impl(uintptr_t p)
{
	return p != t.undefined && (kinds_of(p) & (K_TENSOR | K_UNDEFINED)) ==
					   K_TENSOR;
}

static bool is_node(uintptr_t p)
{
	return kinds_of(p) & K_NODE;
}

/* ---- the Python side ---- */

/* Whether the live type object at type has base in its tp_mro: read in
 * place, as the walker asks it of every object's type. */
static bool live_type_has_base(uintptr_t type, uintptr_t base)
{
	const uintptr_t *mro;
	intptr_t count;

	memcpy(&mro, (const char *)type + LW_PY_TP_MRO, sizeof(mro));
	if (!base || !mro)
		return false;
	memcpy(&count, (const char *)mro + LW_PY_OB_SIZE, sizeof(count));
	mro = (const uintptr_t *)((const char *)mro + LW_PY_TUPLE_ITEMS);
	for (intptr_t i = 0; i < count && i < 64; i++)
		if (mro[i] == base)
			return true;
	return false;
}

/* The same, for a type found in memory that may not hold one. */
static bool type_has_base(uintptr_t type, uintptr_t base)
{
	uintptr_t mro, items[32];
	intptr_t count;

	if (!base || !peek_word(type + LW_PY_TP_MRO, &mro) || !plausible(mro) ||
	    !peek_word(mro + LW_PY_OB_SIZE, (uintptr_t *)&count) ||
	    count <= 0)
		return false;
	if (count > 32)
		count = 32; /* deeper hierarchies are not tensors we know */
	size_t bytes = (size_t)count * sizeof(uintptr_t);
	if (peek(items, mro + LW_PY_TUPLE_ITEMS, bytes) != bytes)
		return false;
	for (intptr_t i = 0; i < count; i++)
		if (items[i] == base)
			return true;
	return false;
}

static uintptr_t variable_class(void)
{
	return (uintptr_t)*t.variable_class;
}

/* Whether object, a candidate that may not be an object, has type base. */
static bool object_has_base(uintptr_t object, uintptr_t base)
{
	uintptr_t type;

	return plausible(object) && peek_word(object + LW_PY_OB_TYPE, &type) &&
	       plausible(type) && type_has_base(type, base);
}

/* ---- recognising the loaded PyTorch ---- */

static void *symbol(void *handle, const char *name)
{
	return dlsym(handle, name);
}

static int probe(void)
{
	t.segments = 0;
	t.python_lib[0] = '\0';
	dl_iterate_phdr(note_library, NULL);
	if (!t.python_lib[0])
		return 0;
	/* Loaded RTLD_LOCAL, as torch._C's dependency: look in it and its
	 * dependencies (libtorch_cpu, libc10, libstdc++). Never closed. */
	if (!t.lib)
		t.lib = dlopen(t.python_lib, RTLD_LAZY | RTLD_NOLOAD);
	void *lib = t.lib;
	if (!lib)
		return 0;

	t.variable_class = symbol(lib, "THPVariableClass");
	t.function_type = symbol(lib, "THPFunctionType"); /* optional */
	const char *tensor_vt = symbol(lib, "_ZTVN3c1010TensorImplE");
	const char *storage_vt = symbol(lib, "_ZTVN3c1011StorageImplE");
	const char *undefined = symbol(lib, "_ZN3c1019UndefinedTensorImpl10_singletonE");
	const char *node_ti = symbol(lib, "_ZTIN5torch8autograd4NodeE");
	const char *si = symbol(lib, "_ZTVN10__cxxabiv120__si_class_type_infoE");
	const char *vmi = symbol(lib, "_ZTVN10__cxxabiv121__vmi_class_type_infoE");
	if (!t.variable_class || !tensor_vt ||
	    !storage_vt || !undefined || !node_ti || !si || !vmi)
		return -1;
	/* Set by torch._C._initExtension, as `import torch` ends. */
	if (!*t.variable_class)
		return 0;
	/* A type_info's vptr points past the vtable's offset and RTTI words. */
	t.rtti_si = (uintptr_t)si + 16;
	t.rtti_vmi = (uintptr_t)vmi + 16;
	t.undefined = (uintptr_t)undefined;
	memset(verdicts, 0, sizeof(verdicts));

	/* The classes' own vtables must read as what they are. */
	if (kinds_of_vptr((uintptr_t)tensor_vt + 16) != K_TENSOR ||
	    kinds_of_vptr((uintptr_t)storage_vt + 16) != K_STORAGE ||
	    (kinds_of(t.undefined) & (K_TENSOR | K_UNDEFINED)) !=
		    (K_TENSOR | K_UNDEFINED))
		return -1;

	/* Node's direct base tells the layout. */
	uintptr_t head[2], base = 0;
	char name[128];
	if (peek(head, (uintptr_t)node_ti, 16) != 16)
		return -1;
	if (head[0] == t.rtti_si)
		peek_word((uintptr_t)node_ti + 16, &base);
	else if (head[0] == t.rtti_vmi)
		peek_word((uintptr_t)node_ti + 24, &base);
	if (!plausible(base) || peek(head, base, 16) != 16 ||
	    !peek_string(head[1], name, sizeof(name)))
		return -1;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (strcmp(name[0] == '*' ? name + 1 : name,
			   layouts[i].node_base) == 0)
			t.layout = &layouts[i];
	return t.layout ? 1 : -1;
}

int lw_torch_ready(void)
{
	int state = __atomic_load_n(&t.state, __ATOMIC_ACQUIRE);

	if (state)
		return state;
	if (sizeof(void *) != 8 || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		state = -1;
	else
		state = probe();
	if (state)
		__atomic_store_n(&t.state, state, __ATOMIC_RELEASE);
	return state;
}

static bool ready(void)
{
	return __atomic_load_n(&t.state, __ATOMIC_ACQUIRE) == 1 ||
	       lw_torch_ready() == 1;
}

/* ---- tensors ---- */

bool lw_torch_is_tensor_type(const void *type)
{
	return ready() && plausible((uintptr_t)type) &&
	       live_type_has_base((uintptr_t)type, variable_class());
}

/* The impl of tensor; live: a live object given by the caller (read in
 * place), else a candidate found in memory (read with peek()). */
static uintptr_t impl_of(uintptr_t tensor, bool live)
{
	uintptr_t cdata[2], impl, type;

	if (!plausible(tensor))
		return 0;
	if (live) {
		memcpy(&type, (const char *)tensor + LW_PY_OB_TYPE, sizeof(type));
		if (!live_type_has_base(type, variable_class()))
			return 0;
		memcpy(cdata, (const char *)tensor + 16, sizeof(cdata));
	} else if (!object_has_base(tensor, variable_class()) ||
		   peek(cdata, tensor + 16, sizeof(cdata)) != sizeof(cdata)) {
		return 0;
	}
	/* 2.15: an at::Tensor, the impl itself. */
	if (is_impl(cdata[0]))
		return cdata[0];
	/* Older: MaybeOwned<at::Tensor>, borrowed (a Tensor *) or owned. */
	switch (cdata[0] & 0xff) {
	case 0:
		impl = cdata[1];
		break;
	case 1:
		if (!plausible(cdata[1]) || !peek_word(cdata[1], &impl))
			return 0;
		break;
	default:
		return 0;
	}
	return is_impl(impl) ? impl : 0;
}

const void *lw_torch_impl(const void *tensor)
{
	return ready() ? (const void *)impl_of((uintptr_t)tensor, true) : NULL;
}

/* The DataPtr (data, then device) of an impl's storage; false if none. */
static bool impl_storage(const void *impl, uintptr_t *storage)
{
	return ready() && is_impl((uintptr_t)impl) &&
	       peek_word((uintptr_t)impl + 16, storage) &&
	       (kinds_of(*storage) & K_STORAGE);
}

uint64_t lw_torch_impl_data(const void *impl)
{
	uintptr_t storage, data_ptr[4];

	if (!impl_storage(impl, &storage) ||
	    peek(data_ptr, storage + 16, sizeof(data_ptr)) != sizeof(data_ptr))
		return 0;
	/* c10::Device {int8_t type; int8_t index} */
	if ((int8_t)(data_ptr[3] & 0xff) != CUDA_DEVICE_TYPE)
		return 0;
	return data_ptr[0];
}

uint64_t lw_torch_impl_nbytes(const void *impl)
{
	uintptr_t storage;
	int64_t size;

	if (!impl_storage(impl, &storage) ||
	    !peek_word(storage + 48, (uintptr_t *)&size))
		return 0;
	return size > 0 ? (uint64_t)size : 0; /* a symbolic size: unknown */
}

/* The impl's AutogradMeta, or 0. */
static uintptr_t autograd_meta(const void *impl)
{
	uintptr_t meta;

	if (!ready() || !is_impl((uintptr_t)impl) ||
	    !peek_word((uintptr_t)impl + 24, &meta) ||
	    !(kinds_of(meta) & K_AUTOGRAD_META))
		return 0;
	return meta;
}

const void *lw_torch_impl_grad(const void *impl)
{
	uintptr_t meta = autograd_meta(impl), grad;

	if (!meta || !peek_word(meta + 40, &grad) || !is_impl(grad))
		return NULL;
	return (const void *)grad;
}

const void *lw_torch_impl_grad_fn(const void *impl)
{
	uintptr_t meta = autograd_meta(impl), node;

	if (!meta || !peek_word(meta + 48, &node) || !is_node(node))
		return NULL;
	return (const void *)node;
}

const void *lw_torch_impl_pyobj(const void *impl)
{
	uintptr_t slot[2];

	if (!ready() || !is_impl((uintptr_t)impl) ||
	    peek(slot, (uintptr_t)impl + 48, 16) != 16)
		return NULL;
	/* 2.15: the object; older: the interpreter, then the object (its low
	 * bit once tagged ownership). Taken only when it leads back here. */
	for (int i = 0; i < 2; i++) {
		uintptr_t object = slot[i] & ~(uintptr_t)7;
		if (object && impl_of(object, false) == (uintptr_t)impl)
			return (const void *)object;
	}
	return NULL;
}

/* ---- autograd nodes ---- */

bool lw_torch_is_node(const void *node)
{
	return ready() && is_node((uintptr_t)node);
}

/*
 * How many bytes from p on belong to p's own allocation, from glibc's chunk
 * header (malloc.c: the size with three flag bits in the word before the
 * memory; an in-use chunk has its next chunk's PREV_INUSE bit set); gap:
 * bytes between the memory's start and p. 0 when p does not look like
 * (gap bytes into) the start of a chunk, as under another allocator.
 */
static size_t chunk_span(uintptr_t p, size_t gap)
{
	uintptr_t start = p - gap - 16, header, next;
	size_t size;

	if (!peek_word(start + 8, &header))
		return 0;
	size = header & ~(uintptr_t)7;
	if (size < 32 || size % 16 || size > (1u << 26) || size - 16 < gap)
		return 0;
	if (header & 2) /* IS_MMAPPED: no neighbour, no shared word */
		return size - 16 - gap;
	if (size > (1u << 20) || !peek_word(start + size + 8, &next) ||
	    !(next & 1))
		return 0;
	return size - 8 - gap;
}

/*
 * Reads the node's own allocation, up to MAX_SNAPSHOT bytes, into buf;
 * returns how many bytes are the node's. When its size cannot be told,
 * a fixed window past the Node base: the SavedVariables found in it are
 * checked field by field all the same.
 */
static size_t node_snapshot(uintptr_t node, uint8_t *buf)
{
	const struct torch_layout *l = t.layout;
	size_t span = chunk_span(node, 0);
	uintptr_t block;

	/* make_shared puts the node after its control block: the block's
	 * vptr, then the two counts. */
	if (!span && l->make_shared && peek_word(node - 16, &block) &&
	    in_torch(block))
		span = chunk_span(node, 16);
	if (span < (size_t)l->node_fields)
		span = (size_t)l->node_fields + NODE_WINDOW;
	if (span > MAX_SNAPSHOT)
		span = MAX_SNAPSHOT;
	return peek(buf, node, span);
}

struct saved_list {
	const void **impls;
	size_t max, count;
	bool hooked;
	/* What saved_tensors_hooks' pack hooks returned, held by the
	 * hooks: Python objects, never unpacked. */
	const void **packed;
	size_t packed_max, packed_count;
};

/* PySavedVariableHooks' data_, a std::optional<c10::SafePyObject>: the
 * object at 56, engaged at 72 (from the headers of 2.15.0). */
#define PY_SV_HOOKS_DATA 56
#define PY_SV_HOOKS_ENGAGED 72

static void add_saved(struct saved_list *out, uintptr_t impl)
{
	if (out->count < out->max)
		out->impls[out->count++] = (const void *)impl;
}

/*
 * Whether sv (a copy of sv_size bytes) holds a SavedVariable: its flags
 * are bools, it was constructed from a tensor, and either its data_ is a
 * defined TensorImpl and it has no hooks (1, *impl set), or its data_ is
 * undefined and its hooks_ a SavedVariableHooks (2: never unpacked). 0
 * when it is not one, or holds nothing now (released by backward).
 */
static int saved_variable(const uint8_t *sv, uintptr_t *impl)
{
	const struct torch_layout *l = t.layout;
	uintptr_t data, hooks;

	for (int i = 0; i < 5; i++)
		if (sv[l->sv_flags + i] > 1)
			return 0;
	if (sv[l->sv_flags] || sv[l->sv_requires_grad] > 1)
		return 0; /* was_default_constructed_: nothing saved */
	memcpy(&data, sv, sizeof(data));
	memcpy(&hooks, sv + l->sv_hooks, sizeof(hooks));
	if (data == t.undefined) {
		*impl = hooks;
		return hooks && (kinds_of(hooks) & K_SV_HOOKS) ? 2 : 0;
	}
	if (hooks || !is_impl(data))
		return 0;
	*impl = data;
	return 1;
}

/* The object a Python pack hook returned, kept by hooks, if it reads as
 * a Python object (its type's type is a type). */
static uintptr_t packed_object(uintptr_t hooks)
{
	uintptr_t object, type, meta, flags;
	uint8_t engaged;

	if (!(kinds_of(hooks) & K_PY_SV_HOOKS) ||
	    peek(&engaged, hooks + PY_SV_HOOKS_ENGAGED, 1) != 1 || engaged != 1 ||
	    !peek_word(hooks + PY_SV_HOOKS_DATA, &object) || !plausible(object) ||
	    !peek_word(object + LW_PY_OB_TYPE, &type) ||
	    !peek_word(type + LW_PY_OB_TYPE, &meta) ||
	    !peek_word(meta + LW_PY_TP_FLAGS, &flags) ||
	    !(flags & LW_PY_TPFLAGS_TYPE_SUBCLASS))
		return 0;
	return object;
}

static void note_saved(struct saved_list *out, int found, uintptr_t impl)
{
	uintptr_t packed;

	if (found == 1) {
		add_saved(out, impl);
	} else if (found == 2) {
		out->hooked = true;
		if (out->packed_count < out->packed_max &&
		    (packed = packed_object(impl)))
			out->packed[out->packed_count++] = (const void *)packed;
	}
}

/* A std::vector<SavedVariable> {begin, end, capacity}, when it is one. */
static bool saved_vector(const uintptr_t v[3], struct saved_list *out)
{
	size_t size = (size_t)t.layout->sv_size;
	uint8_t buf[MAX_SNAPSHOT];
	size_t per_read = sizeof(buf) / size, count;
	bool any = false;

	if (!plausible(v[0]) || v[1] <= v[0] || v[2] < v[1] ||
	    (v[1] - v[0]) % size || (v[2] - v[0]) % size)
		return false;
	count = (v[1] - v[0]) / size;
	if (count > MAX_VECTOR)
		return false;
	for (size_t done = 0; done < count;) {
		size_t n = count - done < per_read ? count - done : per_read;
		if (peek(buf, v[0] + done * size, n * size) != n * size)
			return any;
		for (size_t i = 0; i < n; i++) {
			uintptr_t impl;
			int found = saved_variable(buf + i * size, &impl);
			note_saved(out, found, impl);
			any |= found != 0;
		}
		done += n;
	}
	return any;
}

/* The SavedVariables in buf[from, len), inline or in vectors. */
static void scan_saved(const uint8_t *buf, size_t from, size_t len,
		       struct saved_list *out)
{
	size_t size = (size_t)t.layout->sv_size;

	for (size_t off = from; off + 8 <= len; off += 8) {
		uintptr_t impl, v[3];
		int found = 0;

		if (off + size <= len)
			found = saved_variable(buf + off, &impl);
		if (found) {
			note_saved(out, found, impl);
			off += size - 8;
			continue;
		}
		if (off + sizeof(v) <= len) {
			memcpy(v, buf + off, sizeof(v));
			if (saved_vector(v, out))
				off += sizeof(v) - 8;
		}
	}
}

/* A PyNode's ctx (THPFunction) at the word at, if it is one. */
static uintptr_t function_at(uintptr_t node, uintptr_t object)
{
	const struct torch_layout *l = t.layout;
	uintptr_t back;

	object &= ~(uintptr_t)7;
	if (!t.function_type ||
	    !object_has_base(object, (uintptr_t)t.function_type))
		return 0;
	/* 2.15: the ctx owns its node (cdata), which must be this one. */
	if (l->fn_cdata >= 0 &&
	    (!peek_word(object + (uintptr_t)l->fn_cdata, &back) || back != node))
		return 0;
	return object;
}

const void *lw_torch_node_pyobj(const void *node)
{
	const struct torch_layout *l;
	uintptr_t p = (uintptr_t)node, object;
	uint8_t buf[MAX_SNAPSHOT];

	if (!ready() || !(kinds_of(p) & K_PYNODE))
		return NULL;
	l = t.layout;
	if (l->node_pyobj >= 0)
		return peek_word(p + (uintptr_t)l->node_pyobj, &object)
			       ? (const void *)function_at(p, object)
			       : NULL;
	/* Older: PyNode's own `PyObject *obj`, its first field. */
	size_t len = node_snapshot(p, buf);
	for (size_t off = (size_t)l->node_fields; off + 8 <= len; off += 8) {
		memcpy(&object, buf + off, sizeof(object));
		if (plausible(object) && (object = function_at(p, object)))
			return (const void *)object;
	}
	return NULL;
}

static void node_saved(const void *node, struct saved_list *out);

size_t lw_torch_node_saved(const void *node, const void **impls, size_t max,
			   bool *hooked)
{
	struct saved_list out = { impls, max, 0, false, NULL, 0, 0 };

	node_saved(node, &out);
	if (out.hooked && hooked)
		*hooked = true;
	return out.count;
}

size_t lw_torch_node_packed(const void *node, const void **objects,
			    size_t max)
{
	const void *impls[64];
	struct saved_list out = { impls, 64, 0, false, objects, max, 0 };

	node_saved(node, &out);
	return out.packed_count;
}

static void node_saved(const void *node, struct saved_list *out_)
{
	struct saved_list out = *out_;
	uintptr_t p = (uintptr_t)node, ctx, type, word;
	uint8_t buf[MAX_SNAPSHOT];
	unsigned kinds;
	size_t len;

	if (!ready() || !((kinds = kinds_of(p)) & K_NODE))
		return;
	const struct torch_layout *l = t.layout;
	if (kinds & K_PYNODE) {
		/* A custom Function's tensors: its ctx's saved_variables. */
		intptr_t basic;
		ctx = (uintptr_t)lw_torch_node_pyobj(node);
		if (!ctx || !peek_word(ctx + LW_PY_OB_TYPE, &type) ||
		    !peek_word(type + LW_PY_TP_BASICSIZE, (uintptr_t *)&basic) ||
		    basic <= 16)
			return;
		len = peek(buf, ctx, basic < MAX_SNAPSHOT ? (size_t)basic
							  : MAX_SNAPSHOT);
		scan_saved(buf, 16, len, &out);
	} else if (kinds & K_ACCUMULATE) {
		/* AccumulateGrad's one field: the variable. */
		if (l->node_size >= 0) {
			if (peek_word(p + (uintptr_t)l->node_size, &word) &&
			    is_impl(word))
				add_saved(&out, word);
		} else {
			len = node_snapshot(p, buf);
			for (size_t off = (size_t)l->node_fields; off + 8 <= len;
			     off += 8) {
				memcpy(&word, buf + off, sizeof(word));
				if (is_impl(word)) {
					add_saved(&out, word);
					break;
				}
			}
		}
	} else {
		len = node_snapshot(p, buf);
		scan_saved(buf, (size_t)l->node_fields, len, &out);
	}
	*out_ = out;
}

size_t lw_torch_node_next(const void *node, const void **out, size_t max)
{
	uintptr_t p = (uintptr_t)node, v[3];
	uint8_t buf[MAX_SNAPSHOT];
	size_t n = 0, size, count, per_read;

	if (!ready() || !is_node(p))
		return 0;
	size = (size_t)t.layout->edge_size;
	per_read = sizeof(buf) / size;
	if (peek(v, p + (uintptr_t)t.layout->next_edges, sizeof(v)) !=
		    sizeof(v) || !v[0] || !plausible(v[0]) || v[1] < v[0] ||
	    v[2] < v[1] || (v[1] - v[0]) % size)
		return 0;
	count = (v[1] - v[0]) / size;
	if (count > 4096)
		return 0;
	for (size_t done = 0; done < count && n < max;) {
		size_t k = count - done < per_read ? count - done : per_read;
		if (peek(buf, v[0] + done * size, k * size) != k * size)
			break;
		for (size_t i = 0; i < k && n < max; i++) {
			uintptr_t function;
			memcpy(&function, buf + i * size, sizeof(function));
			if (function && is_node(function))
				out[n++] = (const void *)function;
		}
		done += k;
	}
	return n;
}

/*
 * The last component of a mangled class name (the Itanium ABI's
 * <nested-name>, N...E, or a plain <source-name>): what Python shows as the
 * node's class name. A template's arguments are left out.
 */
static int last_component(const char *mangled, char *out, size_t size)
{
	const char *p = mangled, *last = NULL;
	size_t last_len = 0;

	if (*p == '*')
		p++;
	if (*p == 'N')
		p++;
	while (*p >= '0' && *p <= '9') {
		size_t len = 0;
		while (*p >= '0' && *p <= '9' && len < 4096)
			len = len * 10 + (size_t)(*p++ - '0');
		if (strnlen(p, len) < len)
			return -1;
		last = p;
		last_len = len;
		p += len;
	}
	if (!last || last_len >= size)
		return -1;
	memcpy(out, last, last_len);
	out[last_len] = '\0';
	return 0;
}

int lw_torch_node_name(const void *node, char *out, size_t size)
{
	uintptr_t p = (uintptr_t)node, vptr, info, name_at, ctx, type,
		  tp_name;
	char mangled[256];
	unsigned kinds;

	if (!size)
		return -1;
	out[0] = '\0';
	if (!ready() || !((kinds = kinds_of(p)) & K_NODE))
		return -1;
	/* PyNode::name() is the ctx's type's tp_name: the Function's
	 * backward class (MyFnBackward). */
	if ((kinds & K_PYNODE) && (ctx = (uintptr_t)lw_torch_node_pyobj(node)) &&
	    peek_word(ctx + LW_PY_OB_TYPE, &type) &&
	    peek_word(type + LW_PY_TP_NAME, &tp_name) && size > 1 &&
	    peek_string(tp_name, out, size)) {
		const char *dot = strrchr(out, '.');
		if (dot)
			memmove(out, dot + 1, strlen(dot + 1) + 1);
		return 0;
	}
	out[0] = '\0';
	if (!peek_word(p, &vptr) || !(info = type_info_of(vptr)) ||
	    !peek_word(info + 8, &name_at) ||
	    !peek_string(name_at, mangled, sizeof(mangled)))
		return -1;
	return last_component(mangled, out, size);
}
