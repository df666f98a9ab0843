/* SPDX-License-Identifier: MIT */
/*
 * PyTorch's objects read from C, for the holder search's walker: a Python
 * tensor's C++ TensorImpl, its storage's device address, its .grad and
 * grad_fn, and an autograd node's name, next nodes and saved tensors.
 *
 * Everything here is called with the GIL held, and runs no Python or
 * PyTorch code, creates no Python object, takes no lock of PyTorch's and
 * never blocks. Nothing links libtorch: its symbols are looked up in the
 * loaded libraries. Every pointer read from PyTorch's objects is validated
 * before it is followed (a TensorImpl, StorageImpl, AutogradMeta or Node by
 * the C++ RTTI of its vtable, which must lie in PyTorch's own libraries),
 * and memory that may not be valid (a node that autograd's device threads,
 * which run without the GIL, may free while it is read) is read with
 * process_vm_readv() on the own process, so no read can fault.
 *
 * Pointers returned are borrowed and unowned: valid while the GIL is held
 * and nothing runs that could free them (a node read on the caller's
 * thread may still be freed by a device thread: a later call given it
 * validates it again and returns nothing rather than faulting).
 */
#ifndef LW_TORCHREAD_H
#define LW_TORCHREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Resolves what the reader needs once and recognises the loaded PyTorch's
 * layout: 1 when torch is loaded and understood, 0 when not loaded (yet;
 * asked again on the next call), -1 when loaded but not understood (then
 * every function below returns nothing). Cheap to call again.
 */
int lw_torch_ready(void);

/* Whether type, a live type object (the ob_type of a live object), is
 * torch.Tensor or a subclass of it: torch.Tensor in its tp_mro, read in
 * place from the type's struct (it is asked of every object's type). */
bool lw_torch_is_tensor_type(const void *type);

/* The C++ TensorImpl behind a Python tensor (a THPVariable), or NULL; for
 * any other live object, NULL. The object's type and its tensor field are
 * read in place; the impl they name is validated like any other. */
const void *lw_torch_impl(const void *tensor);

/* The device address of an impl's storage data (the allocation's start as
 * the allocator handed it out); 0 if none, undefined, or not on a CUDA
 * device. */
uint64_t lw_torch_impl_data(const void *impl);

/* The size in bytes of an impl's storage (its nbytes), 0 if unknown. */
uint64_t lw_torch_impl_nbytes(const void *impl);

/* An impl's .grad (its TensorImpl) and its grad_fn node; NULL if none. */
const void *lw_torch_impl_grad(const void *impl);
const void *lw_torch_impl_grad_fn(const void *impl);

/* The Python object (THPVariable) of an impl, from its PyObjectSlot; NULL
 * if it has none. */
const void *lw_torch_impl_pyobj(const void *impl);

/* Whether node is an autograd Node (validated as every node is). */
bool lw_torch_is_node(const void *node);

/*
 * A node's class name as Python shows it (AddmmBackward0, AccumulateGrad,
 * or a custom Function's backward class, MyFnBackward), NUL-terminated and
 * truncated to fit, into out: the last component of its vtable's RTTI name,
 * or the type name of a custom Function's ctx. 0, or -1 (out "").
 */
int lw_torch_node_name(const void *node, char *out, size_t size);

/* A node's next nodes (the functions of its next_edges_ that are set), in
 * order, up to max; returns how many were written. */
size_t lw_torch_node_next(const void *node, const void **out, size_t max);

/*
 * The tensors (TensorImpls) a node saved for backward: its SavedVariables'
 * data_ that are defined (for a custom Function, those of its ctx), and an
 * AccumulateGrad's variable; up to max, returns how many were written. A
 * SavedVariable packed by saved-tensor hooks (hooks_ set, data_ undefined)
 * is never unpacked: *hooked is set to true when there is one (hooked may
 * be NULL; it is not cleared).
 */
size_t lw_torch_node_saved(const void *node, const void **impls, size_t max,
			   bool *hooked);

/* For a Python custom Function's backward node (a PyNode), its ctx object
 * (a THPFunction), which the walker walks as an object; else NULL. */
const void *lw_torch_node_pyobj(const void *node);

/*
 * What saved_tensors_hooks' pack hooks returned for a node's saved tensors
 * (the Python objects PyTorch keeps for the unpack hook, never unpacked
 * here), up to max; returns how many written.
 */
size_t lw_torch_node_packed(const void *node, const void **objects,
			    size_t max);

/* For tests: read memory through a pipe, as where process_vm_readv() is
 * refused (seccomp). */
void lw_torch_test_pipe_reads(void);

#endif
