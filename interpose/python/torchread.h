/* SPDX-License-Identifier: MIT */
#ifndef LW_TORCHREAD_H
#define LW_TORCHREAD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
int lw_torch_ready(void);
bool lw_torch_is_tensor_type(const void *type);
const void *lw_torch_impl(const void *tensor);
uint64_t lw_torch_impl_data(const void *impl);
const void *lw_torch_impl_grad(const void *impl);
const void *lw_torch_impl_grad_fn(const void *impl);
const void *lw_torch_impl_pyobj(const void *impl);
int lw_torch_node_name(const void *node, char *out, size_t size);
size_t lw_torch_node_next(const void *node, const void **out, size_t max);
size_t lw_torch_node_saved(const void *node, const void **impls, size_t max, bool *hooked);
const void *lw_torch_node_pyobj(const void *node);
#endif
