/* SPDX-License-Identifier: MIT */
/*
 * The parts of CPython's object layout that are the same in every version
 * the shim reads (3.9 to 3.13, x86-64 and LP64 alike): PyObject, the fields
 * of PyTypeObject up to tp_mro, the type flags, and the items of the
 * built-in containers. Checked against each version's headers by
 * scripts/py-offsets.py --walk. For the readers of the interpreter that
 * never link against it (holders/walk.c, torch/torchread.c).
 */
#ifndef LW_PYABI_H
#define LW_PYABI_H

#define LW_PY_OB_REFCNT 0
#define LW_PY_OB_TYPE 8
#define LW_PY_OB_SIZE 16 /* PyVarObject.ob_size; a dict's ma_used */
#define LW_PY_TP_NAME 24
#define LW_PY_TP_BASICSIZE 32
#define LW_PY_TP_FLAGS 168
#define LW_PY_TP_TRAVERSE 184
#define LW_PY_TP_MEMBERS 240
#define LW_PY_TP_DICT 264
#define LW_PY_TP_DICTOFFSET 288
#define LW_PY_TP_IS_GC 328
#define LW_PY_TP_MRO 344
#define LW_PY_LIST_ITEMS 24  /* PyListObject.ob_item, a pointer */
#define LW_PY_TUPLE_ITEMS 24 /* PyTupleObject.ob_item, inline */

#define LW_PY_TPFLAGS_HEAPTYPE (1ul << 9)
#define LW_PY_TPFLAGS_HAVE_GC (1ul << 14)
#define LW_PY_TPFLAGS_LONG_SUBCLASS (1ul << 24)
#define LW_PY_TPFLAGS_LIST_SUBCLASS (1ul << 25)
#define LW_PY_TPFLAGS_TUPLE_SUBCLASS (1ul << 26)
#define LW_PY_TPFLAGS_DICT_SUBCLASS (1ul << 29)
#define LW_PY_TPFLAGS_BASE_EXC_SUBCLASS (1ul << 30)
#define LW_PY_TPFLAGS_TYPE_SUBCLASS (1ul << 31)

#endif
