# SPDX-License-Identifier: MIT
"""A device array as CuPy shows one to other libraries: only
__cuda_array_interface__ (version 3), pointing at ptr, given by a C-level
descriptor of the type (here a slot; CuPy's is compiled), which the holder
search may read without running code of the program. The holder search's
tests and benchmark plant these where a program would keep its arrays.

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from cuda_array import CudaArray
"""


class CudaArray(object):
    __slots__ = ("ptr", "__cuda_array_interface__", "__weakref__")

    def __init__(self, ptr):
        self.ptr = ptr
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (16,),
                                         "typestr": "<f4", "version": 3}
