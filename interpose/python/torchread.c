#include "torchread.h"
int lw_torch_ready(void) { return 0; }
bool lw_torch_is_tensor_type(const void *type) { (void)type; return false; }
const void *lw_torch_impl(const void *t) { (void)t; return NULL; }
uint64_t lw_torch_impl_data(const void *i) { (void)i; return 0; }
const void *lw_torch_impl_grad(const void *i) { (void)i; return NULL; }
const void *lw_torch_impl_grad_fn(const void *i) { (void)i; return NULL; }
const void *lw_torch_impl_pyobj(const void *i) { (void)i; return NULL; }
int lw_torch_node_name(const void *n, char *o, size_t s) { (void)n; (void)o; (void)s; return -1; }
size_t lw_torch_node_next(const void *n, const void **o, size_t m) { (void)n; (void)o; (void)m; return 0; }
size_t lw_torch_node_saved(const void *n, const void **i, size_t m, bool *h) { (void)n; (void)i; (void)m; (void)h; return 0; }
const void *lw_torch_node_pyobj(const void *n) { (void)n; return NULL; }
