# SPDX-License-Identifier: MIT
"""A device array as CuPy and Numba show one to other libraries: only
__cuda_array_interface__ (version 3), pointing at ptr. The holder search's
tests and benchmark plant these where a program would keep its arrays.

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from cuda_array import CudaArray
"""


class CudaArray(object):
    def __init__(self, ptr):
        self.ptr = ptr

    @property
    def __cuda_array_interface__(self):
        return {"data": (self.ptr, False), "shape": (16,), "typestr": "<f4",
                "version": 3}
